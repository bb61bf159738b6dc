import LIVAProtocol

/// The playback engine: decides, on every display tick, which base frame and which mouth
/// overlays the avatar shows, and tells its owner when to start and stop chunk audio.
///
/// A pure state machine: no clock, no threads, no I/O, no logging. Time comes in as the
/// argument of ``tick(now:audio:)``; everything else comes in through `mutating` input methods
/// that return the ``EngineAction``s the owner must carry out. The same inputs always produce
/// the same outputs, so tests drive it with explicit timestamps.
///
/// See the "Engine state machine" article for the modes and their edges.
public struct LIVAEngine: Sendable {
  /// The tuning this engine was created with.
  public let configuration: EngineConfiguration
  var state: EngineState
  private var history: [EngineState] = []

  /// Creates an engine with the animations available now (name → frame count).
  public init(configuration: EngineConfiguration = .init(), animations: [AnimationName: Int] = [:])
  {
    self.configuration = configuration
    self.state = EngineState(graph: AnimationGraph(frameCounts: animations))
  }

  // MARK: - Reading

  /// The current mode.
  public var mode: EngineMode { state.base.mode }
  /// Quality accounting so far.
  public var metrics: EngineMetrics { state.metrics }
  /// The graph of the animations available now.
  public var graph: AnimationGraph { state.base.graph }
  /// Whether ticks are paused.
  public var isPaused: Bool { state.frameClock.paused }
  /// The open message (chunks of it may still come), if any.
  public var currentMessage: MessageID? { state.speech.message?.id }
  /// The chunk whose overlays are playing, if any.
  public var playingChunk: ChunkID? { state.speech.playing?.chunk.id }
  /// Chunks accepted and not yet started, in playback order.
  public var queuedChunks: [ChunkID] { state.speech.queue.map(\.id) }
  /// Play-animation requests waiting for the avatar to be idle, oldest first.
  public var pendingAnimationRequests: [AnimationName] { state.base.requests }
  /// The last frame drawn, i.e. what is on screen.
  public var lastDrawnFrame: DrawnFrame? { state.picture.lastDrawn }

  /// Describes the frame on screen: mode, base animation and index, overlay keys, chunk and
  /// frame, and the last hold reason.
  public func describe() -> FrameDescription {
    FrameDescription(
      mode: state.base.mode, frame: state.picture.lastDrawn, holdReason: state.picture.lastHold)
  }

  // MARK: - Inputs

  /// Replaces the set of base animations that can be drawn now (name → frame count).
  public mutating func setAvailableAnimations(_ frameCounts: [AnimationName: Int]) {
    state.base.graph = AnimationGraph(frameCounts: frameCounts)
  }

  /// The owner could not present `frame`: its base frame was not in memory. Outside speech
  /// the base track shows the frame again at its next slots (at most 2 more) instead of moving
  /// on without it, which would jump the body by a frame; a speech frame is not waited for
  /// (the audio goes on, and the lips with it).
  public mutating func frameNotPresented(_ frame: DrawnFrame) {
    // Only the frame the base track is on, and only once: a repeated miss keeps its count.
    guard frame.chunk == nil, frame.mode != .talking, let current = state.base.cursor,
      current.animation == frame.animation, current.index == frame.index,
      state.picture.notPresented?.frame != current
    else { return }
    state.picture.notPresented = (current, 0)
  }

  /// The owner presented a frame: nothing missed is waited for any more.
  public mutating func framePresented() {
    state.picture.notPresented = nil
  }

  /// Tells the engine that the image with this content key is decoded and can be drawn.
  public mutating func imageReady(_ key: String) {
    state.speech.readyKeys.insert(key)
    state.speech.failedKeys.remove(key)
    state.speech.inFlightKeys.remove(key)
  }

  /// Whether the image with this key was received: decoded, decoding, or failed.
  public func knowsImage(_ key: String) -> Bool {
    state.speech.readyKeys.contains(key) || state.speech.inFlightKeys.contains(key)
      || state.speech.failedKeys.contains(key)
  }

  /// Tells the engine that these images were received and are being decoded: a frame that
  /// needs one waits for it (up to the hold cap) even once its chunk's images were all sent.
  /// ``imageReady(_:)`` or ``imageFailed(_:)`` ends the wait.
  public mutating func imagesInFlight(_ keys: some Sequence<String>) {
    for key in keys where !state.speech.readyKeys.contains(key) {
      state.speech.inFlightKeys.insert(key)
    }
  }

  /// Tells the engine that these images are decoded and can be drawn.
  public mutating func imagesReady(_ keys: some Sequence<String>) {
    for key in keys { imageReady(key) }
  }

  /// Tells the engine that an image is no longer available (evicted from the owner's store).
  public mutating func imageEvicted(_ key: String) {
    state.speech.readyKeys.remove(key)
  }

  /// Tells the engine that an image will not come from what was received: its decode failed,
  /// it was rejected, or it was shed. Frames that need it are drawn on their base frame without
  /// it, at their time, instead of holding the picture; their chunk's audio plays as planned.
  public mutating func imageFailed(_ key: String) {
    state.speech.inFlightKeys.remove(key)
    guard !state.speech.readyKeys.contains(key) else { return }
    state.speech.failedKeys.insert(key)
  }

