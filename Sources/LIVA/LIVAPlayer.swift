import Foundation
import LIVAEngine
import LIVAMedia
import LIVAPlatform
import LIVAProtocol
import Logging

/// Accounting of a player, as a value: start-up, ticks, stalls, the engine's metrics and the
/// lip-sync error of every overlay frame drawn.
public struct PlayerMetrics: Sendable {
  /// Seconds from the player's creation to its first presented frame (wall clock).
  public var timeToFirstFrame: Double?
  /// Display ticks handled.
  public var ticks = 0
  /// Ticks that came more than 1.5 display periods after the previous one.
  public var lateTicks = 0
  /// The longest time one tick took to handle (engine, compositing, presenting), in seconds.
  public var longestRenderStall = 0.0
  /// Frames presented.
  public var framesPresented = 0
  /// Draws whose base frame was not decoded in memory (the picture was held instead).
  public var baseFrameMisses = 0
  /// Draws held because an overlay image left the store after the engine was told it was ready.
  public var overlayMisses = 0
  /// Images the ingest pipeline shed under backpressure.
  public var shedImages = 0
  /// Images that failed to decode.
  public var failedImages = 0
  /// Events that failed validation and were dropped (each logged).
  public var rejectedEvents = 0
  /// Every protocol rejection, by what it cost and its code (`"event.missingField"`,
  /// `"frame.outOfRange"`, `"field.wrongType"`, …): whole events, single frames (their mouth
  /// only), single field values (informational fields read tolerantly). Each was logged.
  public var rejections: [String: Int] = [:]
  /// Speech events dropped because they belong to an interrupted message (a chunk whose
  /// `master_chunk_index` is older than the open message, or the `audio_end` after it).
  public var staleEvents = 0
  /// Chunk plans (`receive_audio`) received.
  public var chunksReceived = 0
  /// `audio_end` events received.
  public var audioEndsReceived = 0
  /// The accounting of every chunk played to its end, in order (the last 1,000).
  public var chunkReports: [ChunkReport] = []
  /// For each overlay frame presented while its chunk's audio was playing: the audio position
  /// minus the frame's own time (frame `k` belongs at `k / 30` s).
  public var lipSync = SyncErrorStats()
  /// Freezes (the picture stuck longer than the threshold while it should have moved) and
  /// frames presented per second since the first tick.
  public var freezes = FreezeDetector()
  /// The engine's own metrics.
  public var engine = EngineMetrics()

  /// Empty metrics.
  public init() {}
}

/// The playback pipeline, independent of the transport: LIVA events in, frames and audio out.
///
/// ```
/// events ─▶ handle(_:) ─▶ ingest (decode off the render thread) ─▶ overlay store ─┐
///                     └─▶ engine (chunk plans, audio_end, requests)                │
/// display link ─▶ tick ─▶ engine.tick ─▶ compositor (base + overlays) ─▶ surface ◀─┘
///                              └─▶ actions ─▶ audio output (start/stop), evictions
/// ```
///
/// Thread-safe: events may come from any task, ticks from the display link's thread, decode
/// results from ingest workers. The render path never waits for a decode: a base frame or an
/// overlay that is not in memory is a planned hold.
public final class LIVAPlayer: Sendable {
  /// Options of the pipeline.
  public struct Configuration: Sendable {
    /// Output width in pixels; nil (the default): the avatar's own frame width.
    public var width: Int?
    /// Output height in pixels; nil (the default): the avatar's own frame height.
    public var height: Int?
    /// How the avatar's frames are fitted into an output of another size or aspect (default
    /// ``LIVAMedia/ContentMode/aspectFit``: never squashed).
    public var contentMode: ContentMode = .aspectFit
    /// Width of the soft edge of overlays, in output pixels (0: hard edges).
    public var featherWidth: Double = 6
    /// The engine's tuning.
    public var engine = EngineConfiguration()
    /// The ingest pipeline's limits.
    public var ingest = IngestPipeline.Configuration()
    /// Bytes of decoded overlay images kept.
    public var overlayByteLimit = 64 << 20
    /// Validation limits for incoming events.
    public var eventLimits = LIVAEventLimits.default
    /// Bytes of decoded base frames to plan the window ahead with (see ``windowFrames``); the
    /// base-frame store's own memory limit should be at least this. Default 32 MiB: 8 frames
    /// of 1280×768, 32 of 512×512.
    public var baseFrameBudget = 32 << 20
    /// The shortest freeze recorded, in seconds (see ``FreezeDetector``).
    public var freezeThreshold: Double = 0.1
    /// The display rate the ticks are expected at (for counting late ticks).
    public var expectedTickRate: Double = 60
    /// How far ahead of the tick the audio clock is read for choosing the mouth, in seconds.
    /// A mouth can only change on a tick, so reading the clock half a tick ahead centres the
    /// lip-sync error around zero (±half a tick) instead of always lagging (0 to one tick).
    /// Nil: half of `1 / expectedTickRate`.
    public var audioLookahead: Double?

