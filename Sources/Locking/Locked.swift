#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A value guarded by a lock: the one lock type of this package's modules (`package` access:
/// no app sees it). Callers keep closures short and never call out (callbacks, decoding, I/O)
/// while holding it.
///
/// A `pthread_mutex_t` rather than `Synchronization.Mutex`, which the package's platforms
/// allow: on Linux, `Mutex` hands a contended lock over through a priority-inheritance futex in
/// the kernel, which the thread sanitizer does not see as synchronisation, so it reported races
/// on state only ever touched under the lock (seen once in a dozen runs of the executor pool's
/// concurrent tests). The sanitizer intercepts `pthread_mutex_lock`, and CI runs the stores,
/// the ingest pipeline, the diagnostics and the executor pool under it.
package final class Locked<State>: @unchecked Sendable {
  // @unchecked Sendable: `state` is only touched between lock and unlock.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private var state: State

  /// A lock around `state`.
  package init(_ state: State) {
    self.state = state
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with the state, holding the lock.
  package func withLock<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&state)
  }
}

extension Locked where State == Void {
  /// A lock that guards fields kept beside it rather than a value of its own.
  package convenience init() { self.init(()) }

  /// Runs `body` holding the lock.
  package func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    try withLock { (_: inout Void) throws(E) -> R in try body() }
  }
}
