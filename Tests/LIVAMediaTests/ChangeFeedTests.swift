import Foundation
import Locking
import Testing

@testable import LIVAMedia

/// The change feed the end-to-end tests and the tool wait on instead of polling.
@Suite("Change feed", .timeLimit(.minutes(1)))
struct ChangeFeedTests {
  @Test("a condition that holds already returns at once, with nothing signalled")
  func holdsAlready() async {
    let feed = ChangeFeed()
    #expect(await feed.wait(timeout: .seconds(30)) { true })
    #expect(feed.generation == 0)
  }

  /// Yields until `count` waiters are asleep on `feed` (bounded by the suite's time limit).
  func asleep(_ count: Int, on feed: ChangeFeed) async {
    while feed.waiterCount < count { await Task.yield() }
  }

  @Test("a signal from another task wakes the waiter, which re-checks and returns")
  func signalWakes() async {
    let feed = ChangeFeed()
    let flag = Locked(false)
    let checks = Locked(0)
    // An hour's timeout: a waiter the signal did not wake fails the suite's time limit.
    let waiter = Task {
      await feed.wait(timeout: .seconds(3600)) {
        checks.withLock { $0 += 1 }
        return flag.withLock { $0 }
      }
    }
    await asleep(1, on: feed)  // it checked (false) and sleeps: only the signal can wake it
    #expect(checks.withLock { $0 } == 1)
    flag.withLock { $0 = true }
    feed.signal()
    #expect(await waiter.value)
    #expect(checks.withLock { $0 } == 2)
  }

  @Test("a change signalled between the check and the wait is not missed")
  func changeDuringCheck() async {
    let feed = ChangeFeed()
    let checks = Locked(0)
    // The first check changes the state and signals before the waiter waits: the change is
    // found at once (a waiter that looked at the generation after its check would sleep
    // until the time limit and fail).
    let held = await feed.wait(timeout: .seconds(30)) {
      let count = checks.withLock { count -> Int in
        count += 1
        return count
      }
      if count == 1 { feed.signal() }
      return count > 1
    }
    #expect(held)
    #expect(checks.withLock { $0 } == 2)
  }

  @Test("a change after a generation already signalled returns at once")
  func changeAfterPastGeneration() async {
    let feed = ChangeFeed()
    let before = feed.generation
    feed.signal()
    await feed.change(after: before)
    #expect(feed.generation == before + 1)
  }

  @Test("a change that is never signalled is a false at the timeout, not a late true")
  func unsignalledChange() async {
    let feed = ChangeFeed()
    let flag = Locked(false)
    let held = await feed.wait(timeout: .milliseconds(50)) {
      defer { flag.withLock { $0 = true } }  // changes without a signal
      return flag.withLock { $0 }
    }
    #expect(!held)
  }

  @Test("one signal wakes every waiter")
  func everyWaiter() async {
    let feed = ChangeFeed()
    let flag = Locked(false)
    let results = await withTaskGroup(of: Bool.self) { group in
      for _ in 0..<8 {
        group.addTask { await feed.wait(timeout: .seconds(3600)) { flag.withLock { $0 } } }
      }
      await asleep(8, on: feed)  // all eight checked (false) and sleep
      flag.withLock { $0 = true }
      feed.signal()
      return await group.reduce(into: []) { $0.append($1) }
    }
    #expect(results == Array(repeating: true, count: 8))
  }

  @Test("a cancelled waiter returns false without a signal, long before its timeout")
  func cancelled() async {
    let feed = ChangeFeed()
    // An hour's timeout: a waiter that ignored its cancellation would fail the time limit.
    let waiter = Task { await feed.wait(timeout: .seconds(3600)) { false } }
    await asleep(1, on: feed)
    waiter.cancel()
    #expect(await waiter.value == false)
    #expect(feed.waiterCount == 0)
    #expect(feed.generation == 0)  // woken by its cancellation, not by a signal
  }
}