    /// The defaults.
    public init() {}
  }

  private struct State {
    var engine: LIVAEngine
    /// Which message each event belongs to: one ``MessageID`` for the engine, the ingest
    /// pipeline and the overlay store (its number is their message number).
    var receiver: SpeechReceiver
    var audioByChunk: [ChunkID: Data] = [:]
    /// `chunk_images_ready` (decoded) of messages the engine has no plan of yet.
    var completeAhead: Set<ChunkID> = []
    /// The connection is down (``LIVAPlayer/connectionLost()`` until
    /// ``LIVAPlayer/connectionRestored()``): what still arrives was received before the drop,
    /// and its message can get nothing more.
    var offline = false
    var lastTick: Double?
    /// Bytes of one decoded base frame, once one was drawn.
    var frameBytes: Int?
    /// A frame without speech whose base frame was not in memory when it was due: shown on the
    /// first tick its base frame is, instead of holding until the next frame is due (idle runs
    /// at 10 fps: that could be 100 ms).
    var missed: DrawnFrame?
    var metrics = PlayerMetrics()
    var started: ContinuousClock.Instant
  }

  /// The configuration the player was made with.
  public let configuration: Configuration
  /// The base frames (disk cache and decoded memory).
  public let baseFrames: BaseFrameStore
  /// The decoded overlay images.
  public let overlays: OverlayImageStore
  private let ingest: Protected<IngestPipeline?>
  private let compositor: Protected<(compositor: Compositor?, pool: FramePool)>
  private let state: Protected<State>
  private let audio: any AudioOutput
  private let surface: any RenderSurface
  private let logger: Logger
  private let observer: (@Sendable (EngineAction) -> Void)?
  private let decodeScheduler: any DecodeScheduler

  /// Creates a player drawing `baseFrames` and received overlays into `surface`, playing
  /// chunk audio on `audio`.
  ///
  /// - Parameter createdAt: the instant time-to-first-frame is measured from (default: now).
  /// - Parameter decodeScheduler: where overlay decodes run (default: a concurrent queue of
  ///   ``IngestPipeline/Configuration/maximumConcurrentDecodes`` workers);
  ///   ``InlineDecodeScheduler`` decodes on the submitting thread, for deterministic tests.
  /// - Parameter observer: called with every engine action after it was carried out (speaking
  ///   started or ended, chunk finished, mode changes, warnings), outside the player's locks.
  public init(
    configuration: Configuration = Configuration(), baseFrames: BaseFrameStore,
    audio: any AudioOutput, surface: any RenderSurface,
    logger: Logger = Logger(label: "liva.player", factory: { _ in SwiftLogNoOpLogHandler() }),
    createdAt: ContinuousClock.Instant = .now,
    decodeScheduler: (any DecodeScheduler)? = nil,
    observer: (@Sendable (EngineAction) -> Void)? = nil
  ) {
    self.configuration = configuration
    self.observer = observer
    self.baseFrames = baseFrames
    self.audio = audio
    self.surface = surface
    self.logger = logger
    var initial = State(
      engine: LIVAEngine(configuration: configuration.engine),
      receiver: SpeechReceiver(speakingFPS: configuration.engine.speakingFPS), started: createdAt)
    initial.metrics.freezes = FreezeDetector(threshold: configuration.freezeThreshold)
    let state = Protected(initial)
    self.state = state
    self.compositor = Protected((nil, FramePool()))
    self.overlays = OverlayImageStore(byteLimit: configuration.overlayByteLimit) { keys in
      state.withLock { state in
        for key in keys { state.engine.imageEvicted(key) }
      }
    }
    self.ingest = Protected(nil)
    self.decodeScheduler = decodeScheduler ?? ConcurrentDecodeScheduler()
    let pipeline = IngestPipeline(
      store: overlays, configuration: configuration.ingest, scheduler: decodeScheduler
    ) { [state, logger] event in
      Self.handle(event, state: state, logger: logger)
    }
    ingest.withLock { $0 = pipeline }
    refreshAnimations()
  }

