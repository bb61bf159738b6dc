/// Runs `body` for at most `timeout` of real time: its result, or nil when the time ran out (the
/// body's task is then cancelled, which ends a `for await` over an `AsyncStream`). For loops over
/// event streams that would otherwise wait forever for an element that never comes.
public func within<T: Sendable>(
  _ timeout: Duration, _ body: @escaping @Sendable () async -> T?
) async -> T? {
  await withTaskGroup(of: T?.self) { group in
    group.addTask { await body() }
    group.addTask {
      try? await Task.sleep(for: timeout)
      return nil
    }
    let first = await group.next() ?? nil
    group.cancelAll()
    return first
  }
}

/// Whether `body` returns within `timeout` of real time. Unlike ``within(_:_:)`` it does not
/// wait for a body that ignores cancellation: it answers false at the deadline and leaves the
/// body running, so a call that hangs fails a test instead of hanging it.
public func returns(
  within timeout: Duration, _ body: @escaping @Sendable () async -> Void
) async -> Bool {
  let (outcomes, continuation) = AsyncStream<Bool>.makeStream()
  let work = Task {
    await body()
    continuation.yield(true)
  }
  let timer = Task {
    try? await Task.sleep(for: timeout)
    continuation.yield(false)
  }
  var iterator = outcomes.makeAsyncIterator()
  let returned = await iterator.next() ?? false
  timer.cancel()
  if !returned { work.cancel() }
  continuation.finish()
  return returned
}
