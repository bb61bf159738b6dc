import Foundation
import LIVAEngine
import LIVAMedia
import LIVAPlatform
import LIVAProtocol
import Locking
import Logging

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
  struct State {
    var core: PlayerCore
    let started: ContinuousClock.Instant
  }

  /// The configuration the player was made with.
  public let configuration: Configuration
  /// The base frames (disk cache and decoded memory).
  public let baseFrames: BaseFrameStore
  /// The decoded overlay images.
  public let overlays: OverlayImageStore
  private let ingest: Locked<IngestPipeline?>
  let compositor: Locked<(compositor: Compositor?, pool: FramePool)>
  let state: Locked<State>
  /// Held while a window is worked out and asked for (``updateWindow()``).
  private let windowGate = Locked(())
  private let audio: any AudioOutput
  private let surface: any RenderSurface
  let logger: Logger
  private let observer: (@Sendable (EngineAction) -> Void)?
  private let decodeScheduler: any DecodeScheduler
  /// This player's window of decoded base frames in the store.
  private let prefetcher: BaseFramePrefetcher
  /// Signalled after every input, after a tick that notified an engine action (mode changes,
  /// speaking started or ended), after the first frame was presented, and whenever a decode
  /// worker finishes (an overlay decoded or failed, the window of base frames in memory): what
  /// waits on the player's readings (``isIngestIdle``, ``isPreloadIdle``, ``metrics``,
  /// ``readyAnimations``, ``mode``) re-checks then.
  package let changes: ChangeFeed

  /// Creates a player drawing `baseFrames` and received overlays into `surface`, playing
  /// chunk audio on `audio`.
  ///
  /// - Parameter createdAt: the instant time-to-first-frame is measured from (default: now).
  /// - Parameter decodeScheduler: where overlay decodes run (default: a concurrent queue of
  ///   ``IngestPipeline/Configuration/maximumConcurrentDecodes`` workers);
  ///   ``InlineDecodeScheduler`` decodes on the submitting thread, for deterministic tests.
  /// - Parameter observer: called with every engine action after it was carried out (speaking
  ///   started or ended, chunk finished, mode changes, warnings), outside the player's locks.
  public convenience init(
    configuration: Configuration = Configuration(), baseFrames: BaseFrameStore,
    audio: any AudioOutput, surface: any RenderSurface,
    logger: Logger = Logger(label: "liva.player", factory: { _ in SwiftLogNoOpLogHandler() }),
    createdAt: ContinuousClock.Instant = .now,
    decodeScheduler: (any DecodeScheduler)? = nil,
    observer: (@Sendable (EngineAction) -> Void)? = nil
  ) {
    self.init(
      configuration: configuration, baseFrames: baseFrames, audio: audio, surface: surface,
      logger: logger, createdAt: createdAt, decodeScheduler: decodeScheduler,
      changes: ChangeFeed(), observer: observer)
  }

  /// Creates a player as the public initializer does, signalling `changes` (which its owner
  /// may signal too: a client signals its own changes on its player's feed).
  package init(
    configuration: Configuration, baseFrames: BaseFrameStore, audio: any AudioOutput,
    surface: any RenderSurface, logger: Logger, createdAt: ContinuousClock.Instant,
    decodeScheduler: (any DecodeScheduler)?, changes: ChangeFeed,
    observer: (@Sendable (EngineAction) -> Void)?
  ) {
    self.configuration = configuration
    self.changes = changes
    self.observer = observer
    self.baseFrames = baseFrames
    self.audio = audio
    self.surface = surface
    self.logger = logger
    let state = Locked(
      State(
        core: PlayerCore(
          engine: configuration.engine, freezeThreshold: configuration.freezeThreshold,
          expectedTickRate: configuration.expectedTickRate,
          baseFrameBudget: configuration.baseFrameBudget,
          overlayBudget: max(
            0, configuration.overlayByteLimit - configuration.playedOverlayByteLimit),
          encodedOverlayBudget: configuration.ingest.maximumQueuedBytes,
          reservedFrames: baseFrames.reservedFrames),
        started: createdAt))
    self.state = state
    self.compositor = Locked((nil, FramePool(retainedFrames: surface.retainedFrames)))
    self.overlays = OverlayImageStore(
      byteLimit: configuration.overlayByteLimit,
      playedByteLimit: configuration.playedOverlayByteLimit
    ) { keys in
      let lost = state.withLock { $0.core.imagesRemoved(keys) }
      if lost > 0 {
        logger.warning(
          "[LIVA] overlay images of a queued chunk pushed out of the store: their mouths are lost",
          metadata: ["images": "\(lost)", "storeBytes": "\(configuration.overlayByteLimit)"])
      }
    }
    self.ingest = Locked(nil)
    self.decodeScheduler = decodeScheduler ?? ConcurrentDecodeScheduler()
    self.prefetcher = BaseFramePrefetcher(store: baseFrames, scheduler: self.decodeScheduler) {
      changes.signal()
    }
    let pipeline = IngestPipeline(
      store: overlays, configuration: configuration.ingest, scheduler: decodeScheduler
    ) { [state, logger] event in
      Self.handle(event, state: state, logger: logger)
      changes.signal()
    }
    ingest.withLock { $0 = pipeline }
    refreshAnimations()
  }

  // MARK: - Reading

  /// Accounting so far.
  public var metrics: PlayerMetrics { state.withLock { $0.core.metrics } }

  /// Pixel buffers the frame pool had to allocate (see ``RenderedFrame``'s ownership rule):
  /// stays at the pool's size while the surface drops the frames it is done with.
  public var framePoolAllocations: Int { compositor.withLock { $0.pool.allocations } }

  /// Whether the window of base frames ahead is in memory (no prefetch pending or running).
  public var isPreloadIdle: Bool { prefetcher.isIdle }

  /// Whether no overlay image is waiting for or being decoded.
  public var isIngestIdle: Bool {
    guard let statistics = ingest.withLock({ $0 })?.statistics else { return true }
    return statistics.queued == 0 && statistics.decoding == 0
  }

  /// The engine's mode.
  public var mode: EngineMode { state.withLock { $0.core.engine.mode } }

  /// Play-animation requests waiting for the avatar to be idle.
  public var pendingAnimationRequests: [AnimationName] {
    state.withLock { $0.core.engine.pendingAnimationRequests }
  }

  /// The animations the engine can draw now.
  public var readyAnimations: [AnimationName] {
    state.withLock { $0.core.engine.graph.animations }
  }

  /// Chunks whose audio or image claims the player holds (queued or playing): 0 once speech is
  /// over, whatever was interrupted or dropped on the way.
  public var heldChunks: Int { state.withLock { $0.core.heldChunks } }

  // MARK: - Inputs

  /// Tells the engine which base animations are complete on disk (after a download, or at
  /// start with a warm cache). Their frames stay encoded on disk: only a window ahead of what
  /// the engine will draw is decoded, off this thread (see ``windowFrames``). The production
  /// set of the protocol is always looked for; pass any other names the manifest listed in
  /// `names`.
  public func refreshAnimations(_ names: some Sequence<AnimationName> = [AnimationName]()) {
    var counts: [AnimationName: Int] = [:]
    for name in BaseFrameStore.priorityOrder + Array(names) {
      if let entry = baseFrames.cachedEntry(name) { counts[name] = entry.frameCount }
    }
    input { $0.setAvailableAnimations(counts) }
  }

  /// The base frames decoded ahead now, most urgent first, as many as
  /// ``Configuration/baseFrameBudget`` holds: the frame on screen, idle frame 0 (always
  /// ready), what the engine will draw next if nothing new arrives
  /// (``LIVAEngine/upcomingBaseFrames(_:)``, three quarters of the room), then the first frames
  /// of every animation that can start where the one on screen ends or starts, or at idle's
  /// end (speech may come at any time). While idle, the first frames speech would draw (the
  /// way into talking, and the frame behind the one on screen when speech walks the loop back)
  /// come right after the next two idle frames. The window is asked for again each time a
  /// quarter of its reach is drawn: every frame at 1280×768, where it holds six.
  public var windowFrames: [BaseFrameRef] {
    state.withLock { $0.core.window(budget: configuration.baseFrameBudget) }
  }

  /// Asks the base-frame store for the current window (on its worker). Worked out and asked
  /// for under one gate: a window worked out earlier on another thread (the socket's, after an
  /// event) can never replace a newer one (the display link's) that was asked for first.
  private func updateWindow() {
    windowGate.withLock { _ in prefetcher.request(windowFrames) }
  }

  /// Handles one decoded LIVA event (speech, images, requests). Base-animation download
  /// events are the client's business and are ignored here. `fromLostConnection`: the event
  /// came on a connection that dropped before the last ``connectionRestored()`` (see
  /// ``PlayerCore/handle(_:fromLostConnection:)``).
  public func handle(_ event: ServerEvent, fromLostConnection: Bool = false) {
    input { $0.handle(event, fromLostConnection: fromLostConnection) }
  }

  /// Counts and logs the problems a tolerant decode of `event` noted (a field's value or a
  /// frame dropped; see ``LIVAProtocol/ServerEvent/decode(name:arguments:limits:issues:)``).
  public func noteIssues(_ issues: [LIVAProtocolError]) {
    guard !issues.isEmpty else { return }
    input { core in
      core.noteIssues(issues)
      return []
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
    input { $0.connectionLost() }
  }

  /// Interrupts the current message (a new message from this side): stops its audio, releases
  /// its images, and returns the avatar to idle through the animation graph. Its later chunks
  /// are dropped.
  public func interrupt() {
    input { $0.interrupt() }
  }

  /// The connection is back: messages from now on can be streamed to their end again.
  public func connectionRestored() {
    input { core in
      core.connectionRestored()
      return []
    }
  }

  /// Bytes of the backend's link arrived since the last tick (the client calls this when its
  /// transport's count moves): speech waits for what is still coming rather than playing
  /// without it (``EngineConfiguration/deliveryQuiet``).
  public func linkDelivered() {
    state.withLock { $0.core.linkDelivered() }
  }

  /// Pauses: the picture holds and the chunk's audio pauses with it, at the last tick.
  public func pause() {
    input { $0.pause() }
  }

  /// Resumes after ``pause()``: picture and audio go on together from where they stopped (the
  /// next tick has delta 0, so nothing jumps).
  public func resume() {
    input { $0.resume() }
  }

  /// Whether the player is paused (``pause()`` or the debug step mode).
  public var isPaused: Bool { state.withLock { $0.core.engine.isPaused } }

  /// Debug step mode: pauses, advances exactly one frame slot, draws it, and returns it (nil
  /// when the slot holds). Audio actions of the step are carried out.
  @discardableResult
  public func stepForward() -> DrawnFrame? {
    let (frame, effects) = state.withLock { $0.core.stepForward() }
    execute(effects)
    return frame
  }

  /// Debug step mode: goes back one ``stepForward()`` and draws the frame that was on screen
  /// then; nil when there is no step to undo. Audio is not rewound.
  @discardableResult
  public func stepBackward() -> DrawnFrame? {
    let (frame, now) = state.withLock { ($0.core.stepBackward(), $0.core.lastTick ?? 0) }
    if let frame { render(frame, at: now, firstFrame: false) }
    return frame
  }

  /// What is on screen, for the debug step mode: mode, base animation and index, overlay keys,
  /// chunk and frame, and the last hold reason.
  public func describe() -> FrameDescription { state.withLock { $0.core.engine.describe() } }

  /// Asks for a base animation (e.g. `hi_1_s_hi_1_e`) when the avatar is idle.
  public func play(_ animation: AnimationName) {
    input { $0.play(animation) }
  }

  /// Counts an event that failed validation (the transport logs and drops it).
  public func noteRejectedEvent(_ error: LIVAProtocolError? = nil) {
    input { core in
      core.noteRejectedEvent(error)
      return []
    }
  }

  /// The render path: one display tick at display time `now`. Never waits for a decode.
  public func tick(now: Double) {
    let began = ContinuousClock.now
    let lookahead = configuration.audioLookahead ?? 0.5 / configuration.expectedTickRate
    let clock = audio.position(at: now + lookahead)
    execute(state.withLock { $0.core.tick(now: now, audio: clock) })
    let elapsed = ContinuousClock.now - began
    let seconds =
      Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    state.withLock { $0.core.noteRenderStall(seconds) }
  }

  // MARK: - Carrying out the core's effects

  /// An input: changes the core, carries out its effects, then signals ``changes``.
  private func input(_ change: (inout PlayerCore) -> [PlayerCore.Effect]) {
    execute(state.withLock { change(&$0.core) })
    changes.signal()
  }

  /// Carries out the core's effects in order, outside the lock.
  private func execute(_ effects: [PlayerCore.Effect]) {
    var notified = false
    defer { if notified { changes.signal() } }
    for effect in effects {
      switch effect {
      case .decode(let overlays, let chunk):
        // Content-addressed: the images belong to no message until a plan claims them.
        ingest.withLock { $0 }?.submit(overlays, chunk: chunk, message: 0)
      case .claim(let keys, let message):
        overlays.claim(keys, message: message.rawValue)
      case .release(let keys, let message):
        overlays.release(keys, message: message.rawValue)
      case .evict(let message):
        overlays.withdrawClaims(message: message.rawValue)
      case .prepareAudio(let id, let data, let now):
        audio.prepare(id, audio: data, at: now)
      case .startAudio(let id, let data, let offset, let now, let generation):
        // Under the core's lock, with its generation: an interrupt on another thread since the
        // tick that decided the start dropped this chunk, and its stop cannot come between.
        let started = state.withLock { state in
          guard state.core.generation == generation else { return false }
          audio.start(id, audio: data, offset: offset, at: now)
          return true
        }
        if !started {
          logger.debug(
            "[LIVA] start of an interrupted chunk skipped", metadata: ["chunk": "\(id)"])
        }
      case .stopAudio(let id, let now):
        state.withLock { _ in audio.stop(id, at: now) }
      case .pauseAudio(let now):
        audio.pause(at: now)
      case .resumeAudio(let now):
        audio.resume(at: now)
      case .draw(let frame, let time, let firstFrame):
        render(frame, at: time, firstFrame: firstFrame)
      case .drawIfDecoded(let frame, let time):
        if baseFrames.decodedFrame(frame.index, of: frame.animation) != nil {
          render(frame, at: time, firstFrame: false)
        }
      case .updateWindow:
        updateWindow()
      case .notify(let action):
        observer?(action)
        notified = true
      case .log(let level, let message, let metadata):
        logger.log(
          level: level, "\(message)",
          metadata: metadata.mapValues { Logger.MetadataValue.string($0) })
      }
    }
  }

  private static func handle(_ event: IngestEvent, state: Locked<State>, logger: Logger) {
    switch event {
    case .imageReady(let key, _, _):
      state.withLock { $0.core.imageReady(key) }
    case .imageFailed(let key, let chunk, _, let error):
      logger.warning(
        "[LIVA] overlay image failed to decode: its mouth is lost",
        metadata: ["key": "\(key)", "chunk": "\(chunk)", "error": "\(error)"])
      state.withLock { $0.core.imageFailed(key, shed: false) }
    case .imageShed(let key, let chunk, _):
      logger.warning(
        "[LIVA] overlay image shed under backpressure",
        metadata: ["key": "\(key)", "chunk": "\(chunk)"])
      state.withLock { $0.core.imageFailed(key, shed: true) }
    case .chunkReady:
      break  // the player never defers `chunk_images_ready` through the pipeline
    }
  }

  /// Composites and presents `frame`, then reports the outcome to the core once.
  private func render(_ frame: DrawnFrame, at time: Double, firstFrame: Bool) {
    // The session's first frame need not wait a tick for a worker: the kept idle frame is read
    // inline (nothing is on screen yet to hold instead). Asked only on a miss.
    guard
      let base = baseFrames.decodedFrame(frame.index, of: frame.animation)
        ?? (firstFrame ? baseFrames.decodedOrKeptFrame(frame.index, of: frame.animation) : nil)
    else {
      report(.baseFrameMissing(frame, at: time))
      return
    }
    var placed: [PlacedOverlay] = []
    for layer in frame.overlays {
      guard let image = overlays.image(for: layer.key) else {
        report(.overlayMissing(at: time))
        return
      }
      placed.append(PlacedOverlay(image: image, rect: layer.rect))
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
        base: base, baseKey: BaseFrameRef(animation: frame.animation, index: frame.index),
        overlays: placed)
      let pixels =
        drawing.pool.passesThrough
        ? compositor.frame.pixels : compositor.withFrame { drawing.pool.take(copying: $0) }
      return (pixels, width, height)
    }
    let position = frame.chunk.flatMap { chunk in
      audio.position(at: time).flatMap { $0.chunk == chunk ? $0.position : nil }
    }
    report(
      .presented(frame, at: time, audioPosition: position, frameBytes: base.pixels.count))
    surface.present(
      RenderedFrame(
        time: time, width: width, height: height, pixels: pixels,
        content: frame, audioPosition: position))
    // The first frame is a change a waiter may look for (``PlayerMetrics/timeToFirstFrame``).
    if firstFrame { changes.signal() }
  }

  /// The one report of a frame's outcome to the core; carries out what it answers.
  private func report(_ outcome: PlayerCore.RenderOutcome) {
    execute(
      state.withLock { state in
        let started = state.started
        return state.core.rendered(
          outcome,
          sinceStart: {
            let elapsed = ContinuousClock.now - started
            return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds)
              * 1e-18
          }())
      })
  }
}
