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
///
/// A thin shell over ``PlayerCore``: every input (events, ticks, decode results, removals from
/// the overlay store) changes the core under one lock and gets back effects, which the shell
/// carries out in order outside it; the frames it drew are reported back once. A second lock
/// guards only the compositor's pixels.
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
  private let ingest: IngestPipeline
  let compositor: Locked<(compositor: Compositor?, pool: FramePool)>
  let state: Locked<State>
  private let audio: any AudioOutput
  /// How far ahead of a tick the audio clock is read (``Configuration/audioLookahead``).
  private let audioLookahead: Double
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
    let audioLookahead = configuration.audioLookahead ?? 0.5 / configuration.expectedTickRate
    self.audioLookahead = audioLookahead
    let state = Locked(
      State(
        core: PlayerCore(
          engine: configuration.engine, freezeThreshold: configuration.freezeThreshold,
          expectedTickRate: configuration.expectedTickRate,
          baseFrameBudget: configuration.baseFrameBudget,
          overlayBudget: max(
            0, configuration.overlayByteLimit - configuration.playedOverlayByteLimit),
          encodedOverlayBudget: configuration.ingest.maximumQueuedBytes,
          reservedFrames: baseFrames.reservedFrames,
          audioLookahead: audioLookahead),
        started: createdAt))
    self.state = state
    self.compositor = Locked((nil, FramePool(retainedFrames: surface.retainedFrames)))
    let overlays = OverlayImageStore(
      byteLimit: configuration.overlayByteLimit,
      playedByteLimit: configuration.playedOverlayByteLimit)
    self.overlays = overlays
    self.decodeScheduler = decodeScheduler ?? ConcurrentDecodeScheduler()
    self.prefetcher = BaseFramePrefetcher(store: baseFrames, scheduler: self.decodeScheduler) {
      changes.signal()
    }
    ingest = IngestPipeline(
      store: overlays, configuration: configuration.ingest, scheduler: self.decodeScheduler)
    // Removals come in as inputs, like everything else (an image a queued chunk needed is a
    // mouth lost).
    overlays.observeRemovals { [weak self] keys in
      self?.input { $0.imagesRemoved(keys, storeBytes: configuration.overlayByteLimit) }
    }
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
    let statistics = ingest.statistics
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
    input { $0.noteIssues(issues) }
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
    input { $0.connectionRestored() }
  }

  /// Bytes of the backend's link arrived since the last tick (the client calls this when its
  /// transport's count moves): speech waits for what is still coming rather than playing
  /// without it (``EngineConfiguration/deliveryQuiet``).
  public func linkDelivered() {
    input(signal: false) { $0.linkDelivered() }
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
    var frame: DrawnFrame?
    input { core in
      let step = core.stepForward()
      frame = step.frame
      return step.effects
    }
    return frame
  }

  /// Debug step mode: goes back one ``stepForward()`` and draws the frame that was on screen
  /// then; nil when there is no step to undo. Audio is not rewound.
  @discardableResult
  public func stepBackward() -> DrawnFrame? {
    var frame: DrawnFrame?
    input { core in
      let step = core.stepBackward()
      frame = step.frame
      return step.effects
    }
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
    input { $0.noteRejectedEvent(error) }
  }

  /// The render path: one display tick at display time `now`. Never waits for a decode. The
  /// audio clock is read once, ahead of `now` (``Configuration/audioLookahead``); the frame
  /// drawn carries its chunk's position from that reading.
  public func tick(now: Double) {
    let began = ContinuousClock.now
    let clock = audio.position(at: now + audioLookahead)
    let drawn = execute(state.withLock { $0.core.tick(now: now, audio: clock) })
    report(drawn, tickTook: Self.seconds(ContinuousClock.now - began))
  }

  // MARK: - Carrying out the core's effects

  /// An input: changes the core under the lock, carries out its effects outside it, reports
  /// what was drawn, then signals ``changes`` (unless `signal` is false: an input no reading
  /// waits for).
  private func input(signal: Bool = true, _ change: (inout PlayerCore) -> [PlayerCore.Effect]) {
    report(execute(state.withLock { change(&$0.core) }), tickTook: nil)
    if signal { changes.signal() }
  }

  /// The one report after carrying out effects: what became of the frames drawn, and how long
  /// a tick took. Carries out what the core answers (no more drawing).
  private func report(_ drawn: [PlayerCore.RenderOutcome], tickTook: Double?) {
    guard !drawn.isEmpty || tickTook != nil else { return }
    let (answer, firstFrame) = state.withLock { state in
      let started = state.started
      let before = state.core.hasPresented
      let answer = state.core.rendered(
        drawn, tickTook: tickTook, sinceStart: Self.seconds(ContinuousClock.now - started))
      return (answer, !before && state.core.hasPresented)
    }
    let drewMore = execute(answer)
    assert(drewMore.isEmpty, "a report's answer drew a frame")
    // The first frame is a change a waiter may look for (``PlayerMetrics/timeToFirstFrame``).
    if firstFrame { changes.signal() }
  }

  private static func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
  }

  /// Carries out the core's effects in order, outside the lock; returns what became of each
  /// frame it was asked to draw.
  private func execute(_ effects: [PlayerCore.Effect]) -> [PlayerCore.RenderOutcome] {
    var notified = false
    var drawn: [PlayerCore.RenderOutcome] = []
    defer { if notified { changes.signal() } }
    for effect in effects {
      switch effect {
      case .decode(let batch):
        // Content-addressed: the images belong to no message until a plan claims them.
        ingest.submit(batch) { [weak self] event in self?.input { $0.decoded(event) } }
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
      case .draw(let frame, let time, let audioPosition, let firstFrame):
        drawn.append(render(frame, at: time, audioPosition: audioPosition, firstFrame: firstFrame))
      case .drawIfDecoded(let frame, let time):
        if baseFrames.decodedFrame(frame.index, of: frame.animation) != nil {
          drawn.append(render(frame, at: time, audioPosition: nil, firstFrame: false))
        }
      case .requestWindow(let frames, let step):
        prefetcher.request(frames, step: step)
      case .notify(let action):
        observer?(action)
        notified = true
      case .log(let level, let message, let metadata):
        logger.log(
          level: level, "\(message)",
          metadata: metadata.mapValues { Logger.MetadataValue.string($0) })
      }
    }
    return drawn
  }

  /// Composites and presents `frame`; returns the outcome, for the core.
  private func render(
    _ frame: DrawnFrame, at time: Double, audioPosition position: Double?, firstFrame: Bool
  ) -> PlayerCore.RenderOutcome {
    // The session's first frame need not wait a tick for a worker: the kept idle frame is read
    // inline (nothing is on screen yet to hold instead). Asked only on a miss.
    guard
      let base = baseFrames.decodedFrame(frame.index, of: frame.animation)
        ?? (firstFrame ? baseFrames.decodedOrKeptFrame(frame.index, of: frame.animation) : nil)
    else { return .baseFrameMissing(frame, at: time) }
    var placed: [PlacedOverlay] = []
    for layer in frame.overlays {
      guard let image = overlays.image(for: layer.key) else { return .overlayMissing(at: time) }
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
    surface.present(
      RenderedFrame(
        time: time, width: width, height: height, pixels: pixels,
        content: frame, audioPosition: position))
    return .presented(frame, at: time, audioPosition: position, frameBytes: base.pixels.count)
  }
}
