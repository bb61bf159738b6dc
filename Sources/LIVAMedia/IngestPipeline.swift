import Dispatch
import Foundation
import LIVAProtocol
import Locking

/// One encoded overlay image from a `receive_frame_images_batch` (or a per-image event).
public struct EncodedOverlay: Sendable, Hashable {
  /// The overlay id (content key) the decoded image is stored under.
  public var key: String
  /// The encoded bytes (WebP, PNG or JPEG).
  public var data: Data

  /// Creates an encoded overlay.
  public init(key: String, data: Data) {
    self.key = key
    self.data = data
  }
}

extension EncodedOverlay {
  /// The image of a protocol frame object, stored under its overlay id; nil when the frame
  /// carries no image (frames in animation plans).
  public init?(_ frame: OverlayFrame) {
    guard let image = frame.image else { return nil }
    self.init(key: frame.overlayId, data: image.data)
  }
}

/// Where an ``IngestPipeline`` runs its decode workers.
public protocol DecodeScheduler: Sendable {
  /// Runs `work` (one worker: it decodes queued images until the queue is empty) somewhere.
  func schedule(_ work: @escaping @Sendable () -> Void)

  /// Whether `schedule` runs its work before returning, on the submitting thread. A request
  /// to such a scheduler returns with its work done, even when that work was handed to a
  /// worker already running on another thread. False unless a scheduler says otherwise.
  var runsOnSubmittingThread: Bool { get }
}

extension DecodeScheduler {
  /// False: work runs elsewhere, later.
  public var runsOnSubmittingThread: Bool { false }
}

/// Workers on a concurrent dispatch queue, off the submitting thread: the default.
public struct ConcurrentDecodeScheduler: DecodeScheduler {
  private let queue = DispatchQueue(
    label: "liva.media.ingest", qos: .userInitiated, attributes: .concurrent)

  /// Creates a scheduler with its own queue.
  public init() {}

  /// Runs `work` on the queue.
  public func schedule(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }
}

/// Runs every worker at once on the submitting thread, so a submit returns with its images
/// decoded and reported: deterministic tests without polling. Not for a render thread.
public struct InlineDecodeScheduler: DecodeScheduler {
  /// Creates the scheduler.
  public init() {}

  /// Runs `work` now.
  public func schedule(_ work: @escaping @Sendable () -> Void) { work() }

  /// True: `schedule` returns with the work done.
  public var runsOnSubmittingThread: Bool { true }
}

/// What the ``IngestPipeline`` reports, as it happens: one report per image submitted.
public enum IngestEvent: Hashable, Sendable {
  /// `key` is decoded and readable from the store.
  case imageReady(key: String)
  /// `key` could not be decoded (or stored); it will never become ready from this request.
  case imageFailed(key: String, error: LIVAMediaError)
  /// `key` was dropped unread because the decode queue was full (backpressure).
  case imageShed(key: String)
}

/// Decodes overlay images off the render thread into an ``OverlayImageStore``: a bounded
/// queue and its workers, with no bookkeeping of its own about which image is ready.
///
/// - **One owner of readiness:** the caller decides what to decode, and learns from the events
///   what became of it; the store holds the pixels. The queue does not deduplicate: its caller
///   sends an image once, and the store joins a decode of the same key already running
///   (``OverlayImageStore/decode(_:for:codec:limits:completion:)``).
/// - **Bounded parallelism:** at most ``Configuration/maximumConcurrentDecodes`` decodes run
///   at once (default: one less than the number of cores, at least one), so the render
///   thread keeps a core on a two-core device.
/// - **First frame first:** the first image of every batch goes to a priority lane ahead of
///   all other queued images, so playback can start as soon as possible.
/// - **Readiness as it happens:** an ``IngestEvent/imageReady(key:)`` per image, sent from a
///   worker thread right after the image is stored.
/// - **Backpressure:** at most ``Configuration/maximumQueuedImages`` images and
///   ``Configuration/maximumQueuedBytes`` encoded bytes wait; beyond that, *incoming* images
///   are shed (the oldest queued work is kept, as it is needed soonest), each reported with
///   ``IngestEvent/imageShed(key:)`` and counted in ``Statistics/shed``.
///
/// Events go to the handler given with the batch, on worker threads (or the submitting thread)
/// with no lock held; the handler must be quick and thread-safe (e.g. hop to the engine's
/// queue).
///
/// An image reported ready can still be evicted from the store later (to make room) and the
/// two reports can race; the render path therefore treats a `nil` from
/// ``OverlayImageStore/image(for:)`` as a hold, never as a blank overlay.
public final class IngestPipeline: Sendable {
  /// Limits of the pipeline.
  public struct Configuration: Sendable {
    /// The most decodes running at once.
    public var maximumConcurrentDecodes: Int
    /// The most images waiting to be decoded: a backstop for the bookkeeping of each queued
    /// image (a few hundred bytes), not the real bound, which is ``maximumQueuedBytes``.
    public var maximumQueuedImages: Int
    /// The most encoded bytes waiting to be decoded: what the queue really costs, so the
    /// bound that sheds first for real sprites.
    public var maximumQueuedBytes: Int
    /// Limits applied to every decode.
    public var limits: DecodeLimits

