import Foundation

/// A value guarded by a lock: the "locked storage" piece of the public type / state /
/// storage split, and the one lock type of the package's modules (`package` access: no app
/// sees it). Callers keep closures short and never call out (callbacks, decoding) while
/// holding it.
///
/// `NSLock` rather than `Synchronization.Mutex` because the package still deploys to
/// macOS 13 / iOS 16, where `Mutex` is unavailable.
package final class Locked<State>: @unchecked Sendable {
  // @unchecked Sendable: every access to `state` goes through `lock`.
  private let lock = NSLock()
  private var state: State

  /// A lock around `state`.
  package init(_ state: State) { self.state = state }

  /// Runs `body` with the state, holding the lock.
  package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
    lock.lock()
    defer { lock.unlock() }
    return try body(&state)
  }

  /// Runs `body` only if the lock is free right now; nil when another thread holds it.
  package func withLockIfAvailable<R>(_ body: (inout State) throws -> R) rethrows -> R? {
    guard lock.try() else { return nil }
    defer { lock.unlock() }
    return try body(&state)
  }
}
