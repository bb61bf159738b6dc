import LIVAProtocol

/// The windows of base frames the store's prefetchers asked for: what is pending per owner,
/// the window each last set, and whose worker is bringing frames in. Each owner drains on its
/// own scheduler: one player's window never waits for another's (with an inline scheduler, a
/// request returns with its own window decoded).
struct PrefetchWindows {
  var pending: [Int: [BaseFrameRef]] = [:]
  var windows: [Int: [BaseFrameRef]] = [:]
  var running: Set<Int> = []
  /// The step of the newest window each owner asked for by step.
  var steps: [Int: Int] = [:]
  /// The next owner number (0 is the store's own ``BaseFrameStore/prefetch(_:scheduler:)``).
  var nextOwner = 1
}

/// One reader's window of decoded base frames ahead (a player's).
///
/// Each ``request(_:)`` replaces the window: a worker of the scheduler decodes its frames most
/// urgent first, skipping those in memory already. Memory holds the windows of the store's
/// live prefetchers and no more: a frame that left every window is let go of before new ones
/// are decoded (a frame being drawn stays valid in its reader's hands). Players that share a
/// store never push out each other's frames. When the prefetcher goes, its window goes.
public final class BaseFramePrefetcher: Sendable {
  /// The store the frames come from.
  public let store: BaseFrameStore
  private let scheduler: any DecodeScheduler
  private let owner: Int
  private let onIdle: (@Sendable () -> Void)?

  /// A prefetcher for `store`, decoding on `scheduler`'s workers; `onIdle` runs on the worker
  /// each time the newest window asked for is in memory (``isIdle`` turned true).
  public init(
    store: BaseFrameStore, scheduler: any DecodeScheduler, onIdle: (@Sendable () -> Void)? = nil
  ) {
    self.store = store
    self.scheduler = scheduler
    self.onIdle = onIdle
    owner = store.prefetching.withLock { work in
      defer { work.nextOwner += 1 }
      return work.nextOwner
    }
  }

  deinit { store.endWindow(owner: owner) }

  /// Sets the window, most urgent first, and brings it into memory on a worker; returns at
  /// once. A newer request replaces what this one had not reached yet. A window larger than
  /// the store's memory (``BaseFrameStore/memoryByteLimit``) is cut where it stops fitting:
  /// its less urgent end is not decoded rather than pushing out its more urgent start.
  public func request(_ frames: [BaseFrameRef]) {
    store.request(frames, owner: owner, step: nil, scheduler: scheduler, onIdle: onIdle)
  }

  /// Sets the window as ``request(_:)`` does, unless a window of a later `step` was asked
  /// for already: windows worked out in order (steps counting up) on several threads and
  /// handed over without a lock between never let an older one replace a newer one.
  public func request(_ frames: [BaseFrameRef], step: Int) {
    store.request(frames, owner: owner, step: step, scheduler: scheduler, onIdle: onIdle)
  }

  /// Whether this prefetcher's window is in memory: no request pending or being brought in
  /// (other prefetchers of the store may still be at work).
  public var isIdle: Bool { store.isPrefetchIdle(owner: owner) }
}