  /// Bytes of the backend's link arrived since the last tick: the owner calls this on a tick
  /// when its transport's byte count moved. While it does, speech waits for what is still
  /// coming (``EngineConfiguration/deliveryQuiet``).
  public mutating func linkDelivered() {
    state.speech.lastDelivery = state.frameClock.clock
  }

  /// The connection to the backend is gone: the open message can get no more chunks or images.
  /// What was received plays out (audio and the mouths that are decoded), then the avatar
  /// returns to idle through the graph, without holding for a chunk that cannot come.
  public mutating func connectionLost() {
    state.connectionLost()
  }

  /// Every image of the open message's chunk `chunkIndex`, queued or playing, has been sent
  /// (`chunk_images_ready`). An image not ready then will not come unless it is in flight
  /// (``imagesInFlight(_:)``): the chunk may start with fewer than the threshold frames ready,
  /// waiting only for first frames whose images are still decoding, and a frame whose image is
  /// neither ready nor in flight is drawn without it at once instead of held. The owner says it
  /// once the chunk is enqueued (it keeps one that comes before).
  public mutating func chunkImagesComplete(chunkIndex: Int) {
    if let position = state.speech.queue.firstIndex(where: { $0.id.index == chunkIndex }) {
      state.speech.queue[position].imagesComplete = true
    } else if state.speech.playing?.chunk.id.index == chunkIndex {
      state.speech.playing?.chunk.imagesComplete = true
    }
  }

  /// `audio_end`: no more chunks will come for the current message; after its last chunk the
  /// engine returns to idle without waiting.
  public mutating func audioEnded() {
    guard state.speech.message != nil else { return }
    state.speech.message?.audioEnded = true
    if state.speech.playing == nil && state.speech.queue.isEmpty && state.base.mode != .talking {
      state.closeMessage()
    }
  }

  /// A new message (numbered by the owner): whatever plays or is queued of the one before is
  /// dropped (its audio stopped, its images evicted), even if the new one brings no chunk, and
  /// the plans enqueued next are this message's.
  public mutating func begin(_ message: MessageID) -> [EngineAction] {
    state.out = []
    state.begin(message, configuration)
    return state.takeActions()
  }

  /// Accepts a chunk's plan of the message begun (``begin(_:)``), queued in index order. The
  /// owner decides what belongs to a message (re-sends, stale chunks, their order): the engine
  /// trusts it, and rejects with a warning only what it cannot play (no frames, a negative
  /// index, a message not begun). After the message closed on ``audioEnded()``, a plan of it
  /// reopens it (the owner took the `audio_end` back). Negative frame numbers are flagged now
  /// and, when reached, drawn without a mouth on the next frame of the animation on screen.
  public mutating func enqueue(_ plan: ChunkPlan) -> [EngineAction] {
    state.out = []
    state.enqueue(plan, configuration)
    return state.takeActions()
  }

  /// Drops every queued and playing chunk (stop-audio and evict actions), and returns to idle
  /// through the graph. No overlay of the interrupted message is drawn after this call.
  public mutating func interrupt() -> [EngineAction] {
    state.out = []
    state.interrupt(configuration)
    if state.speech.message != nil { state.closeMessage() }
    return state.takeActions()
  }

  /// Asks for a base animation (e.g. `hi_1_s_hi_1_e`) to be played when the avatar is idle,
  /// with transitions in and out. Unavailable animations are dropped with a warning.
  public mutating func requestAnimation(_ name: AnimationName) -> [EngineAction] {
    state.out = []
    state.request(name, configuration)
    return state.takeActions()
  }

  /// Pauses: ticks hold the picture and time stops. Pauses the playing audio.
  public mutating func pause() -> [EngineAction] {
    guard !state.frameClock.paused else { return [] }
    state.frameClock.paused = true
    if let playing = state.speech.playing, playing.audioStarted {
      return [.pauseAudio(playing.chunk.id)]
    }
    return []
  }

  /// Resumes after ``pause()``: the next tick has delta 0, so nothing jumps. Resumes the audio.
  public mutating func resume() -> [EngineAction] {
    guard state.frameClock.paused else { return [] }
    state.frameClock.paused = false
    state.frameClock.lastTick = nil
    state.frameClock.phasePending = true
    history.removeAll()
    if let playing = state.speech.playing, playing.audioStarted {
      return [.resumeAudio(playing.chunk.id)]
    }
    return []
  }

