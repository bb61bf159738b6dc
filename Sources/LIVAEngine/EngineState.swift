import LIVAProtocol

/// The engine's whole mutable state. A value, so the debug step mode can keep snapshots.
struct EngineState: Sendable {
  /// Timestamps within this of a frame slot count as on it (float rounding of 1/30 sums).
  static let epsilon = 1e-6
  /// Slots a frame outside speech that could not be presented is shown again before the base
  /// track moves on without it (see ``LIVAEngine/frameNotPresented(_:)``).
  static let missedFrameRetries = 2

  struct Cursor: Hashable, Sendable {
    var animation: AnimationName
    var index: Int
    /// Played backwards (toward frame 0, from its end pose back to its start pose).
    var reversed = false
  }

  /// One animation of a planned walk, played forwards or backwards. Playing an animation
  /// backwards is as continuous as playing it forwards (neighbouring frames), and it is the
  /// short way back from early in an animation: 0.3 s into speech, the way to idle is back
  /// through the transition just played, not forward through the talking loop and the return.
  struct Leg: Hashable, Sendable {
    var animation: AnimationName
    var reversed = false
  }

  struct QueuedChunk: Sendable {
    let id: ChunkID
    let frames: [PlannedFrame]
    var imagesComplete: Bool
    /// Its first frame was sent ahead: a shorter start timeout (``ChunkPlan/startsOnFirstFrame``).
    var startsOnFirstFrame = false
    /// When the chunk first could have started (for the start timeout).
    var waitingSince: Double?

    var keys: Set<String> { Set(frames.lazy.flatMap(\.layers).map(\.key)) }
  }

  struct PlayingChunk: Sendable {
    var chunk: QueuedChunk
    /// The last overlay frame consumed (drawn or skipped); -1 before the first.
    var consumed = -1
    var audioStarted = false
    /// A mouth of this chunk was not ready after the hold cap: later unready mouths are drawn
    /// without waiting (the base frame and the audio go on) until one is ready again.
    var overdue = false
    var report: ChunkReport

    init(chunk: QueuedChunk) {
      self.chunk = chunk
      self.report = ChunkReport(id: chunk.id, frames: chunk.frames.count)
    }
  }

  /// An overlay frame that is in the picture (shown, maybe not drawn yet).
  struct ShownOverlay: Sendable {
    var chunk: ChunkID
    var index: Int
    var frame: PlannedFrame
  }

  enum Target: Hashable, Sendable {
    case speech
    case animation(AnimationName)
  }

  struct MessageState: Sendable {
    let id: MessageID
    var audioEnded = false
    var speaking = false
  }

  /// A wait at a chunk boundary past the grace: the frame the chunk ended on, which way the
  /// body moves now, and when it last moved.
  struct BoundaryWait: Sendable {
    var anchor: Cursor
    var step: Int
    var lastMove: Double
  }

  struct HoldTrack: Sendable {
    var kind: HoldReason.Kind
    var since: Double
    var counted: Int
  }

  /// The base track: the animation graph, the mode, where the body is and the walk ahead.
  struct BaseTrack: Sendable {
    var graph: AnimationGraph
    var mode: EngineMode = .waiting
    var target: Target?
    var cursor: Cursor?
    var baseQueue: [Leg] = []
    var modeSince = 0.0
    /// Base animations asked for (``LIVAEngine/requestAnimation(_:)``), oldest first.
    var requests: [AnimationName] = []
  }

  /// The picture: what is in it, what was last drawn, and why it holds.
  struct Picture: Sendable {
    var shown: ShownOverlay?
    var lastDrawn: DrawnFrame?
    var needsDraw = false
    var skippedSinceDraw = false
    var lastHold: HoldReason?
    var hold: HoldTrack?
    /// A frame outside speech the owner could not put on screen (its base frame was not in
    /// memory), and how many of its slots passed since: the base track shows it again instead
    /// of skipping it (a pop), at most ``EngineState/missedFrameRetries`` more slots.
    var notPresented: (frame: Cursor, slots: Int)?
  }

