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

/// What the ``IngestPipeline`` reports, as it happens.
public enum IngestEvent: Hashable, Sendable {
  /// `key` is decoded and readable from the store.
  case imageReady(key: String, chunk: Int, message: Int)
  /// `key` could not be decoded (or stored); it will never become ready from this request.
  case imageFailed(key: String, chunk: Int, message: Int, error: LIVAMediaError)
  /// `key` was dropped unread because the decode queue was full (backpressure).
  case imageShed(key: String, chunk: Int, message: Int)
  /// Every image of the chunk was sent *and* every batch of it that arrived is decoded
  /// (or failed, or was shed): the protocol's `chunk_images_ready`, deferred until true.
  case chunkReady(chunk: Int, message: Int, totalImagesSent: Int)
}

/// Decodes batches of overlay images off the render thread into an ``OverlayImageStore``.
///
/// - **Bounded parallelism:** at most ``Configuration/maximumConcurrentDecodes`` decodes run
///   at once (default: one less than the number of cores, at least one), so the render
///   thread keeps a core on a two-core device.
/// - **First frame first:** the first image of every batch goes to a priority lane ahead of
///   all other queued images, so playback can start as soon as possible.
/// - **Readiness as it happens:** an ``IngestEvent/imageReady(key:chunk:message:)`` per image,
///   sent from a worker thread right after the image is stored.
/// - **Deferred chunk readiness:** ``chunkImagesSent(chunk:message:total:)`` turns into
///   ``IngestEvent/chunkReady(chunk:message:totalImagesSent:)`` only once all queued images
///   of that chunk are done.
/// - **Backpressure:** at most ``Configuration/maximumQueuedImages`` images and
///   ``Configuration/maximumQueuedBytes`` encoded bytes wait; beyond that, *incoming* images
///   are shed (the oldest queued work is kept, as it is needed soonest), each reported with
///   ``IngestEvent/imageShed(key:chunk:message:)`` and counted in ``Statistics/shed``.
///
/// Events are delivered on worker threads (or the submitting thread) with no lock held; the
/// handler must be quick and thread-safe (e.g. hop to the engine's queue).
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

  /// Counters since creation (``Statistics/queued`` and ``Statistics/decoding`` are current).
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
    /// Queued images dropped because their message was cancelled.
    public var cancelled = 0
    /// Images not queued because the same key was already queued or decoding.
    public var deduplicated = 0
  }

  private struct Job {
    var id: Int
    var overlay: EncodedOverlay
    var chunk: ChunkID
  }

  private struct State {
    var priority: [Job] = []
    var normal: [Job] = []
    var normalHead = 0
    var queuedBytes = 0
    var workers = 0
    var nextJobID = 0
    /// Jobs handed to the store and not completed; cancelling removes them.
    var active: [Int: ChunkID] = [:]
    /// Keys queued or decoding: a re-sent image is not queued twice.
    var queuedKeys: Set<String> = []
    /// Images of a chunk not yet done (queued or decoding).
    var pending: [ChunkID: Int] = [:]
    /// `chunk_images_ready` received while images were pending: the total it announced.
    var deferred: [ChunkID: Int] = [:]
    var statistics = Statistics()

    var queuedCount: Int { priority.count + normal.count - normalHead }

    mutating func popJob() -> Job? {
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

    /// Marks one image of `chunk` done; returns the chunk-ready event it completes, if any.
    mutating func finish(_ chunk: ChunkID) -> IngestEvent? {
      guard let count = pending[chunk] else { return nil }
      if count > 1 {
        pending[chunk] = count - 1
        return nil
      }
      pending[chunk] = nil
      guard let total = deferred.removeValue(forKey: chunk) else { return nil }
      return .chunkReady(
        chunk: chunk.index, message: chunk.message.rawValue, totalImagesSent: total)
    }
  }

  private let store: OverlayImageStore
  private let codec: any ImageCodec
  private let configuration: Configuration
  private let scheduler: any DecodeScheduler
  private let onEvent: @Sendable (IngestEvent) -> Void
  private let state = Locked(State())

  /// Creates a pipeline that decodes with `codec` into `store` and reports to `onEvent`;
  /// `scheduler` runs the workers (default: ``ConcurrentDecodeScheduler``).
  public init(
    store: OverlayImageStore, codec: any ImageCodec = SystemImageCodec(),
    configuration: Configuration = Configuration(), scheduler: (any DecodeScheduler)? = nil,
    onEvent: @escaping @Sendable (IngestEvent) -> Void
  ) {
    self.store = store
    self.codec = codec
    self.configuration = configuration
    self.scheduler = scheduler ?? ConcurrentDecodeScheduler()
    self.onEvent = onEvent
  }

  /// Current statistics.
  public var statistics: Statistics {
    state.withLock { state in
      var statistics = state.statistics
      statistics.queuedBytes = state.queuedBytes
      return statistics
    }
  }

  /// Queues a batch of `chunk` of `message` for decoding; returns at once. Images the store
  /// already holds are reported ready immediately; an image already queued or decoding is not
  /// queued again (its one decode reports it); the batch's first image jumps the queue.
  /// The images belong to no message in the store (content-addressed: whoever plans them
  /// claims them, ``OverlayImageStore/claim(_:message:)``).
  public func submit(_ batch: [EncodedOverlay], chunk: Int, message: Int) {
    let id = ChunkID(message: MessageID(message), index: chunk)
    var events: [IngestEvent] = []
    var toQueue: [EncodedOverlay] = []
    for overlay in batch {
      if store.isReady(overlay.key) {
        events.append(.imageReady(key: overlay.key, chunk: chunk, message: message))
      } else {
        toQueue.append(overlay)
      }
    }
    let workersToStart: Int = state.withLock { state in
      state.statistics.ready += events.count
      for (index, overlay) in toQueue.enumerated() {
        guard !state.queuedKeys.contains(overlay.key) else {
          state.statistics.deduplicated += 1
          continue
        }
        guard state.queuedCount < configuration.maximumQueuedImages,
          state.queuedBytes + overlay.data.count <= configuration.maximumQueuedBytes
        else {
          state.statistics.shed += 1
          events.append(.imageShed(key: overlay.key, chunk: chunk, message: message))
          continue
        }
        let job = Job(id: state.nextJobID, overlay: overlay, chunk: id)
        state.nextJobID += 1
        state.queuedKeys.insert(overlay.key)
        if index == 0 {
          state.priority.append(job)
        } else {
          state.normal.append(job)
        }
        state.queuedBytes += overlay.data.count
        state.pending[id, default: 0] += 1
      }
      state.statistics.queued = state.queuedCount
      let wanted = min(state.queuedCount, configuration.maximumConcurrentDecodes - state.workers)
      state.workers += max(0, wanted)
      return max(0, wanted)
    }
    for event in events { onEvent(event) }
    for _ in 0..<workersToStart { scheduler.schedule { self.drain() } }
  }

  /// Queues the images of a `receive_frame_images_batch` (frames without an image are
  /// skipped) for `message`, as ``submit(_:chunk:message:)`` does.
  public func submit(_ batch: FrameImagesBatch, message: Int) {
    submit(batch.frames.compactMap(EncodedOverlay.init), chunk: batch.chunkIndex, message: message)
  }

  /// The protocol's `chunk_images_ready`: every image of `chunk` was sent. Reported as
  /// ``IngestEvent/chunkReady(chunk:message:totalImagesSent:)`` now if nothing of the chunk is
  /// pending, or as soon as the last pending image is done.
  public func chunkImagesSent(chunk: Int, message: Int, total: Int) {
    let id = ChunkID(message: MessageID(message), index: chunk)
    let readyNow: Bool = state.withLock { state in
      guard state.pending[id] != nil else { return true }
      state.deferred[id] = total
      return false
    }
    if readyNow { onEvent(.chunkReady(chunk: chunk, message: message, totalImagesSent: total)) }
  }

  /// Drops everything of an interrupted `message`: queued images, deferred chunk readiness and
  /// pending events of running decodes. A decode under way still stores its image (content
  /// that a later message may show).
  public func cancel(message: Int) {
    state.withLock { state in
      func keep(_ job: Job) -> Bool {
        guard job.chunk.message.rawValue == message else { return true }
        state.queuedBytes -= job.overlay.data.count
        state.queuedKeys.remove(job.overlay.key)
        state.statistics.cancelled += 1
        return false
      }
      state.priority = state.priority.filter(keep)
      state.normal = Array(state.normal[state.normalHead...]).filter(keep)
      state.normalHead = 0
      state.active = state.active.filter { $0.value.message.rawValue != message }
      state.statistics.decoding = state.active.count
      state.pending = state.pending.filter { $0.key.message.rawValue != message }
      state.deferred = state.deferred.filter { $0.key.message.rawValue != message }
      state.statistics.queued = state.queuedCount
    }
  }

  /// A worker: decodes queued jobs until the queue is empty.
  private func drain() {
    while let job = nextJob() {
      store.decode(
        job.overlay.data, for: job.overlay.key, codec: codec, limits: configuration.limits
      ) { result in
        self.complete(job, result)
      }
    }
  }

  private func nextJob() -> Job? {
    state.withLock { state in
      guard let job = state.popJob() else {
        state.workers -= 1
        return nil
      }
      state.queuedBytes -= job.overlay.data.count
      state.active[job.id] = job.chunk
      state.statistics.queued = state.queuedCount
      state.statistics.decoding = state.active.count
      return job
    }
  }

  private func complete(_ job: Job, _ result: Result<RGBAImage, LIVAMediaError>) {
    let events: [IngestEvent] = state.withLock { state in
      // A cancelled message's jobs are no longer active: report nothing for them.
      state.queuedKeys.remove(job.overlay.key)
      guard state.active.removeValue(forKey: job.id) != nil else { return [] }
      state.statistics.decoding = state.active.count
      let key = job.overlay.key
      var events: [IngestEvent]
      switch result {
      case .success:
        state.statistics.ready += 1
        events = [
          .imageReady(key: key, chunk: job.chunk.index, message: job.chunk.message.rawValue)
        ]
      case .failure(let error):
        state.statistics.failed += 1
        events = [
          .imageFailed(
            key: key, chunk: job.chunk.index, message: job.chunk.message.rawValue, error: error)
        ]
      }
      if let chunkReady = state.finish(job.chunk) { events.append(chunkReady) }
      return events
    }
    for event in events { onEvent(event) }
  }
}