  // MARK: - Reading

  /// Accounting so far.
  public var metrics: PlayerMetrics {
    state.withLock { state in
      var metrics = state.metrics
      metrics.engine = state.engine.metrics
      return metrics
    }
  }

  /// Pixel buffers the frame pool had to allocate (see ``RenderedFrame``'s ownership rule):
  /// stays at the pool's size while the surface drops the frames it is done with.
  public var framePoolAllocations: Int { compositor.withLock { $0.pool.allocations } }

  /// Whether the window of base frames ahead is in memory (no prefetch pending or running).
  public var isPreloadIdle: Bool { baseFrames.isPrefetchIdle }

  /// Whether no overlay image is waiting for or being decoded.
  public var isIngestIdle: Bool {
    guard let statistics = ingest.withLock({ $0 })?.statistics else { return true }
    return statistics.queued == 0 && statistics.decoding == 0
  }

  /// The engine's mode.
  public var mode: EngineMode { state.withLock { $0.engine.mode } }

  /// Play-animation requests waiting for the avatar to be idle.
  public var pendingAnimationRequests: [AnimationName] {
    state.withLock { $0.engine.pendingAnimationRequests }
  }

  /// The animations the engine can draw now.
  public var readyAnimations: [AnimationName] { state.withLock { $0.engine.graph.animations } }

  // MARK: - Inputs

  /// Tells the engine which base animations are complete on disk (after a download, or at
  /// start with a warm cache). Their frames stay encoded on disk: only a window ahead of what
  /// the engine will draw is decoded, off this thread (see ``windowFrames``). The production
  /// set of protocol.md is always looked for; pass any other names the manifest listed in
  /// `names`.
  public func refreshAnimations(_ names: some Sequence<AnimationName> = [AnimationName]()) {
    var counts: [AnimationName: Int] = [:]
    for name in BaseFrameStore.priorityOrder + Array(names) {
      if let entry = baseFrames.cachedEntry(name) { counts[name] = entry.frames }
    }
    state.withLock { $0.engine.setAvailableAnimations(counts) }
    updateWindow()
  }

  /// The base frames decoded ahead now, most urgent first, as many as
  /// ``Configuration/baseFrameBudget`` holds: the frame on screen, idle frame 0 (always
  /// ready), what the engine will draw next if nothing new arrives
  /// (``LIVAEngine/upcomingBaseFrames(_:)``, three quarters of the room), then the first frames
  /// of every animation that can start where the one on screen ends or starts, or at idle's
  /// end (speech may come at any time).
  public var windowFrames: [BaseFrameRef] {
    state.withLock { Self.window(of: $0, configuration: configuration) }
  }

  private static func window(of state: State, configuration: Configuration) -> [BaseFrameRef] {
    let engine = state.engine
    // As many frames as the budget holds, less two for the frame being drawn and a decode in
    // flight; what is beyond (least urgent) waits for the next update.
    let capacity = max(2, configuration.baseFrameBudget / max(1, state.frameBytes ?? 1 << 20) - 2)
    let graph = engine.graph
    var frames: [BaseFrameRef] = []
    if let onScreen = engine.lastDrawnFrame {
      frames.append(BaseFrameRef(animation: onScreen.animation, index: onScreen.index))
    }
    if let idle = graph.contains(.idleForward) ? .idleForward : graph.animations.first {
      frames.append(BaseFrameRef(animation: idle, index: 0))  // always ready
    }
    // At most 3 s ahead at 30 fps: further out, plans change before they are drawn.
    frames += engine.upcomingBaseFrames(max(4, min(90, capacity * 3 / 4)))
    var poses: [KeyPose] = [.idleEnd]
    if let onScreen = engine.lastDrawnFrame {
      poses += [onScreen.animation.to, onScreen.animation.from]
    }
    for pose in poses {
      for name in graph.animations(from: pose) {
        let count = graph.frameCount(of: name) ?? 0
        frames += (0..<min(4, count)).map { BaseFrameRef(animation: name, index: $0) }
      }
    }
    var seen = Set<BaseFrameRef>()
    return Array(frames.filter { seen.insert($0).inserted }.prefix(capacity))
  }