  /// Advances to `now` (seconds on any monotonic clock) and decides the picture.
  ///
  /// - Parameters:
  ///   - now: the display time of this tick. The first tick has delta 0; a negative delta is
  ///     treated as 0; after a stall the frame clock catches up at most
  ///     ``EngineConfiguration/maxCatchUpFrames`` frames.
  ///   - audio: where the playing chunk's audio is, if the owner knows. While it is given for
  ///     the playing chunk, the overlay index follows it (`floor(position × fps)`); otherwise
  ///     the frame clock drives.
  public mutating func tick(now: Double, audio: AudioClock? = nil) -> TickResult {
    state.out = []
    state.picture.lastHold = nil
    guard !state.frameClock.paused else {
      state.picture.lastHold = .paused
      return TickResult(plan: .hold(.paused), actions: [])
    }
    let delta = state.frameClock.lastTick.map { max(0, now - $0) } ?? 0
    if delta > 0 && delta <= 0.25 {
      // The display's tick period, smoothed over jitter: it sets the frame clock's phase.
      state.frameClock.tickPeriod =
        state.frameClock.tickPeriod.map { $0 + (delta - $0) / 8 } ?? delta
    }
    state.frameClock.lastTick = now
    state.frameClock.clock = now
    state.frameClock.audio = audio
    if let audio, state.base.mode == .talking, let playing = state.speech.playing,
      playing.chunk.id == audio.chunk, playing.audioStarted
    {
      // The frame clock keeps the audio's phase within the slot, so when the audio ends (or
      // stops being given) the next frame comes one slot after the last, not a tick later.
      let slots = max(0, audio.position * configuration.speakingFPS)
      state.frameClock.accumulator = (slots - slots.rounded(.down)) / configuration.speakingFPS
      state.frameClock.phasePending = false
      state.followAudio(position: audio.position, configuration)
    } else {
      state.frameClock.accumulator += delta
      if state.frameClock.phasePending, delta > 0 {
        let period = state.frameClock.tickPeriod ?? delta
        state.frameClock.accumulator += min(period, 1 / state.rate(configuration)) / 2
        state.frameClock.phasePending = false
      }
      var steps = 0
      while true {
        let slot = 1 / state.rate(configuration)
        guard state.frameClock.accumulator + EngineState.epsilon >= slot else { break }
        if steps == configuration.maxCatchUpFrames {
          state.metrics.catchUps += 1
          state.frameClock.accumulator = 0
          break
        }
        state.frameClock.accumulator = max(0, state.frameClock.accumulator - slot)
        steps += 1
        state.frameClock.clock = now - state.frameClock.accumulator
        state.step(configuration)
      }
      state.frameClock.clock = now
      if steps == 0 && state.base.cursor == nil { state.step(configuration) }
    }
    let plan = state.drawIfNeeded(configuration)
    return TickResult(plan: plan, actions: state.takeActions())
  }

  /// The base frames the engine will show next if nothing new arrives, in order, at most
  /// `count` distinct steps: the rest of the animation on screen, a planned walk, the idle
  /// loop, the mouths of the playing and queued chunks (their images assumed ready), the
  /// return to idle. The engine plays itself forward on a copy of its state (it is a value),
  /// so the prediction is exactly its own rules; an owner decodes this window ahead.
  ///
  /// `queuedSpeech: false` predicts the other branch: the queued chunks do not start (their
  /// images or their link keep them waiting), so idle goes on. Decoding both branches' next
  /// frames lets the owner show whichever the engine takes.
  public func upcomingBaseFrames(_ count: Int, queuedSpeech: Bool = true) -> [BaseFrameRef] {
    var copy = state
    if !queuedSpeech { copy.speech.queue = [] }
    for chunk in copy.speech.queue { copy.speech.readyKeys.formUnion(chunk.keys) }
    if let playing = copy.speech.playing { copy.speech.readyKeys.formUnion(playing.chunk.keys) }
    var result: [BaseFrameRef] = []
    var last = copy.base.cursor
    var steps = 0
    while result.count < count && steps < count * 3 + 60 {
      steps += 1
      copy.out = []
      copy.frameClock.clock += 1 / copy.rate(configuration)
      copy.step(configuration)
      copy.picture.needsDraw = false
      guard let cursor = copy.base.cursor, cursor != last else { continue }
      last = cursor
      result.append(BaseFrameRef(animation: cursor.animation, index: cursor.index))
    }
    return result
  }

  // MARK: - Debug step mode

  /// Debug step mode: pauses if needed, then advances exactly one frame slot (time moves by
  /// one slot of the current rate) and returns what to show. Audio actions are still emitted.
  public mutating func stepForward() -> TickResult {
    state.frameClock.paused = true
    if history.count >= configuration.debugHistoryLimit { history.removeFirst() }
    history.append(state)
    state.out = []
    state.picture.lastHold = nil
    state.frameClock.clock += 1 / state.rate(configuration)
    state.step(configuration)
    let plan = state.drawIfNeeded(configuration)
    return TickResult(plan: plan, actions: state.takeActions())
  }

  /// Debug step mode: goes back one ``stepForward()`` (the whole state is restored, metrics
  /// included) and returns the frame that was on screen then. Audio is not rewound. Returns
  /// nil when there is no step to undo.
  public mutating func stepBackward() -> DrawnFrame? {
    guard let previous = history.popLast() else { return nil }
    state = previous
    state.frameClock.paused = true
    return state.picture.lastDrawn
  }
}
