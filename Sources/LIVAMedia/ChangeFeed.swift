import Locking

/// A signal that something observable changed, for waiting on state that other threads change
/// (downloads settled, decode workers idle, counters) without polling.
///
/// The owners of the state call ``signal()`` after each change; a waiter re-checks its
/// condition after every signal. No change is missed: the waiter notes the feed's generation
/// before it checks, and a signal that came between the check and the wait wakes it at once.
/// (`package` access: the player, the client, the tool and the tests share it; no app sees it.)
package final class ChangeFeed: Sendable {
  private struct State {
    var generation: UInt64 = 0
    var nextWaiter: UInt64 = 0
    var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
  }

  private let state = Locked(State())

  /// A feed no change was signalled on yet.
  package init() {}

  /// The number of changes signalled so far.
  package var generation: UInt64 { state.withLock { $0.generation } }

  /// How many waiters are asleep now, waiting for the next signal (for tests).
  var waiterCount: Int { state.withLock { $0.waiters.count } }

  /// Something changed: every waiter re-checks.
  package func signal() {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.generation &+= 1
      defer { state.waiters = [:] }
      return Array(state.waiters.values)
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Returns once a change after `generation` was signalled (at once if one was), or when the
  /// task is cancelled.
  package func change(after generation: UInt64) async {
    let id = state.withLock { state -> UInt64 in
      defer { state.nextWaiter &+= 1 }
      return state.nextWaiter
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let resumeNow = state.withLock { state -> Bool in
          guard state.generation == generation, !Task.isCancelled else { return true }
          state.waiters[id] = continuation
          return false
        }
        if resumeNow { continuation.resume() }
      }
    } onCancel: {
      state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }
  }

  /// Waits until `condition` holds, checking it now and after every signal: true when it did,
  /// false when `timeout` of real time passed first or the task was cancelled. The timeout is
  /// a bound for what never comes, not a clock to wait on.
  package func wait(timeout: Duration, until condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    // At the deadline, one more signal: the waiter wakes, finds the time up and returns.
    let timer = Task { [self] in
      guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
      signal()
    }
    defer { timer.cancel() }
    while true {
      let seen = generation
      if condition() { return true }
      await change(after: seen)
      // Woken by the deadline's signal (or cancelled): a change that was never signalled
      // is not looked for again, so a missing signal shows as a false, not as a late true.
      if ContinuousClock.now >= deadline || Task.isCancelled { return false }
    }
  }
}