  /// Asks the base-frame store for the current window (on its worker).
  private func updateWindow() {
    let window = state.withLock { Self.window(of: $0, configuration: configuration) }
    baseFrames.prefetch(window.map { ($0.animation, $0.index) }, scheduler: decodeScheduler)
  }

  /// Handles one decoded LIVA event (speech, images, requests). Base-animation download
  /// events are the client's business and are ignored here.
  public func handle(_ event: ServerEvent) {
    switch event {
    case .audioChunk, .frameImagesBatch, .frameImage, .chunkImagesReady, .audioEnd,
      .animationChunkMetadata:
      let actions = state.withLock { state in
        if case .audioChunk = event { state.metrics.chunksReceived += 1 }
        if case .audioEnd = event { state.metrics.audioEndsReceived += 1 }
        return state.receiver.receive(event, now: state.lastTick ?? 0)
      }
      perform(actions)
    case .playBaseAnimation(let name):
      play(name)
    case .baseAnimationsManifest, .animationTotalFrames, .baseFrame, .animationFramesComplete:
      break
    }
  }

  /// Counts and logs the problems a tolerant decode of `event` noted (a field's value or a
  /// frame dropped; see ``LIVAProtocol/ServerEvent/decode(name:arguments:limits:issues:)``).
  public func noteIssues(_ issues: [LIVAProtocolError]) {
    guard !issues.isEmpty else { return }
    state.withLock { state in
      for issue in issues {
        state.metrics.rejections["\(issue.scope.rawValue).\(issue.code)", default: 0] += 1
      }
    }
    // One line per event (a batch can have a bad field in each of 50 frames): what was
    // dropped, by scope and code, and the first problem in full; the rest at debug.
    let counts = Dictionary(grouping: issues) { "\($0.scope.rawValue).\($0.code)" }
      .map { "\($0.key) ×\($0.value.count)" }.sorted().joined(separator: ", ")
    let first = issues[0]
    logger.warning(
      "[LIVA] part of an event dropped",
      metadata: [
        "event": "\(first.event ?? "?")", "dropped": "\(counts)",
        "field": "\(first.fieldPath ?? "")", "error": "\(first.message)",
      ])
    for issue in issues.dropFirst() { logger.debug("[LIVA] \(issue)") }
  }

  /// The connection to the backend is gone: what was received of the current message plays
  /// out (its audio, the mouths that are decoded), then the avatar returns to idle; nothing
  /// waits for a chunk that cannot come. A reconnect starts clean: the next message is new.
  public func connectionLost() {
    let actions = state.withLock { state in
      let actions = state.receiver.connectionLost()
      state.offline = true
      state.engine.connectionLost()
      return actions
    }
    perform(actions)
  }

  /// Interrupts the current message (a new message from this side): stops its audio, evicts
  /// its images, and returns the avatar to idle through the animation graph.
  public func interrupt() {
    perform(state.withLock { $0.engine.interrupt() }, at: nil)
    updateWindow()  // the way back to idle starts on the next slot
  }

  /// The connection is back: messages from now on can be streamed to their end again.
  public func connectionRestored() {
    state.withLock { $0.offline = false }
  }

  /// Frees memory under pressure at the level ``LifecyclePolicy`` says: the steps of
  /// ``PurgeStep/steps(for:)``. What is dropped is decoded again when needed, off the render
  /// thread; a frame not back in time is a hold, never a blank.
  public func purgeMemory(_ level: LifecyclePolicy.PurgeLevel) {
    purgeMemory(PurgeStep.steps(for: level))
  }

  /// Frees memory under pressure, the steps in the order given: the frame pool's buffers,
  /// images of messages already played, decoded base frames outside the window ahead, or
  /// every decoded base frame but the one on screen and idle frame 0.
  public func purgeMemory(_ steps: [PurgeStep]) {
    for step in steps {
      switch step {
      case .framePoolSpares:
        compositor.withLock { $0.pool.releaseBuffers() }
      case .playedOverlays:
        overlays.purgeUnowned()
      case .decodedFramesBehind:
        baseFrames.purgeMemory(keeping: windowFrames.map { ($0.animation, $0.index) })
      case .decodedFrames:
        let onScreen = state.withLock { $0.engine.lastDrawnFrame }
        baseFrames.purgeMemory(
          keeping: [(AnimationName.idleForward, 0)]
            + (onScreen.map { [($0.animation, $0.index)] } ?? []))
      }
    }
    logger.info("[LIVA] memory purged", metadata: ["steps": "\(steps)"])
  }

