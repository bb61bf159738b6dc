import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Logging

/// Every decision of the player, as a value: events, ticks and decode results in, ``Effect``s
/// out. No clock, no locks, no I/O: time comes in as an argument, and the owner (``LIVAPlayer``)
/// carries out the effects in order, outside its lock.
///
/// It holds the engine, the speech session (message identity, each held chunk's audio and
/// image keys), the decode window of mouths, and the metrics. The same inputs always give the same effects, so generated sessions
/// run through it on a virtual clock.
public struct PlayerCore: Sendable {
  /// What the owner must do, in order.
  public enum Effect: Sendable, Equatable {
    /// Decode these images (content-addressed: they belong to no message until claimed).
    case decode([EncodedOverlay], chunk: Int)
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
    /// outcome with ``rendered(_:sinceStart:)``. `firstFrame`: nothing was presented yet, so
    /// the owner may read the base frame inline rather than hold on a miss.
    case draw(DrawnFrame, at: Double, firstFrame: Bool)
    /// Present this frame if its base frame is in memory now (a frame without speech that was
    /// due while it was not); nothing otherwise (and nothing to report).
    case drawIfDecoded(DrawnFrame, at: Double)
    /// Ask the base-frame store for the window ahead (``window(budget:)``).
    case updateWindow
    /// Tell the app's observer.
    case notify(EngineAction)
    /// Write a log line.
    case log(Logger.Level, String, [String: String])
  }

  /// The engine.
  public private(set) var engine: LIVAEngine
  /// Message identity and each held chunk's audio and image keys.
  private var session: SpeechSession
  /// The connection is down: what still arrives was received before the drop.
  private var offline = false
  /// The last tick's time.
  public private(set) var lastTick: Double?
  /// Bytes of one decoded base frame, once one was drawn.
  public private(set) var frameBytes: Int?
  /// A frame without speech whose base frame was not in memory when it was due.
  private var missed: DrawnFrame?
  private var drawsSinceWindow = 0
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
  private var mouths: MouthDecodeWindow
  /// `play_base_animation` requests for animations not downloaded yet, oldest first.
  private var deferredRequests: [(name: AnimationName, at: Double)] = []
  /// How long a request for an animation not downloaded yet waits for it, in seconds.
  public static let deferredRequestLifetime = 10.0
  /// The most requests that wait for their animation at once; the oldest goes first.
  public static let deferredRequestLimit = 4
  private var accounting = PlayerMetrics()
  private let expectedTickRate: Double
  private let speakingFPS: Double

  /// Creates a core with the engine's tuning; `baseFrameBudget` is the bytes of decoded base
  /// frames its window ahead is planned with (it decides how often the window is refreshed);
  /// `overlayBudget` the bytes of decoded mouths of chunks not yet played it has decoded at
  /// once (the overlay store's bytes less its played images'), and `encodedOverlayBudget` the
  /// bytes of encoded mouths it holds back meanwhile.
  public init(
    engine configuration: EngineConfiguration = EngineConfiguration(),
    freezeThreshold: Double = 0.1, expectedTickRate: Double = 60,
    baseFrameBudget: Int = 32 << 20, overlayBudget: Int = 60 << 20,
    encodedOverlayBudget: Int = 64 << 20, reservedFrames: Int = 0
  ) {
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
  public private(set) var generation = 0

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
    return receive(event, fromLostConnection: fromLostConnection)
  }

  private mutating func receive(_ event: ServerEvent, fromLostConnection: Bool) -> [Effect] {
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
    return effects + [.updateWindow]
  }

  /// Counts the problems a tolerant decode of an event noted.
  public mutating func noteIssues(_ issues: [LIVAProtocolError]) {
    for issue in issues {
      accounting.rejections["\(issue.scope.rawValue).\(issue.code)", default: 0] += 1
    }
  }

  /// Counts an event that failed validation.
  public mutating func noteRejectedEvent(_ error: LIVAProtocolError?) {
    accounting.rejectedEvents += 1
    if let error { accounting.rejections["event.\(error.code)", default: 0] += 1 }
  }

  /// The connection is gone: what was received plays out, then the avatar returns to idle.
  public mutating func connectionLost() -> [Effect] {
    let actions = session.connectionLost()
    offline = true
    engine.connectionLost()
    return perform(actions)
  }

  /// The connection is back.
  public mutating func connectionRestored() {
    offline = false
    session.connectionRestored()
  }

