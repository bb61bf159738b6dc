import LIVAProtocol

// Speech: chunks, overlay frames, boundaries, interrupts.
extension EngineState {
  /// Whether a frame can be drawn now: its images are ready, or known lost (it is drawn
  /// without them), or it has no base frame of its own.
  func isReadyOrSkippable(_ frame: PlannedFrame) -> Bool {
    frame.isContinuation || resolvedIndex(of: frame) == nil
      || frame.layers.allSatisfy {
        speech.readyKeys.contains($0.key) || speech.failedKeys.contains($0.key)
      }
  }

  /// Whether queued chunk `position` may start: its first N frames ready (once all its images
  /// were sent, a frame waits only for an image still decoding), or the start timeout passed
  /// with its first frame ready (a shorter one when its first frame was sent ahead).
  mutating func isStartable(_ position: Int, _ configuration: EngineConfiguration) -> Bool {
    let chunk = speech.queue[position]
    let needed = min(configuration.startThresholdFrames, chunk.frames.count)
    var ready = 0
    for frame in chunk.frames.prefix(needed) {
      guard
        isReadyOrSkippable(frame)
          || chunk.imagesComplete
            && !frame.layers.contains(where: {
              speech.inFlightKeys.contains($0.key) && !speech.readyKeys.contains($0.key)
            })
      else { break }
      ready += 1
    }
    let since = chunk.waitingSince ?? frameClock.clock
    speech.queue[position].waitingSince = since
    let waited = frameClock.clock - since + EngineState.epsilon
    // A slow link still bringing the chunk's images: it starts once they are all here, so its
    // mouths are drawn with their audio rather than skipped behind it.
    if awaitsLink(chunk, configuration) && waited < configuration.maxDeliveryWait { return false }
    if ready >= needed { return true }
    // With no mouth at all after the longest wait, the chunk starts anyway: its audio and its
    // time are worth more than mouths that may never come.
    let timeout =
      chunk.startsOnFirstFrame ? configuration.firstFrameStartTimeout : configuration.startTimeout
    return ready > 0 && waited >= timeout || waited >= configuration.maxStartWait
  }

  /// Whether bytes of the backend's link arrived within ``EngineConfiguration/deliveryQuiet``
  /// (``LIVAEngine/linkDelivered()``): what is missing is on its way.
  func linkDelivering(_ configuration: EngineConfiguration) -> Bool {
    guard let last = speech.lastDelivery else { return false }
    return frameClock.clock - last < configuration.deliveryQuiet
  }

  /// Whether `chunk` waits for the link: images of it have not come (nor been given up on) and
  /// the link is delivering. An image decoding, ready or lost counts as come.
  func awaitsLink(_ chunk: QueuedChunk, _ configuration: EngineConfiguration) -> Bool {
    guard !chunk.imagesComplete, linkDelivering(configuration) else { return false }
    return !chunk.frames.allSatisfy { frame in
      isReadyOrSkippable(frame) || frame.layers.allSatisfy { speech.inFlightKeys.contains($0.key) }
    }
  }

  /// Starts the head chunk and tries to show its first frame in this slot.
  mutating func startSpeech(_ configuration: EngineConfiguration) {
    base.target = nil
    base.baseQueue = []
    guard !speech.queue.isEmpty else {
      planReturn(configuration)
      return
    }
    speech.playing = PlayingChunk(chunk: speech.queue.removeFirst())
    speech.boundarySince = nil
    speech.boundaryWait = nil
    setMode(.talking)
    advanceSpeech(to: 0, configuration)
  }

  /// With the audio clock: the overlay frame due is `floor(position × fps)`.
  mutating func followAudio(position: Double, _ configuration: EngineConfiguration) {
    guard let playing = speech.playing, position.isFinite else { return }
    let desired = max(
      0, Int((position * configuration.speakingFPS + EngineState.epsilon).rounded(.down)))
    guard desired > playing.consumed else { return }
    if desired > playing.consumed + 1 { metrics.audioDriftCorrections += 1 }
    advanceSpeech(to: desired, configuration)
  }