  /// The frame clock: display ticks in, frame slots out, or the audio's clock while it drives.
  struct FrameClock: Sendable {
    var lastTick: Double?
    /// The frame clock's phase is not set yet (first tick, after a resume): the next tick with
    /// a delta adds half a tick period, so frame slots fall between display ticks and tick
    /// jitter never moves a frame to the next tick. While the audio clock drives, the phase is
    /// the audio's (read half a tick ahead by the player).
    var phasePending = true
    /// The display's tick period, smoothed (nil before the second tick).
    var tickPeriod: Double?
    var accumulator = 0.0
    var clock = 0.0
    var audio: AudioClock?
    var paused = false
  }

  /// The speech queue: the open message, the chunk playing, those waiting, and their images.
  struct SpeechQueue: Sendable {
    /// The last message begun: a plan of it after it closed reopens it.
    var lastMessage: MessageID?
    var message: MessageState?
    var playing: PlayingChunk?
    var queue: [QueuedChunk] = []
    var boundarySince: Double?
    var boundaryWait: BoundaryWait?
    var readyKeys: Set<String> = []
    /// Images that will not come from the requests made so far (decode failed, rejected,
    /// shed): their mouths are drawn without waiting. A later ``imageReady`` of the key clears
    /// it.
    var failedKeys: Set<String> = []
    /// Images received and still decoding: waited for even in a chunk whose images were all
    /// sent.
    var inFlightKeys: Set<String> = []
    /// The frame clock when bytes of the link last arrived (``LIVAEngine/linkDelivered()``).
    var lastDelivery: Double?
  }

  var base: BaseTrack
  var picture = Picture()
  var frameClock = FrameClock()
  var speech = SpeechQueue()

  var metrics = EngineMetrics()
  var out: [EngineAction] = []

  init(graph: AnimationGraph) {
    self.base = BaseTrack(graph: graph)
  }

  mutating func takeActions() -> [EngineAction] {
    defer { out = [] }
    return out
  }

  func rate(_ configuration: EngineConfiguration) -> Double {
    switch base.mode {
    case .idle, .waiting: configuration.idleFPS
    default: configuration.speakingFPS
    }
  }

  mutating func setMode(_ newMode: EngineMode) {
    guard newMode != base.mode else { return }
    base.mode = newMode
    base.modeSince = frameClock.clock
    out.append(.modeChanged(newMode))
  }

  mutating func warn(
    _ code: EngineWarning.Code, _ message: String, chunk: ChunkID? = nil, frame: Int? = nil,
    protocolIssue: Bool = false
  ) {
    if protocolIssue { metrics.protocolWarnings += 1 }
    out.append(.warning(EngineWarning(code, message, chunk: chunk, frame: frame)))
  }

  // MARK: - Picture

  /// Puts a base frame (and maybe an overlay frame) in the picture. A frame put there and
  /// replaced before it was drawn is counted as passed over.
  mutating func show(
    _ animation: AnimationName, _ index: Int, overlay: ShownOverlay? = nil, reversed: Bool = false
  ) {
    if picture.needsDraw {
      picture.skippedSinceDraw = true
      if picture.shown != nil {
        metrics.lateFrames += 1
        speech.playing?.report.late += 1
      } else {
        metrics.skippedBaseFrames += 1
      }
    }
    base.cursor = Cursor(animation: animation, index: index, reversed: reversed)
    picture.shown = overlay
    picture.needsDraw = true
    picture.hold = nil
  }

  /// Records a hold at the current clock, counting it once per frame slot, and returns how
  /// many consecutive slots this hold has lasted.
  @discardableResult
  mutating func noteHold(_ reason: HoldReason, _ configuration: EngineConfiguration) -> Int {
    picture.lastHold = reason
    let kind = reason.kind
    if picture.hold?.kind != kind {
      picture.hold = HoldTrack(kind: kind, since: frameClock.clock, counted: 0)
    }
    guard var track = picture.hold else { return 0 }
    let slots =
      Int(
        ((frameClock.clock - track.since) * rate(configuration) + EngineState.epsilon).rounded(
          .down))
      + 1
    if slots > track.counted {
      metrics.holds[kind, default: 0] += slots - track.counted
      track.counted = slots
    }
    picture.hold = track
    return slots
  }

  /// Whether `next` continues `previous` on screen: the same or a neighbouring frame of the
  /// same animation (forwards or backwards), or one key pose shared by both (the end or start
  /// frame of one animation, then the start or end frame of another at that pose).
  func isContinuous(from previous: DrawnFrame, to next: Cursor) -> Bool {
    isContinuous(from: Cursor(animation: previous.animation, index: previous.index), to: next)
  }