  /// Pauses: the picture holds and the chunk's audio pauses with it, at the last tick.
  public func pause() {
    perform(state.withLock { $0.engine.pause() }, at: nil)
  }

  /// Resumes after ``pause()``: picture and audio go on together from where they stopped (the
  /// next tick has delta 0, so nothing jumps).
  public func resume() {
    perform(state.withLock { $0.engine.resume() }, at: nil)
    updateWindow()  // what a purge while paused let go of comes back first
  }

  /// Whether the player is paused (``pause()`` or the debug step mode).
  public var isPaused: Bool { state.withLock { $0.engine.isPaused } }

  /// Debug step mode: pauses, advances exactly one frame slot, draws it, and returns it (nil
  /// when the slot holds). Audio actions of the step are carried out.
  @discardableResult
  public func stepForward() -> DrawnFrame? {
    let (result, now) = state.withLock { ($0.engine.stepForward(), $0.lastTick ?? 0) }
    perform(result.actions, at: now)
    guard case .draw(let frame) = result.plan else { return nil }
    render(frame, at: now)
    return frame
  }

  /// Debug step mode: goes back one ``stepForward()`` and draws the frame that was on screen
  /// then; nil when there is no step to undo. Audio is not rewound.
  @discardableResult
  public func stepBackward() -> DrawnFrame? {
    let (frame, now) = state.withLock { ($0.engine.stepBackward(), $0.lastTick ?? 0) }
    if let frame { render(frame, at: now) }
    return frame
  }

  /// What is on screen, for the debug step mode: mode, base animation and index, overlay keys,
  /// chunk and frame, and the last hold reason.
  public func describe() -> FrameDescription { state.withLock { $0.engine.describe() } }

  /// Asks for a base animation (e.g. `hi_1_s_hi_1_e`) when the avatar is idle.
  public func play(_ animation: AnimationName) {
    perform(state.withLock { $0.engine.requestAnimation(animation) }, at: nil)
    updateWindow()  // its walk may start on the next slot
  }

  /// Counts an event that failed validation (the transport logs and drops it).
  public func noteRejectedEvent(_ error: LIVAProtocolError? = nil) {
    state.withLock { state in
      state.metrics.rejectedEvents += 1
      if let error { state.metrics.rejections["event.\(error.code)", default: 0] += 1 }
    }
  }

  /// The render path: one display tick at display time `now`. Never waits for a decode.
  public func tick(now: Double) {
    let began = ContinuousClock.now
    let lookahead = configuration.audioLookahead ?? 0.5 / configuration.expectedTickRate
    let clock = audio.position(at: now + lookahead)
    let expired = state.withLock { $0.receiver.expire(now: now) }
    if !expired.isEmpty { perform(expired) }
    let (result, audioData) = state.withLock { state -> (TickResult, [ChunkID: Data]) in
      if let last = state.lastTick, now - last > 1.5 / configuration.expectedTickRate {
        state.metrics.lateTicks += 1
      }
      state.lastTick = now
      state.metrics.ticks += 1
      state.metrics.freezes.tick(at: now)
      let result = state.engine.tick(now: now, audio: clock)
      switch result.plan {
      case .hold(.overlayNotReady):
        state.metrics.freezes.held(at: now, cause: .overlayNotReady)
      case .hold(.waitingForNextChunk):
        state.metrics.freezes.held(at: now, cause: .waitingForNextChunk)
      case .hold(.noBaseAnimation):
        state.metrics.freezes.held(at: now, cause: .noBaseAnimation)
      case .hold(.paused):
        state.metrics.freezes.paused()
      case .hold(.notDue), .draw:
        break
      }
      var audioData: [ChunkID: Data] = [:]
      for case .startAudio(let id, _) in result.actions {
        audioData[id] = state.audioByChunk[id]
      }
      return (result, audioData)
    }
    perform(result.actions, at: now, audioData: audioData)
    if case .draw(let frame) = result.plan {
      render(frame, at: now)
      // The window reaches far enough ahead to be refreshed every few frames, not every one.
      if state.withLock({ $0.metrics.framesPresented % 4 == 1 }) { updateWindow() }
    } else if case .hold(.notDue) = result.plan, let missed = state.withLock({ $0.missed }),
      baseFrames.decodedFrame(missed.index, of: missed.animation) != nil
    {
      render(missed, at: now)
    }
    let elapsed = ContinuousClock.now - began
    let seconds =
      Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    state.withLock { $0.metrics.longestRenderStall = max($0.metrics.longestRenderStall, seconds) }
  }

