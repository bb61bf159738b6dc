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