  /// Bytes of the backend's link arrived since the last tick (``LIVAEngine/linkDelivered()``).
  public mutating func linkDelivered() { engine.linkDelivered() }

  /// Interrupts the current message (from the app).
  public mutating func interrupt() -> [Effect] {
    session.interrupt()
    generation += 1
    return perform(engine.interrupt(), at: lastTick ?? 0) + [.updateWindow]
  }

  /// Pauses picture and audio.
  public mutating func pause() -> [Effect] { perform(engine.pause(), at: lastTick ?? 0) }

  /// Resumes after ``pause()``.
  public mutating func resume() -> [Effect] {
    perform(engine.resume(), at: lastTick ?? 0) + [.updateWindow]
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
    return perform(engine.requestAnimation(animation), at: lastTick ?? 0) + [.updateWindow]
  }

  /// Debug step mode: one frame slot forward.
  public mutating func stepForward() -> (frame: DrawnFrame?, effects: [Effect]) {
    let result = engine.stepForward()
    var effects = perform(result.actions, at: lastTick ?? 0)
    guard case .draw(let frame) = result.plan else { return (nil, effects) }
    effects.append(.draw(frame, at: lastTick ?? 0, firstFrame: !hasPresented))
    return (frame, effects)
  }

  /// Debug step mode: one ``stepForward()`` back.
  public mutating func stepBackward() -> DrawnFrame? { engine.stepBackward() }

  // MARK: - Images

  /// An image is decoded and stored.
  public mutating func imageReady(_ key: String) { engine.imageReady(key) }

  /// An image failed to decode, or was shed: its mouth is lost.
  public mutating func imageFailed(_ key: String, shed: Bool) {
    if shed { accounting.shedImages += 1 } else { accounting.failedImages += 1 }
    engine.imageFailed(key)
  }

  /// Images left the store; returns how many a queued chunk still needed (counted in
  /// ``PlayerMetrics/evictedQueuedImages``: their mouths are lost unless they come again).
  @discardableResult
  public mutating func imagesRemoved(_ keys: [String]) -> Int {
    for key in keys { engine.imageEvicted(key) }
    let needed = keysStillUsed
    let lost = keys.filter { needed.contains($0) && mouths.isDecoding($0) }.count
    accounting.evictedQueuedImages += lost
    return lost
  }

  // MARK: - Ticks