  // MARK: - Internals

  /// Carries out what the receiver decided, in order.
  private func perform(_ actions: [SpeechReceiver.Action]) {
    for action in actions {
      switch action {
      case .enqueue(let plan, let audio):
        enqueue(plan, audio: audio)
      case .decode(let overlays, let chunk, let message):
        ingest.withLock { $0 }?.submit(overlays, chunk: chunk, message: message.rawValue)
      case .imagesFailed(let keys):
        state.withLock { state in
          state.metrics.failedImages += keys.count
          for key in keys { state.engine.imageFailed(key) }
        }
      case .imagesSent(let chunk, let message, let total):
        ingest.withLock { $0 }?.chunkImagesSent(
          chunk: chunk, message: message.rawValue, total: total)
      case .audioEnded:
        state.withLock { $0.engine.audioEnded() }
      case .stale(let event, let chunk):
        state.withLock { $0.metrics.staleEvents += 1 }
        logger.info(
          "[LIVA] stale event of an interrupted message dropped",
          metadata: ["event": "\(event)", "chunk": "\(chunk.map(String.init) ?? "-")"])
      }
    }
  }

  private func enqueue(_ plan: ChunkPlan, audio data: Data?) {
    let message = plan.message.map(\.rawValue)
    let actions = state.withLock { state -> [EngineAction] in
      // Images that arrived before the plan (maybe under an older message, for shared content
      // keys) are owned by this message too, so evicting the older one keeps them.
      var ready: [String] = []
      for frame in plan.frames {
        for layer in frame.layers where overlays.retain(layer.key, message: message) {
          ready.append(layer.key)
        }
      }
      let actions = state.engine.enqueue(plan)
      for case .chunkQueued(let id) in actions {
        if let data, !data.isEmpty { state.audioByChunk[id] = data }
        if state.completeAhead.remove(id) != nil {
          state.engine.chunkImagesComplete(chunkIndex: id.index)
        }
      }
      state.engine.imagesReady(ready)
      // Received before the drop but handled after it (events and connection status travel
      // separately): its message cannot continue either.
      if state.offline { state.engine.connectionLost() }
      return actions
    }
    perform(actions, at: nil)
    // An output with latency schedules the audio ahead, right after the chunk before.
    if let data, !data.isEmpty {
      let now = state.withLock { $0.lastTick } ?? 0
      for case .chunkQueued(let id) in actions { audio.prepare(id, audio: data, at: now) }
    }
    updateWindow()
  }

  private static func handle(_ event: IngestEvent, state: Protected<State>, logger: Logger) {
    switch event {
    case .imageReady(let key, _, _):
      state.withLock { $0.engine.imageReady(key) }
    case .imageFailed(let key, let chunk, _, let error):
      logger.warning(
        "[LIVA] overlay image failed to decode: its mouth is lost",
        metadata: ["key": "\(key)", "chunk": "\(chunk)", "error": "\(error)"])
      state.withLock { state in
        state.metrics.failedImages += 1
        state.engine.imageFailed(key)
      }
    case .imageShed(let key, let chunk, _):
      logger.warning(
        "[LIVA] overlay image shed under backpressure",
        metadata: ["key": "\(key)", "chunk": "\(chunk)"])
      state.withLock { state in
        state.metrics.shedImages += 1
        state.engine.imageFailed(key)
      }
    case .chunkReady(let chunk, let message, _):
      state.withLock { state in
        let id = ChunkID(message: MessageID(message), index: chunk)
        if state.engine.currentMessage == id.message {
          state.engine.chunkImagesComplete(chunkIndex: chunk)
        } else if state.engine.currentMessage.map({ $0 < id.message }) ?? true {
          state.completeAhead.insert(id)
        }
      }
    }
  }

