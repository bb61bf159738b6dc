import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Logging

/// Every decision of the player, as a value: events, ticks, decode results and removals from
/// the overlay store in, ``Effect``s out. No clock, no locks, no I/O: time comes in as an
/// argument, and the owner (``LIVAPlayer``) carries out the effects in order, outside its lock,
/// then reports once what became of the frames it drew (``rendered(_:tickTook:sinceStart:)``).
///
/// It holds the engine (which owns which images are ready), the speech session (message
/// identity, each held chunk's audio and image keys), the decode window of mouths, and the
/// metrics. The same inputs always give the same effects, so generated sessions run through it
/// on a virtual clock.
public struct PlayerCore: Sendable {
  /// What the owner must do, in order.
  public enum Effect: Sendable, Equatable {
    /// Decode these images (content-addressed: they belong to no message until claimed), and
    /// report what became of each with ``decoded(_:)``.
    case decode([EncodedOverlay])
    /// `message` uses these images: keep them while it plays.
    case claim(Set<String>, message: MessageID)
    /// `message` no longer uses these images (its chunk played, or was not taken).
    case release(Set<String>, message: MessageID)
    /// `message` was interrupted: it uses none of its images any more.
    case evict(MessageID)
    /// Schedule a queued chunk's audio ahead (an output with latency).
    case prepareAudio(ChunkID, Data, at: Double)
    /// Start a chunk's audio `offset` seconds in, unless the speech moved on since: carry it
    /// out only while ``generation`` is still `generation` (checked together with the start,
    /// so an interrupt on another thread lands either before it, and the start is dropped, or
    /// after it, and stops it).
    case startAudio(ChunkID, Data, offset: Double, at: Double, generation: Int)
    /// Stop a chunk's audio.
    case stopAudio(ChunkID, at: Double)
    /// Pause the audio clock.
    case pauseAudio(at: Double)
    /// Resume the audio clock.
    case resumeAudio(at: Double)
    /// Composite and present this frame as the picture of display time `at`; then report the
    /// outcome with ``rendered(_:tickTook:sinceStart:)``. `audioPosition`: its chunk's audio
    /// position at `at` (nil outside speech, or when that chunk's audio is not playing), from
    /// the clock the tick was given. `firstFrame`: nothing was presented yet, so the owner may
    /// read the base frame inline rather than hold on a miss.
    case draw(DrawnFrame, at: Double, audioPosition: Double?, firstFrame: Bool)
    /// Present this frame if its base frame is in memory now (a frame without speech that was
    /// due while it was not); nothing otherwise (and nothing to report).
    case drawIfDecoded(DrawnFrame, at: Double)
    /// Ask the base-frame store for this window of frames to decode ahead (``window(budget:)``
    /// with ``baseFrameBudget``), worked out at `step`: a request of an earlier step that
    /// reaches the store later must not replace it
    /// (``LIVAMedia/BaseFramePrefetcher/request(_:step:)``).
    case requestWindow([BaseFrameRef], step: Int)
    /// Tell the app's observer.
    case notify(EngineAction)
    /// Write a log line.
    case log(Logger.Level, String, [String: String])
  }