  /// Moves the playing chunk to overlay frame `target`: frames passed over are late; the
  /// target is shown when ready, held when not (skipped after the cap), and past the last
  /// frame comes the chunk boundary.
  mutating func advanceSpeech(to target: Int, _ configuration: EngineConfiguration) {
    guard var current = speech.playing else { return }
    let frames = current.chunk.frames
    let passedEnd = min(target, frames.count)
    if passedEnd > current.consumed + 1 {
      metrics.lateFrames += passedEnd - (current.consumed + 1)
      current.report.late += passedEnd - (current.consumed + 1)
      picture.skippedSinceDraw = true
      current.consumed = passedEnd - 1
      speech.playing = current
    }
    guard target < frames.count else {
      chunkBoundary(configuration)
      return
    }
    let frame = frames[target]
    let id = current.chunk.id
    if frame.isContinuation {
      // No base frame of its own: the animation on screen goes on, without a mouth.
      continueMouthless(target, of: &current, animation: frame.animation)
      return
    }
    guard let index = resolvedIndex(of: frame) else {
      // Its animation is not here: the animation on screen goes on without a mouth, so the
      // chunk keeps its time and its audio.
      warn(.missingAnimation, "\(frame.animation) is not available", chunk: id, frame: target)
      continueMouthless(target, of: &current, animation: frame.animation)
      return
    }
    var drawnFrame = frame
    if frame.layers.contains(where: { !speech.readyKeys.contains($0.key) }) {
      let waiting = frame.layers.first {
        !speech.readyKeys.contains($0.key) && !speech.failedKeys.contains($0.key)
      }
      // An image on its way is waited for even when the chunk's images were all sent; one
      // that never came is not.
      if let waiting, !current.chunk.imagesComplete || speech.inFlightKeys.contains(waiting.key),
        !current.overdue
      {
        guard
          noteHold(.overlayNotReady(key: waiting.key), configuration)
            > configuration.maxConsecutiveOverlayHolds
        else { return }
        current.overdue = true
      }
      // The mouth will not come (failed, rejected, or not here after the hold cap): the base
      // frame and the audio go on without it.
      let lost = frame.layers.filter { !speech.readyKeys.contains($0.key) }.map(\.key)
      warn(.mouthLost, "drawn without \(lost)", chunk: id, frame: target)
      metrics.mouthlessFrames += 1
      drawnFrame.layers.removeAll { !speech.readyKeys.contains($0.key) }
    } else {
      current.overdue = false
    }
    if index != frame.baseFrame {
      warn(
        .frameIndexWrapped,
        "frame number \(frame.baseFrame) of \(frame.animation) wrapped to \(index)",
        chunk: id, frame: target, protocolIssue: true)
    }
    current.consumed = target
    speech.playing = current
    show(frame.animation, index, overlay: ShownOverlay(chunk: id, index: target, frame: drawnFrame))
  }

  /// Slot `target` of the playing chunk without a mouth or a base frame of its own: the next
  /// frame of the animation on screen (skipped when there is none).
  private mutating func continueMouthless(
    _ target: Int, of current: inout PlayingChunk, animation: AnimationName
  ) {
    guard let next = continuationCursor() else {
      skipOverlay(target)
      return
    }
    metrics.mouthlessFrames += 1
    current.consumed = target
    speech.playing = current
    show(
      next.animation, next.index,
      overlay: ShownOverlay(
        chunk: current.chunk.id, index: target, frame: .continuation(animation: animation)))
  }

  /// Where the base animation goes for a slot with no base frame of its own: the next frame of
  /// the animation on screen, or frame 0 of its loop partner when it ended (the talking
  /// ping-pong); nil when neither exists.
  func continuationCursor() -> Cursor? {
    guard let cursor = base.cursor, let count = base.graph.frameCount(of: cursor.animation) else {
      return nil
    }
    if cursor.index + 1 < count {
      return Cursor(animation: cursor.animation, index: cursor.index + 1)
    }
    guard let next = base.graph.next(after: cursor.animation, toward: cursor.animation.to.pose)
    else {
      return nil
    }
    return Cursor(animation: next, index: 0)
  }

  private mutating func skipOverlay(_ index: Int) {
    metrics.skippedOverlays += 1
    picture.skippedSinceDraw = true
    speech.playing?.consumed = index
    speech.playing?.report.skipped += 1
  }