    /// Creates a configuration; the defaults suit a phone: `cores - 1` decoders, 32 MiB of
    /// queued bytes, 20,000 queued images, and overlays of at most 1 Mpx (a mouth sprite is
    /// about 100×80; a larger "sprite" is refused, not decoded).
    ///
    /// A shed image is lost for good (its mouth is held over), so the queue is bounded by
    /// what it costs, not by a count that a long message reaches when decoding lags: a
    /// compressed mouth sprite is a few KB, so 32 MiB holds thousands of them (minutes of
    /// speech at 60 images a chunk). The count bound only stops a flood of tiny images
    /// from costing more in bookkeeping than in bytes (20,000 entries: a few MB).
    public init(
      maximumConcurrentDecodes: Int = max(1, ProcessInfo.processInfo.activeProcessorCount - 1),
      maximumQueuedImages: Int = 20_000, maximumQueuedBytes: Int = 32 << 20,
      limits: DecodeLimits = DecodeLimits(maximumPixelCount: 1 << 20)
    ) {
      self.maximumConcurrentDecodes = max(1, maximumConcurrentDecodes)
      self.maximumQueuedImages = max(1, maximumQueuedImages)
      self.maximumQueuedBytes = max(1, maximumQueuedBytes)
      self.limits = limits
    }
  }

  /// Counters since creation (``Statistics/queued``, ``Statistics/queuedBytes`` and
  /// ``Statistics/decoding`` are current).
  public struct Statistics: Hashable, Sendable {
    /// Images waiting for a decoder now.
    public var queued = 0
    /// Encoded bytes waiting for a decoder now.
    public var queuedBytes = 0
    /// Images handed to the store and not yet done (decoding, or waiting for an identical
    /// decode already running).
    public var decoding = 0
    /// Images that became ready.
    public var ready = 0
    /// Images that failed.
    public var failed = 0
    /// Images shed by backpressure.
    public var shed = 0
  }

  /// A queued image and where its event goes.
  private struct Job {
    var overlay: EncodedOverlay
    var onEvent: @Sendable (IngestEvent) -> Void
  }

  private struct State {
    var priority: [Job] = []
    var normal: [Job] = []
    var normalHead = 0
    var workers = 0
    var statistics = Statistics()

    var queuedCount: Int { priority.count + normal.count - normalHead }

    mutating func pop() -> Job? {
      if !priority.isEmpty { return priority.removeFirst() }
      guard normalHead < normal.count else { return nil }
      let job = normal[normalHead]
      normalHead += 1
      if normalHead > 64 && normalHead * 2 > normal.count {
        normal.removeFirst(normalHead)
        normalHead = 0
      }
      return job
    }
  }

  private let store: OverlayImageStore
  private let codec: any ImageCodec
  private let configuration: Configuration
  private let scheduler: any DecodeScheduler
  private let state = Locked(State())

  /// Creates a pipeline that decodes with `codec` into `store`; `scheduler` runs the workers
  /// (default: ``ConcurrentDecodeScheduler``).
  public init(
    store: OverlayImageStore, codec: any ImageCodec = SystemImageCodec(),
    configuration: Configuration = Configuration(), scheduler: (any DecodeScheduler)? = nil
  ) {
    self.store = store
    self.codec = codec
    self.configuration = configuration
    self.scheduler = scheduler ?? ConcurrentDecodeScheduler()
  }

  /// Current statistics.
  public var statistics: Statistics { state.withLock { $0.statistics } }

  /// Queues a batch for decoding and returns at once; `onEvent` is told what became of each
  /// image. Images the store already holds are reported ready immediately; the batch's first
  /// image jumps the queue. The images belong to no message in the store (content-addressed:
  /// whoever plans them claims them, ``OverlayImageStore/claim(_:message:)``).
  public func submit(
    _ batch: [EncodedOverlay], onEvent: @escaping @Sendable (IngestEvent) -> Void
  ) {
    var events: [IngestEvent] = []
    var toQueue: [EncodedOverlay] = []
    for overlay in batch {
      if store.isReady(overlay.key) {
        events.append(.imageReady(key: overlay.key))
      } else {
        toQueue.append(overlay)
      }
    }
    let workersToStart: Int = state.withLock { state in
      state.statistics.ready += events.count
      for (index, overlay) in toQueue.enumerated() {
        guard state.queuedCount < configuration.maximumQueuedImages,
          state.statistics.queuedBytes + overlay.data.count <= configuration.maximumQueuedBytes
        else {
          state.statistics.shed += 1
          events.append(.imageShed(key: overlay.key))
          continue
        }
        let job = Job(overlay: overlay, onEvent: onEvent)
        if index == 0 {
          state.priority.append(job)
        } else {
          state.normal.append(job)
        }
        state.statistics.queuedBytes += overlay.data.count
      }
      state.statistics.queued = state.queuedCount
      let wanted = min(state.queuedCount, configuration.maximumConcurrentDecodes - state.workers)
      state.workers += max(0, wanted)
      return max(0, wanted)
    }
    for event in events { onEvent(event) }
    for _ in 0..<workersToStart { scheduler.schedule { self.drain() } }
  }

  /// A worker: decodes queued images until the queue is empty.
  private func drain() {
    while let job = next() {
      let key = job.overlay.key
      store.decode(job.overlay.data, for: key, codec: codec, limits: configuration.limits) {
        result in
        job.onEvent(self.complete(key, result))
      }
    }
  }

  private func next() -> Job? {
    state.withLock { state in
      guard let job = state.pop() else {
        state.workers -= 1
        return nil
      }
      state.statistics.queuedBytes -= job.overlay.data.count
      state.statistics.queued = state.queuedCount
      state.statistics.decoding += 1
      return job
    }
  }

  /// Counts a finished decode; returns its event.
  private func complete(_ key: String, _ result: Result<RGBAImage, LIVAMediaError>) -> IngestEvent {
    state.withLock { state in
      state.statistics.decoding -= 1
      switch result {
      case .success:
        state.statistics.ready += 1
        return .imageReady(key: key)
      case .failure(let error):
        state.statistics.failed += 1
        return .imageFailed(key: key, error: error)
      }
    }
  }
}