  /// The engine.
  public internal(set) var engine: LIVAEngine
  /// Message identity and each held chunk's audio and image keys.
  var session: SpeechSession
  /// The connection is down: what still arrives was received before the drop.
  var offline = false
  /// The last tick's time.
  public internal(set) var lastTick: Double?
  /// Bytes of one decoded base frame, once one was drawn.
  public internal(set) var frameBytes: Int?
  /// A frame without speech whose base frame was not in memory when it was due.
  var missed: DrawnFrame?
  var drawsSinceWindow = 0
  /// The window of base frames is due to be asked for again at the end of this input.
  var windowDue = false
  /// How many windows were asked for.
  var windowSteps = 0
  /// How far ahead of the tick the audio clock given to ``tick(now:audio:)`` is read.
  public let audioLookahead: Double
  /// Bytes of decoded base frames the window is planned with (see ``window(budget:)``).
  public let baseFrameBudget: Int
  /// Frames' worth of the budget held by something else than decoded frames: the playback
  /// form's decoder and its pictures (``LIVAMedia/BaseFrameStore/reservedFrames``).
  public let reservedFrames: Int
  /// Bytes of decoded overlay images the decode window ahead of playback may hold.
  public var overlayBudget: Int { mouths.decodedBudget }
  /// Bytes of encoded overlay images held back at most (received, not yet decoded).
  public var encodedOverlayBudget: Int { mouths.encodedBudget }
  /// Received images waiting encoded, and those sent to be decoded.
  var mouths: MouthDecodeWindow
  /// `play_base_animation` requests for animations not downloaded yet, oldest first.
  var deferredRequests: [(name: AnimationName, at: Double)] = []
  /// How long a request for an animation not downloaded yet waits for it, in seconds.
  public static let deferredRequestLifetime = 10.0
  /// The most requests that wait for their animation at once; the oldest goes first.
  public static let deferredRequestLimit = 4
  var accounting = PlayerMetrics()
  let expectedTickRate: Double
  let speakingFPS: Double

  /// Creates a core with the engine's tuning; `baseFrameBudget` is the bytes of decoded base
  /// frames its window ahead is planned with (it decides how often the window is refreshed);
  /// `overlayBudget` the bytes of decoded mouths of chunks not yet played it has decoded at
  /// once (the overlay store's bytes less its played images'), and `encodedOverlayBudget` the
  /// bytes of encoded mouths it holds back meanwhile. `audioLookahead`: how far ahead of each
  /// tick its owner reads the audio clock.
  public init(
    engine configuration: EngineConfiguration = EngineConfiguration(),
    freezeThreshold: Double = 0.1, expectedTickRate: Double = 60,
    baseFrameBudget: Int = 32 << 20, overlayBudget: Int = 60 << 20,
    encodedOverlayBudget: Int = 64 << 20, reservedFrames: Int = 0, audioLookahead: Double = 0
  ) {
    self.audioLookahead = audioLookahead
    self.baseFrameBudget = baseFrameBudget
    self.reservedFrames = max(0, reservedFrames)
    mouths = MouthDecodeWindow(decodedBudget: overlayBudget, encodedBudget: encodedOverlayBudget)
    engine = LIVAEngine(configuration: configuration)
    session = SpeechSession(speakingFPS: configuration.speakingFPS)
    // A wait at a chunk boundary within the engine's grace (and a frame and a tick more) is a
    // wait, not a freeze.
    accounting.freezes = FreezeDetector(
      threshold: freezeThreshold, boundaryWaitLimit: configuration.boundaryGrace + 0.05)
    self.expectedTickRate = expectedTickRate
    speakingFPS = configuration.speakingFPS
  }

  // MARK: - Reading

  /// Accounting so far, with the engine's metrics.
  public var metrics: PlayerMetrics {
    var metrics = accounting
    metrics.engine = engine.metrics
    return metrics
  }

  /// The speech generation: counted up at every message begun and every interrupt. An audio
  /// start decided in an earlier one is for a chunk that was dropped since.
  public internal(set) var generation = 0

  /// Chunks whose audio or image claims are held (queued or playing).
  public var heldChunks: Int { session.heldChunks }

  /// The base frames to decode ahead, most urgent first, as many as `budget` bytes hold (see
  /// ``BaseFrameWindow``).
  public func window(budget: Int) -> [BaseFrameRef] {
    BaseFrameWindow.frames(
      for: engine,
      capacity: BaseFrameWindow.capacity(
        budget: budget, frameBytes: frameBytes, reserved: reservedFrames))
  }

  // MARK: - Inputs

  /// Handles one decoded LIVA event. Base-animation download events are the client's business.
  ///
  /// `fromLostConnection`: the event arrived on a connection that has dropped since (its owner
  /// read it after the next connection's status). It is handled as one received before
  /// ``connectionLost()``: what it brings plays out, and its message waits for nothing more.
  public mutating func handle(_ event: ServerEvent, fromLostConnection: Bool = false) -> [Effect] {
    let wasOffline = offline
    offline = offline || fromLostConnection
    defer { offline = wasOffline }
    return finish(receive(event, fromLostConnection: fromLostConnection))
  }