  private func perform(
    _ actions: [EngineAction], at time: Double?, audioData: [ChunkID: Data] = [:]
  ) {
    let now = time ?? state.withLock { $0.lastTick } ?? 0
    for action in actions {
      switch action {
      case .startAudio(let id, let offset):
        if let data = audioData[id] {
          audio.start(id, audio: data, offset: offset, at: now)
        } else {
          logger.warning("[LIVA] no audio for chunk", metadata: ["chunk": "\(id)"])
        }
      case .stopAudio(let id):
        audio.stop(id, at: now)
      case .pauseAudio:
        audio.pause(at: now)
      case .resumeAudio:
        audio.resume(at: now)
      case .evictImages(let message, _):
        state.withLock { state in
          state.audioByChunk = state.audioByChunk.filter { $0.key.message != message }
          state.completeAhead = state.completeAhead.filter { $0.message != message }
        }
        // Cancels its queued decodes and evicts the images only it owns.
        ingest.withLock { $0 }?.cancel(message: message.rawValue)
      case .chunkFinished(let report):
        state.withLock { state in
          state.audioByChunk.removeValue(forKey: report.id)
          state.metrics.chunkReports.append(report)
          if state.metrics.chunkReports.count > 1_000 { state.metrics.chunkReports.removeFirst() }
        }
        logger.debug(
          "chunk finished",
          metadata: [
            "chunk": "\(report.id)", "drawn": "\(report.drawn)", "skipped": "\(report.skipped)",
            "late": "\(report.late)",
          ])
      case .warning(let warning) where warning.code == .mouthLost:
        logger.debug("\(warning)")
      case .warning(let warning):
        logger.warning("[LIVA] \(warning.message)", metadata: ["code": "\(warning.code)"])
      case .chunkQueued, .speakingStarted, .speakingEnded, .modeChanged:
        logger.trace("engine", metadata: ["action": "\(action)"])
      }
      observer?(action)
    }
  }

  private func render(_ frame: DrawnFrame, at time: Double) {
    guard let base = baseFrames.decodedFrame(frame.index, of: frame.animation) else {
      state.withLock { state in
        state.metrics.baseFrameMisses += 1
        state.metrics.freezes.held(at: time, cause: .baseFrameMiss)
        state.missed = frame.chunk == nil ? frame : nil
      }
      logger.debug(
        "base frame not in memory: held", metadata: ["frame": "\(frame.animation)#\(frame.index)"])
      updateWindow()
      return
    }
    var placed: [PlacedOverlay] = []
    for layer in frame.overlays {
      guard let image = overlays.image(for: layer.key) else {
        state.withLock { state in
          state.metrics.overlayMisses += 1
          state.metrics.freezes.held(at: time, cause: .overlayMiss)
        }
        return
      }
      placed.append(PlacedOverlay(image: image, rect: layer.rect))
    }
    state.withLock { state in
      state.frameBytes = base.pixels.count
      state.missed = nil
    }
    let (pixels, width, height) = compositor.withLock { drawing -> ([UInt8], Int, Int) in
      // The output follows the avatar's frames unless a size was asked for.
      let width = configuration.width ?? base.width
      let height = configuration.height ?? base.height
      if drawing.compositor?.width != width || drawing.compositor?.height != height {
        drawing.compositor = Compositor(
          width: width, height: height, featherWidth: configuration.featherWidth,
          contentMode: configuration.contentMode)
      }
      let compositor = drawing.compositor!
      compositor.render(
        base: base, baseKey: "\(frame.animation)#\(frame.index)", overlays: placed)
      let pixels = compositor.withFrame { drawing.pool.take(copying: $0) }
      return (pixels, width, height)
    }
    let position = frame.chunk.flatMap { chunk in
      audio.position(at: time).flatMap { $0.chunk == chunk ? $0.position : nil }
    }
    state.withLock { state in
      state.metrics.framesPresented += 1
      state.metrics.freezes.presented(at: time)
      if state.metrics.timeToFirstFrame == nil {
        let elapsed = ContinuousClock.now - state.started
        state.metrics.timeToFirstFrame =
          Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
      }
      if let position, let index = frame.overlayIndex, !frame.overlays.isEmpty {
        state.metrics.lipSync.record(position - Double(index) / configuration.engine.speakingFPS)
      }
    }
    surface.present(
      RenderedFrame(
        time: time, width: width, height: height, pixels: pixels,
        content: frame, audioPosition: position))
  }
}