  /// The playing chunk's last frame is on screen: go on with the next chunk, hold, or finish.
  private mutating func chunkBoundary(_ configuration: EngineConfiguration) {
    // The last frame is drawn before the chunk is left, even when a catch-up would pass it.
    guard let current = speech.playing,
      !(picture.needsDraw && picture.shown?.chunk == current.chunk.id)
    else { return }
    let since = speech.boundarySince ?? frameClock.clock
    speech.boundarySince = since
    let waited = frameClock.clock - since + EngineState.epsilon
    // The wait goes on past its limit while the link delivers the next chunk (its plan, or its
    // images), up to the longest wait for a link.
    let next = speech.queue.first
    let delivering =
      next.map { awaitsLink($0, configuration) }
      ?? (speech.message?.audioEnded == false && linkDelivering(configuration))
    let holdOver =
      waited >= configuration.maxDeliveryWait
      || waited >= configuration.maxBoundaryHold && !delivering
    if let next = speech.queue.first, next.id.message == current.chunk.id.message {
      let contiguous = next.id.index == current.chunk.id.index + 1
      if contiguous && isStartable(0, configuration) || holdOver {
        if walkBack(before: next, configuration) { return }
        if !contiguous {
          warn(
            .chunkGap, "chunk \(current.chunk.id.index + 1) never came", chunk: next.id,
            protocolIssue: true)
        }
        finishChunk()
        startSpeech(configuration)
        return
      }
    } else if speech.message?.audioEnded ?? true || holdOver {
      finishChunk()
      endSpeech(configuration)
      return
    }
    // The last mouth stays for less than the grace (the next slot would reach it), then closes.
    let slot = 1 / configuration.speakingFPS
    if speech.boundaryWait != nil
      || frameClock.clock - since + slot + EngineState.epsilon >= configuration.boundaryGrace
    {
      breathe(configuration)
    } else {
      noteHold(.waitingForNextChunk, configuration)
    }
  }

  /// A wait at a chunk boundary past the grace: no mouth, and the body keeps moving, one base
  /// frame a slot, back and forth between the frame the chunk ended on and
  /// ``EngineConfiguration/boundaryBreathFrames`` before it (after it, when it is its
  /// animation's first frame). Neighbouring frames only: never a pop.
  private mutating func breathe(_ configuration: EngineConfiguration) {
    guard let cursor = base.cursor, let count = base.graph.frameCount(of: cursor.animation) else {
      noteHold(.waitingForNextChunk, configuration)
      return
    }
    if speech.boundaryWait == nil {
      // Away from where the next chunk most likely starts (the frame after this one).
      speech.boundaryWait = BoundaryWait(
        anchor: cursor, step: cursor.index > 0 ? -1 : 1, lastMove: -Double.infinity)
      metrics.boundaryWaits += 1
    }
    guard var wait = speech.boundaryWait,
      frameClock.clock - wait.lastMove + EngineState.epsilon >= 1 / configuration.speakingFPS
    else { return }
    let reach = max(1, configuration.boundaryBreathFrames)
    let anchor = wait.anchor.index
    let range =
      anchor > 0 ? max(0, anchor - reach)...anchor : anchor...min(count - 1, anchor + reach)
    wait.lastMove = frameClock.clock
    defer { speech.boundaryWait = wait }
    if range.count < 2 {
      // A one-frame animation: the mouth closes, the body cannot move.
      guard picture.shown != nil else { return }
      show(cursor.animation, cursor.index)
    } else {
      if !range.contains(cursor.index + wait.step) { wait.step = -wait.step }
      show(cursor.animation, cursor.index + wait.step)
    }
    metrics.boundaryWaitFrames += 1
  }

  /// After a wait past the grace, the late chunk `next` may start once its first frame
  /// continues the picture: until then the body walks back, a frame a slot, toward the frame
  /// the previous chunk ended on (which the backend's next frame continues). Returns whether
  /// the chunk must wait for that walk.
  private mutating func walkBack(
    before next: QueuedChunk, _ configuration: EngineConfiguration
  ) -> Bool {
    guard var wait = speech.boundaryWait, let cursor = base.cursor,
      cursor.animation == wait.anchor.animation,
      cursor.index != wait.anchor.index, let first = next.frames.first,
      !first.isContinuation, let index = resolvedIndex(of: first),
      !isContinuous(from: cursor, to: Cursor(animation: first.animation, index: index))
    else { return false }
    guard frameClock.clock - wait.lastMove + EngineState.epsilon >= 1 / configuration.speakingFPS
    else {
      return true
    }
    wait.lastMove = frameClock.clock
    speech.boundaryWait = wait
    show(cursor.animation, cursor.index + (wait.anchor.index > cursor.index ? 1 : -1))
    metrics.boundaryWaitFrames += 1
    return true
  }

  private mutating func finishChunk() {
    guard let current = speech.playing else { return }
    out.append(.chunkFinished(current.report))
    metrics.chunksFinished += 1
    speech.playing = nil
    speech.boundarySince = nil
    speech.boundaryWait = nil
  }