  mutating func receive(_ event: ServerEvent, fromLostConnection: Bool) -> [Effect] {
    switch event {
    case .audioChunk, .frameImagesBatch, .frameImage, .chunkImagesReady, .audioEnd,
      .animationChunkMetadata:
      if case .audioChunk = event { accounting.chunksReceived += 1 }
      if case .audioEnd = event { accounting.audioEndsReceived += 1 }
      return perform(
        session.receive(event, now: lastTick ?? 0, fromLostConnection: fromLostConnection))
    case .playBaseAnimation(let name):
      return play(name)
    case .baseAnimationsManifest, .animationTotalFrames, .baseFrame, .animationFramesComplete:
      return []
    }
  }

  /// Replaces the animations the engine can draw (name → frame count).
  public mutating func setAvailableAnimations(_ counts: [AnimationName: Int]) -> [Effect] {
    engine.setAvailableAnimations(counts)
    // Requests that waited for their animation go to the engine now that it is here.
    let now = lastTick ?? 0
    deferredRequests.removeAll { now - $0.at > Self.deferredRequestLifetime }
    let arrived = deferredRequests.filter { engine.graph.contains($0.name) }
    deferredRequests.removeAll { engine.graph.contains($0.name) }
    var effects: [Effect] = []
    for request in arrived {
      effects += perform(engine.requestAnimation(request.name), at: now)
    }
    windowDue = true
    return finish(effects)
  }

  /// Counts the problems a tolerant decode of an event noted, and logs them: one line per
  /// event (a batch can have a bad field in each of 50 frames) with what was dropped, by scope
  /// and code, and the first problem in full; the rest at debug.
  public mutating func noteIssues(_ issues: [LIVAProtocolError]) -> [Effect] {
    guard let first = issues.first else { return [] }
    for issue in issues {
      accounting.rejections["\(issue.scope.rawValue).\(issue.code)", default: 0] += 1
    }
    let counts = Dictionary(grouping: issues) { "\($0.scope.rawValue).\($0.code)" }
      .map { "\($0.key) ×\($0.value.count)" }.sorted().joined(separator: ", ")
    return [
      .log(
        .warning, "[LIVA] part of an event dropped",
        [
          "event": first.event ?? "?", "dropped": counts, "field": first.fieldPath ?? "",
          "error": first.message,
        ])
    ] + issues.dropFirst().map { .log(.debug, "[LIVA] \($0)", [:]) }
  }

  /// Counts an event that failed validation (its owner logged and dropped it).
  public mutating func noteRejectedEvent(_ error: LIVAProtocolError?) -> [Effect] {
    accounting.rejectedEvents += 1
    if let error { accounting.rejections["event.\(error.code)", default: 0] += 1 }
    return []
  }

  /// The connection is gone: what was received plays out, then the avatar returns to idle.
  public mutating func connectionLost() -> [Effect] {
    let actions = session.connectionLost()
    offline = true
    engine.connectionLost()
    return finish(perform(actions))
  }

  /// The connection is back.
  public mutating func connectionRestored() -> [Effect] {
    offline = false
    session.connectionRestored()
    return []
  }

  /// Bytes of the backend's link arrived since the last tick (``LIVAEngine/linkDelivered()``).
  public mutating func linkDelivered() -> [Effect] {
    engine.linkDelivered()
    return []
  }

  /// Interrupts the current message (from the app).
  public mutating func interrupt() -> [Effect] {
    session.interrupt()
    generation += 1
    windowDue = true
    return finish(perform(engine.interrupt(), at: lastTick ?? 0))
  }

  /// Pauses picture and audio.
  public mutating func pause() -> [Effect] { finish(perform(engine.pause(), at: lastTick ?? 0)) }

  /// Resumes after ``pause()``.
  public mutating func resume() -> [Effect] {
    windowDue = true
    return finish(perform(engine.resume(), at: lastTick ?? 0))
  }