  /// One display tick at `now`, with the audio clock read for it.
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
      effects.append(.draw(frame, at: now, firstFrame: !hasPresented))
      // Refreshed once a quarter of its reach is drawn, so it always reaches three quarters of
      // it ahead: every few frames at 512×512 (22 frames ahead), every frame at 1280×768 (4).
      let reach = BaseFrameWindow.reach(
        capacity: BaseFrameWindow.capacity(
          budget: baseFrameBudget, frameBytes: frameBytes, reserved: reservedFrames))
      if drawsSinceWindow % max(1, reach / 4) == 0 { effects.append(.updateWindow) }
      drawsSinceWindow += 1
    } else if case .hold(.notDue) = result.plan, let missed {
      effects.append(.drawIfDecoded(missed, at: now))
    }
    return effects
  }

  /// What became of a ``Effect/draw(_:at:firstFrame:)`` (or of a frame drawn when it was
  /// decoded): the one report the owner makes per frame.
  public enum RenderOutcome: Sendable {
    /// Presented. `audioPosition`: its chunk's audio position at that time (nil outside
    /// speech or when that chunk's audio is not playing); `frameBytes`: the base frame's size.
    case presented(DrawnFrame, at: Double, audioPosition: Double?, frameBytes: Int)
    /// Not drawn: its base frame was not in memory.
    case baseFrameMissing(DrawnFrame, at: Double)
    /// Not drawn: one of its overlays had left the store.
    case overlayMissing(at: Double)
  }

  /// The owner's report on a frame it was asked to draw. `sinceStart`: wall-clock seconds
  /// since the player was made (read for the first frame only).
  public mutating func rendered(_ outcome: RenderOutcome, sinceStart: @autoclosure () -> Double)
    -> [Effect]
  {
    switch outcome {
    case .presented(let frame, let time, let audioPosition, let bytes):
      frameBytes = bytes
      missed = nil
      engine.framePresented()
      accounting.framesPresented += 1
      accounting.freezes.presented(at: time)
      if accounting.timeToFirstFrame == nil { accounting.timeToFirstFrame = sinceStart() }
      if let audioPosition, let index = frame.overlayIndex, !frame.overlays.isEmpty {
        accounting.lipSync.record(audioPosition - Double(index) / speakingFPS)
      }
      return []
    case .baseFrameMissing(let frame, let time):
      accounting.baseFrameMisses += 1
      accounting.freezes.held(at: time, cause: .baseFrameMiss)
      missed = frame.chunk == nil ? frame : nil
      // Outside speech the engine shows it again at its next slot rather than skipping it.
      engine.frameNotPresented(frame)
      return [
        .log(
          .debug, "base frame not in memory: held",
          ["frame": "\(frame.animation)#\(frame.index)"]),
        .updateWindow,
      ]
    case .overlayMissing(let time):
      accounting.overlayMisses += 1
      accounting.freezes.held(at: time, cause: .overlayMiss)
      return []
    }
  }

  /// Whether a frame was presented yet.
  public var hasPresented: Bool { accounting.framesPresented > 0 }

  /// Records the longest time one tick took (wall clock, measured by the owner).
  public mutating func noteRenderStall(_ seconds: Double) {
    accounting.longestRenderStall = max(accounting.longestRenderStall, seconds)
  }

  // MARK: - Carrying out decisions

  private mutating func perform(_ commands: [SpeechSession.Command]) -> [Effect] {
    var effects: [Effect] = []
    // Claimed before anything else: a message these commands begin interrupts the one before,
    // and that must not drop images the new chunks share with it.
    for case .enqueue(let plan, _) in commands {
      let keys = Set(plan.frames.flatMap(\.layers).map(\.key))
      if !keys.isEmpty { effects.append(.claim(keys, message: plan.message)) }
    }
    for command in commands {
      switch command {
      case .begin(let message):
        generation += 1
        effects += perform(engine.begin(message), at: lastTick ?? 0)
      case .enqueue(let plan, let audio):
        effects += enqueue(plan, audio: audio)
      case .imagesSent(let id, let ahead):
        guard session.credits(id, ahead: ahead, knows: engine.knowsImage) else {
          accounting.staleEvents += 1
          effects.append(
            .log(
              .info, "[LIVA] chunk_images_ready before any of its chunk's images: ignored",
              ["chunk": "\(id)"]))
          continue
        }
        if engine.currentMessage == id.message { engine.chunkImagesComplete(chunkIndex: id.index) }
      case .audioEnded:
        engine.audioEnded()
        // The message will finish instead of waiting for a next chunk: a path the window
        // (planned while it waited) did not hold. Its first frame may be due at the next tick.
        effects.append(.updateWindow)
      case .decode(let overlays, _):
        engine.imagesInFlight(overlays.map(\.key))
        effects += receiveImages(overlays)
      case .imagesFailed(let keys):
        accounting.failedImages += keys.count
        for key in keys { engine.imageFailed(key) }
      case .dropped(let event, let chunk, let reason):
        switch reason {
        case .stale: accounting.staleEvents += 1
        case .duplicate: accounting.duplicateEvents += 1
        case .orphan: accounting.orphanChunks += 1
        }
        effects.append(
          .log(
            .info, "[LIVA] speech event dropped",
            [
              "event": event, "chunk": chunk.map(String.init) ?? "-", "reason": reason.rawValue,
            ]))
      case .framesRejected(let code, let count, let chunk):
        accounting.rejections["frame.\(code)", default: 0] += count
        effects.append(
          .log(
            .warning, "[LIVA] frames without a place for their mouth: drawn without it",
            ["code": code, "frames": "\(count)", "chunk": "\(chunk)"]))
      }
    }
    return effects
  }

  private mutating func enqueue(_ plan: ChunkPlan, audio data: Data?) -> [Effect] {
    let chunkKeys = ChunkKeys(plan, startFrames: engine.configuration.startThresholdFrames)
    let keys = Set(chunkKeys.ordered)
    var effects: [Effect] = []
    let actions = engine.enqueue(plan)
    var queued: [ChunkID] = []
    for case .chunkQueued(let id) in actions {
      queued.append(id)
      session.queued(id, keys: chunkKeys, audio: data)
    }
    if queued.isEmpty, !keys.isEmpty {
      // Not taken (a re-send, or stale): its claims go, unless a queued chunk has them.
      effects.append(.release(keys.subtracting(keysStillUsed), message: plan.message))
    }
    // Received before the drop but handled after it: its message cannot continue either.
    if offline { engine.connectionLost() }
    let now = lastTick ?? 0
    effects += perform(actions, at: now)
    if let data, !data.isEmpty {
      for id in queued { effects.append(.prepareAudio(id, data, at: now)) }
    }
    if !queued.isEmpty {
      let orphans = mouths.planQueued(claimed: keysStillUsed)
      if orphans > 0 {
        effects.append(
          .log(.info, "[LIVA] overlay images no plan claimed: let go", ["images": "\(orphans)"]))
      }
    }
    effects += admitDecodes()
    effects.append(.updateWindow)
    return effects
  }

  // MARK: - The decode window of mouths

  /// Keeps received images waiting encoded (see ``MouthDecodeWindow``); one beyond
  /// ``encodedOverlayBudget`` is shed (its mouth lost, logged).
  private mutating func receiveImages(_ overlays: [EncodedOverlay]) -> [Effect] {
    var effects: [Effect] = []
    let shed = mouths.receive(overlays)
    if !shed.isEmpty {
      accounting.failedImages += shed.count
      for key in shed { engine.imageFailed(key) }
      effects.append(
        .log(
          .warning, "[LIVA] overlay images shed: more held back than the budget",
          ["images": "\(shed.count)", "budget": "\(encodedOverlayBudget)"]))
    }
    return effects + admitDecodes()
  }

  /// Sends the images whose turn it is to be decoded (see ``MouthDecodeWindow``).
  private mutating func admitDecodes() -> [Effect] {
    let batch = mouths.admit(chunks: session.chunkKeys)
    guard let first = batch.first else { return [] }
    // The chunk of the batch's first image, for logs (-1: no plan claimed it yet).
    return [.decode(batch, chunk: session.chunkIndex(drawing: first.key) ?? -1)]
  }

  private var keysStillUsed: Set<String> { session.keysStillUsed }

  private mutating func perform(_ actions: [EngineAction], at now: Double) -> [Effect] {
    var effects: [Effect] = []
    for action in actions {
      switch action {
      case .startAudio(let id, let offset):
        if let data = session.audio(for: id) {
          effects.append(.startAudio(id, data, offset: offset, at: now, generation: generation))
        } else {
          effects.append(.log(.warning, "[LIVA] no audio for chunk", ["chunk": "\(id)"]))
        }
      case .stopAudio(let id):
        effects.append(.stopAudio(id, at: now))
      case .pauseAudio:
        effects.append(.pauseAudio(at: now))
      case .resumeAudio:
        effects.append(.resumeAudio(at: now))
      case .evictImages(let message, _):
        let dropped = session.dropped(message)
        mouths.forget(dropped.subtracting(keysStillUsed))
        effects += admitDecodes()
        // Its images are content: decodes under way go on (the next message may show the
        // same mouths), and what only it claimed is the first to go when room is needed.
        effects.append(.evict(message))
      case .chunkFinished(let report):
        let keys = session.finished(report.id)
        accounting.chunkReports.append(report)
        if accounting.chunkReports.count > 1_000 { accounting.chunkReports.removeFirst() }
        // Played: its images go first when room is needed, or at a purge.
        let used = keysStillUsed
        let released = keys.subtracting(used)
        if !released.isEmpty { effects.append(.release(released, message: report.id.message)) }
        // Played, or sent to decode and claimed by no chunk still queued (no plan came for
        // them): their room in the window is free.
        mouths.chunkFinished(claimed: used)
        effects += admitDecodes()
        effects.append(
          .log(
            .debug, "chunk finished",
            [
              "chunk": "\(report.id)", "drawn": "\(report.drawn)", "skipped": "\(report.skipped)",
              "late": "\(report.late)",
            ]))
      case .warning(let warning) where warning.code == .mouthLost:
        effects.append(.log(.debug, "\(warning)", [:]))
      case .warning(let warning):
        effects.append(.log(.warning, "[LIVA] \(warning.message)", ["code": "\(warning.code)"]))
      case .chunkQueued, .speakingStarted, .speakingEnded, .modeChanged:
        effects.append(.log(.trace, "engine", ["action": "\(action)"]))
      }
      effects.append(.notify(action))
    }
    return effects
  }
}