  /// ``isContinuous(from:to:)`` between two cursors.
  func isContinuous(from previous: Cursor, to next: Cursor) -> Bool {
    if previous.animation == next.animation && abs(next.index - previous.index) <= 1 {
      return true
    }
    guard let pose = keyPose(previous.animation, previous.index),
      let nextPose = keyPose(next.animation, next.index)
    else { return false }
    return pose == nextPose
  }

  /// The key pose frame `index` of `animation` shows, when it is its first or last frame.
  func keyPose(_ animation: AnimationName, _ index: Int) -> KeyPose? {
    if index == 0 { return animation.from }
    if let count = base.graph.frameCount(of: animation), index == count - 1 { return animation.to }
    return nil
  }

  mutating func drawIfNeeded(_ configuration: EngineConfiguration) -> FramePlan {
    guard picture.needsDraw, let cursor = base.cursor else {
      if base.cursor == nil { noteHold(.noBaseAnimation, configuration) }
      return .hold(picture.lastHold ?? .notDue)
    }
    let frame = DrawnFrame(
      animation: cursor.animation, index: cursor.index, overlays: picture.shown?.frame.layers ?? [],
      chunk: picture.shown?.chunk, overlayIndex: picture.shown?.index, mode: base.mode)
    if let previous = picture.lastDrawn, !picture.skippedSinceDraw,
      !isContinuous(from: previous, to: cursor)
    {
      metrics.pops += 1
    }
    metrics.framesDrawn += 1
    if let shown = picture.shown {
      if !shown.frame.layers.isEmpty { metrics.overlayFramesDrawn += 1 }
      if speech.playing?.chunk.id == shown.chunk { speech.playing?.report.drawn += 1 }
      if !shown.frame.isContinuation,
        resolvedIndex(of: shown.frame) != cursor.index || shown.frame.animation != cursor.animation
      {
        metrics.desyncs += 1
      }
      startAudioIfNeeded(for: shown, configuration)
    }
    picture.lastDrawn = frame
    picture.needsDraw = false
    picture.skippedSinceDraw = false
    return .draw(frame)
  }

  private mutating func startAudioIfNeeded(
    for shown: ShownOverlay, _ configuration: EngineConfiguration
  ) {
    guard var playing = speech.playing, playing.chunk.id == shown.chunk, !playing.audioStarted
    else { return }
    playing.audioStarted = true
    self.speech.playing = playing
    metrics.chunksStarted += 1
    if speech.message?.id == shown.chunk.message, speech.message?.speaking == false {
      speech.message?.speaking = true
      out.append(.speakingStarted(shown.chunk.message))
    }
    out.append(.startAudio(shown.chunk, offset: Double(shown.index) / configuration.speakingFPS))
  }

  /// The base frame index an overlay frame is drawn on: as is when in range, wrapped when
  /// beyond the animation's frame count; nil when negative or the animation is missing.
  func resolvedIndex(of frame: PlannedFrame) -> Int? {
    guard frame.baseFrame >= 0, let count = base.graph.frameCount(of: frame.animation) else {
      return nil
    }
    return frame.baseFrame < count ? frame.baseFrame : frame.baseFrame % count
  }

  // MARK: - One frame slot

  mutating func step(_ configuration: EngineConfiguration) {
    switch base.mode {
    case .waiting:
      if let idle = idleStartAnimation(configuration) {
        setMode(.idle)
        show(idle, 0)
      } else if !speech.queue.isEmpty, isStartable(0, configuration) {
        startSpeech(configuration)
      } else {
        noteHold(.noBaseAnimation, configuration)
      }
    case .talking:
      guard let playing = speech.playing else {
        endSpeech(configuration)
        return
      }
      advanceSpeech(to: playing.consumed + 1, configuration)
    case .idle, .transition, .finishing, .returning, .animation:
      baseStep(configuration)
    }
  }

  func idleStartAnimation(_ configuration: EngineConfiguration) -> AnimationName? {
    let pose = configuration.idlePose
    return base.graph.loop(at: KeyPose(pose, .start)) ?? base.graph.loop(at: KeyPose(pose, .end))
      ?? base.graph.animations.first { $0.from.pose == pose }
  }
}