  /// No more overlays for now: finish the base animation, then return to idle.
  mutating func endSpeech(_ configuration: EngineConfiguration) {
    speech.playing = nil
    speech.boundarySince = nil
    speech.boundaryWait = nil
    if let current = speech.message, current.speaking {
      speech.message?.speaking = false
      out.append(.speakingEnded(current.id, interrupted: false))
    }
    if speech.message?.audioEnded == true { closeMessage() }
    setMode(.finishing)
    baseStep(configuration)
  }

  mutating func closeMessage() {
    speech.message = nil
  }

  /// A new message: whatever plays or waits of the one before is dropped, and the chunks
  /// enqueued next are this one's.
  mutating func begin(_ id: MessageID, _ configuration: EngineConfiguration) {
    interrupt(configuration)
    if speech.message != nil { closeMessage() }
    speech.message = MessageState(id: id)
    speech.lastMessage = id
    // Failed images stay failed (content keys: one id, one image) until one is ready; only
    // a set grown large is trimmed to the keys of chunks still to play.
    if speech.failedKeys.count > 4_096 {
      let needed = Set(speech.queue.lazy.flatMap(\.keys))
      speech.failedKeys = speech.failedKeys.filter { needed.contains($0) }
    }
  }

  /// A chunk of the open message, queued in index order. Its owner decided that it belongs
  /// (message identity, re-sends and stale chunks are the speech session's): the engine only
  /// checks that the plan is playable.
  mutating func enqueue(_ plan: ChunkPlan, _ configuration: EngineConfiguration) {
    guard plan.index >= 0 else {
      warn(.chunkRejected, "chunk \(plan.index) has a negative index", protocolIssue: true)
      return
    }
    if speech.message == nil, plan.message == speech.lastMessage {
      // The message closed after an `audio_end` its owner took back: it goes on.
      speech.message = MessageState(id: plan.message)
    }
    guard var current = speech.message, current.id == plan.message else {
      warn(.chunkRejected, "chunk \(plan.index) of \(plan.message): not the message begun")
      return
    }
    current.audioEnded = false
    speech.message = current
    guard !plan.frames.isEmpty else {
      warn(.chunkRejected, "chunk \(plan.index) has no frames", protocolIssue: true)
      return
    }
    let id = ChunkID(message: current.id, index: plan.index)
    for (position, frame) in plan.frames.enumerated() where frame.baseFrame < 0 {
      warn(
        .negativeFrameIndex, "negative frame number \(frame.baseFrame): drawn without its mouth",
        chunk: id, frame: position, protocolIssue: true)
    }
    let chunk = QueuedChunk(
      id: id, frames: plan.frames, imagesComplete: false,
      startsOnFirstFrame: plan.startsOnFirstFrame)
    speech.queue.insert(
      chunk, at: speech.queue.firstIndex { $0.id.index > plan.index } ?? speech.queue.endIndex)
    out.append(.chunkQueued(id))
  }

  /// The connection is gone: nothing more can come for the open message. Its chunks play
  /// out (their audio is here) with the mouths that are here, then the avatar returns to idle;
  /// no boundary hold waits for a chunk that cannot come.
  mutating func connectionLost() {
    speech.lastDelivery = nil
    guard speech.message != nil else { return }
    for position in speech.queue.indices { speech.queue[position].imagesComplete = true }
    speech.playing?.chunk.imagesComplete = true
    speech.message?.audioEnded = true
    if speech.playing == nil && speech.queue.isEmpty && base.mode != .talking { closeMessage() }
  }

  /// Drops the playing and queued chunks; the picture loses their overlays at the next tick.
  mutating func interrupt(_ configuration: EngineConfiguration) {
    guard speech.playing != nil || !speech.queue.isEmpty else { return }
    var keys = Set<String>()
    if let playing = speech.playing { keys.formUnion(playing.chunk.keys) }
    for chunk in speech.queue { keys.formUnion(chunk.keys) }
    if let playing = speech.playing, playing.audioStarted {
      out.append(.stopAudio(playing.chunk.id))
    }
    if let current = speech.message { out.append(.evictImages(current.id, keys: keys.sorted())) }
    if let current = speech.message, current.speaking {
      out.append(.speakingEnded(current.id, interrupted: true))
    }
    metrics.interrupts += 1
    speech.playing = nil
    speech.queue = []
    speech.boundarySince = nil
    speech.boundaryWait = nil
    closeMessage()
    if picture.shown != nil {
      picture.shown = nil
      picture.needsDraw = base.cursor != nil
    }
    if base.mode == .talking || base.target == .speech {
      base.target = nil
      base.baseQueue = []
      setMode(.finishing)
    }
  }
}
