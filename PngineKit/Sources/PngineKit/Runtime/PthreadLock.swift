#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// State behind a `pthread_mutex_t`.
///
/// The executor pool uses this rather than `Synchronization.Mutex`: on Linux, `Mutex` hands a
/// contended lock over through a priority-inheritance futex in the kernel, which the thread
/// sanitizer does not see as synchronisation, so it reported races on state only ever touched
/// under the lock (seen once in a dozen runs of the pool's concurrent tests). The sanitizer
/// intercepts `pthread_mutex_lock`, so the pool can stay under it in CI.
final class PthreadLocked<State>: @unchecked Sendable {
  // @unchecked: `state` is only touched between lock and unlock.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private var state: State

  init(_ state: State) {
    self.state = state
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with the state, under the lock.
  func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&state)
  }
}