  /// Asks for a base animation when the avatar is idle.
  public mutating func play(_ animation: AnimationName) -> [Effect] {
    guard engine.graph.contains(animation) else {
      // Not downloaded yet: it waits for its animation (``deferredRequestLifetime``).
      deferredRequests.removeAll { $0.name == animation }
      deferredRequests.append((animation, lastTick ?? 0))
      if deferredRequests.count > Self.deferredRequestLimit { deferredRequests.removeFirst() }
      return [
        .log(
          .info, "[LIVA] play request waits for its animation to be downloaded",
          ["animation": "\(animation)"])
      ]
    }
    windowDue = true
    return finish(perform(engine.requestAnimation(animation), at: lastTick ?? 0))
  }

  /// Debug step mode: one frame slot forward.
  public mutating func stepForward() -> (frame: DrawnFrame?, effects: [Effect]) {
    let result = engine.stepForward()
    var effects = perform(result.actions, at: lastTick ?? 0)
    guard case .draw(let frame) = result.plan else { return (nil, finish(effects)) }
    effects.append(.draw(frame, at: lastTick ?? 0, audioPosition: nil, firstFrame: !hasPresented))
    // The window, if due, is asked for at the report, once the frame is presented.
    return (frame, effects)
  }

  /// Debug step mode: one ``stepForward()`` back, drawn again.
  public mutating func stepBackward() -> (frame: DrawnFrame?, effects: [Effect]) {
    guard let frame = engine.stepBackward() else { return (nil, []) }
    return (frame, [.draw(frame, at: lastTick ?? 0, audioPosition: nil, firstFrame: false)])
  }

  // MARK: - Ticks

  /// One display tick at `now`, with the audio clock read for it (``audioLookahead`` ahead of
  /// `now`). Its owner reports back with ``rendered(_:tickTook:sinceStart:)``: when the tick
  /// draws, the window of base frames due is asked for in the answer to that report, worked
  /// out once the frame is presented.
  public mutating func tick(now: Double, audio clock: AudioClock?) -> [Effect] {
    var effects = perform(session.expire(now: now))
    if let last = lastTick, now - last > 1.5 / expectedTickRate { accounting.lateTicks += 1 }
    lastTick = now
    accounting.ticks += 1
    accounting.freezes.tick(at: now)
    let result = engine.tick(now: now, audio: clock)
    switch result.plan {
    case .hold(.overlayNotReady):
      accounting.freezes.held(at: now, cause: .overlayNotReady)
    case .hold(.waitingForNextChunk):
      accounting.freezes.held(at: now, cause: .waitingForNextChunk)
    case .hold(.noBaseAnimation):
      accounting.freezes.held(at: now, cause: .noBaseAnimation)
    case .hold(.paused):
      accounting.freezes.paused()
    case .hold(.notDue), .draw:
      break
    }
    effects += perform(result.actions, at: now)
    if case .draw(let frame) = result.plan {
      // The clock was read `audioLookahead` ahead of the tick.
      let position = frame.chunk.flatMap { chunk in
        clock.flatMap { $0.chunk == chunk ? $0.position - audioLookahead : nil }
      }
      effects.append(.draw(frame, at: now, audioPosition: position, firstFrame: !hasPresented))
      // Refreshed once a quarter of its reach is drawn, so it always reaches three quarters of
      // it ahead: every few frames at 512×512 (22 frames ahead), every frame at 1280×768 (4).
      let reach = BaseFrameWindow.reach(
        capacity: BaseFrameWindow.capacity(
          budget: baseFrameBudget, frameBytes: frameBytes, reserved: reservedFrames))
      if drawsSinceWindow % max(1, reach / 4) == 0 { windowDue = true }
      drawsSinceWindow += 1
      // Asked for at the report, once the frame is presented (its size plans the window).
      return effects
    } else if case .hold(.notDue) = result.plan, let missed {
      effects.append(.drawIfDecoded(missed, at: now))
    }
    return finish(effects)
  }
}
