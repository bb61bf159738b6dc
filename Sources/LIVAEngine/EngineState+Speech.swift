import LIVAProtocol

// Speech: chunks, overlay frames, boundaries, interrupts.
extension State {
  /// Whether a frame can be drawn now: its images are ready, or known lost (it is drawn
  /// without them), or it has no base frame of its own.
  func isReadyOrSkippable(_ frame: PlannedFrame) -> Bool {
    frame.isContinuation || resolvedIndex(of: frame) == nil
      || frame.layers.allSatisfy { readyKeys.contains($0.key) || failedKeys.contains($0.key) }
  }

  /// Whether queued chunk `position` may start: its first N frames ready, or all its images
  /// in, or the start timeout passed with its first frame ready.
  mutating func isStartable(_ position: Int, _ configuration: EngineConfiguration) -> Bool {
    let chunk = queue[position]
    if chunk.imagesComplete { return true }
    let needed = min(
      chunk.startsOnFirstFrame ? 1 : configuration.startThresholdFrames, chunk.frames.count)
    var ready = 0
    for frame in chunk.frames.prefix(needed) {
      guard isReadyOrSkippable(frame) else { break }
      ready += 1
    }
    if ready >= needed { return true }
    let since = chunk.waitingSince ?? clock
    queue[position].waitingSince = since
    let waited = clock - since + State.epsilon
    // With no mouth at all after the longest wait, the chunk starts anyway: its audio and its
    // time are worth more than mouths that may never come.
    return ready > 0 && waited >= configuration.startTimeout || waited >= configuration.maxStartWait
  }

  /// Starts the head chunk and tries to show its first frame in this slot.
  mutating func startSpeech(_ configuration: EngineConfiguration) {
    target = nil
    baseQueue = []
    guard !queue.isEmpty else {
      planReturn(configuration)
      return
    }
    playing = PlayingChunk(chunk: queue.removeFirst())
    boundarySince = nil
    boundaryWait = nil
    setMode(.talking)
    advanceSpeech(to: 0, configuration)
  }

  /// With the audio clock: the overlay frame due is `floor(position × fps)`.
  mutating func followAudio(position: Double, _ configuration: EngineConfiguration) {
    guard let playing, position.isFinite else { return }
    let desired = max(0, Int((position * configuration.speakingFPS + State.epsilon).rounded(.down)))
    guard desired > playing.consumed else { return }
    if desired > playing.consumed + 1 { metrics.audioDriftCorrections += 1 }
    advanceSpeech(to: desired, configuration)
  }

  /// Moves the playing chunk to overlay frame `target`: frames passed over are late; the
  /// target is shown when ready, held when not (skipped after the cap), and past the last
  /// frame comes the chunk boundary.
  mutating func advanceSpeech(to target: Int, _ configuration: EngineConfiguration) {
    guard var current = playing else { return }
    let frames = current.chunk.frames
    let passedEnd = min(target, frames.count)
    if passedEnd > current.consumed + 1 {
      metrics.lateFrames += passedEnd - (current.consumed + 1)
      current.report.late += passedEnd - (current.consumed + 1)
      skippedSinceDraw = true
      current.consumed = passedEnd - 1
      playing = current
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
    if frame.layers.contains(where: { !readyKeys.contains($0.key) }) {
      let waiting = frame.layers.first {
        !readyKeys.contains($0.key) && !failedKeys.contains($0.key)
      }
      // An image on its way is waited for even when the chunk's images were all sent; one
      // that never came is not.
      if let waiting, !current.chunk.imagesComplete || inFlightKeys.contains(waiting.key),
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
      let lost = frame.layers.filter { !readyKeys.contains($0.key) }.map(\.key)
      warn(.mouthLost, "drawn without \(lost)", chunk: id, frame: target)
      metrics.mouthlessFrames += 1
      drawnFrame.layers.removeAll { !readyKeys.contains($0.key) }
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
    playing = current
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
    playing = current
    show(
      next.animation, next.index,
      overlay: ShownOverlay(
        chunk: current.chunk.id, index: target, frame: .continuation(animation: animation)))
  }

  /// Where the base animation goes for a slot with no base frame of its own: the next frame of
  /// the animation on screen, or frame 0 of its loop partner when it ended (the talking
  /// ping-pong); nil when neither exists.
  func continuationCursor() -> Cursor? {
    guard let cursor, let count = graph.frameCount(of: cursor.animation) else { return nil }
    if cursor.index + 1 < count {
      return Cursor(animation: cursor.animation, index: cursor.index + 1)
    }
    guard let next = graph.next(after: cursor.animation, toward: cursor.animation.to.pose) else {
      return nil
    }
    return Cursor(animation: next, index: 0)
  }

  private mutating func skipOverlay(_ index: Int) {
    metrics.skippedOverlays += 1
    skippedSinceDraw = true
    playing?.consumed = index
    playing?.report.skipped += 1
  }

  /// The playing chunk's last frame is on screen: go on with the next chunk, hold, or finish.
  private mutating func chunkBoundary(_ configuration: EngineConfiguration) {
    // The last frame is drawn before the chunk is left, even when a catch-up would pass it.
    guard let current = playing, !(needsDraw && shown?.chunk == current.chunk.id) else { return }
    let since = boundarySince ?? clock
    boundarySince = since
    let holdOver = clock - since + State.epsilon >= configuration.maxBoundaryHold
    if let next = queue.first, next.id.message == current.chunk.id.message {
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
    } else if message?.audioEnded ?? true || holdOver {
      finishChunk()
      endSpeech(configuration)
      return
    }
    // The last mouth stays for less than the grace (the next slot would reach it), then closes.
    let slot = 1 / configuration.speakingFPS
    if boundaryWait != nil
      || clock - since + slot + State.epsilon >= configuration.boundaryGrace
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
    guard let cursor, let count = graph.frameCount(of: cursor.animation) else {
      noteHold(.waitingForNextChunk, configuration)
      return
    }
    if boundaryWait == nil {
      // Away from where the next chunk most likely starts (the frame after this one).
      boundaryWait = BoundaryWait(
        anchor: cursor, step: cursor.index > 0 ? -1 : 1, lastMove: -Double.infinity)
      metrics.boundaryWaits += 1
    }
    guard var wait = boundaryWait,
      clock - wait.lastMove + State.epsilon >= 1 / configuration.speakingFPS
    else { return }
    let reach = max(1, configuration.boundaryBreathFrames)
    let anchor = wait.anchor.index
    let range =
      anchor > 0 ? max(0, anchor - reach)...anchor : anchor...min(count - 1, anchor + reach)
    wait.lastMove = clock
    defer { boundaryWait = wait }
    if range.count < 2 {
      // A one-frame animation: the mouth closes, the body cannot move.
      guard shown != nil else { return }
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
    guard var wait = boundaryWait, let cursor, cursor.animation == wait.anchor.animation,
      cursor.index != wait.anchor.index, let first = next.frames.first,
      !first.isContinuation, let index = resolvedIndex(of: first),
      !isContinuous(from: cursor, to: Cursor(animation: first.animation, index: index))
    else { return false }
    guard clock - wait.lastMove + State.epsilon >= 1 / configuration.speakingFPS else {
      return true
    }
    wait.lastMove = clock
    boundaryWait = wait
    show(cursor.animation, cursor.index + (wait.anchor.index > cursor.index ? 1 : -1))
    metrics.boundaryWaitFrames += 1
    return true
  }

  private mutating func finishChunk() {
    guard let current = playing else { return }
    out.append(.chunkFinished(current.report))
    metrics.chunksFinished += 1
    playing = nil
    boundarySince = nil
    boundaryWait = nil
  }

  /// No more overlays for now: finish the base animation, then return to idle.
  mutating func endSpeech(_ configuration: EngineConfiguration) {
    playing = nil
    boundarySince = nil
    boundaryWait = nil
    if let current = message, current.speaking {
      message?.speaking = false
      out.append(.speakingEnded(current.id, interrupted: false))
    }
    if message?.audioEnded == true { closeMessage() }
    setMode(.finishing)
    baseStep(configuration)
  }

  mutating func closeMessage() {
    closedSeenIndexes = message?.seenIndexes
    message = nil
    completeIndexes = []
  }

  mutating func enqueue(_ plan: ChunkPlan, _ configuration: EngineConfiguration) {
    guard plan.index >= 0 else {
      warn(.chunkRejected, "chunk \(plan.index) has a negative index", protocolIssue: true)
      return
    }
    // The owner numbers messages: newer opens (and interrupts), older is stale.
    let owner = plan.message
    if let newest = newestMessage,
      owner < newest || (owner == newest && message == nil && interruptedNewest)
    {
      warn(
        .chunkRejected, "chunk \(plan.index) of \(owner) is stale (\(newest) is newer)",
        protocolIssue: true)
      return
    }
    if message == nil, owner == newestMessage, let seen = closedSeenIndexes {
      // A chunk of the message that closed after an `audio_end` its owner took back: the
      // message goes on.
      openMessage(owner)
      message?.seenIndexes = seen
    } else if message?.id != owner {
      interrupt(configuration)
      if message != nil { closeMessage() }
      openMessage(owner)
    } else if message?.audioEnded == true {
      message?.audioEnded = false  // the owner took its `audio_end` back
    }
    // Checked after the interrupt: an empty chunk 0 still ends the old message.
    guard !plan.frames.isEmpty else {
      warn(.chunkRejected, "chunk \(plan.index) has no frames", protocolIssue: true)
      return
    }
    guard var current = message, !current.seenIndexes.contains(plan.index) else {
      warn(.chunkRejected, "chunk \(plan.index) was already received", protocolIssue: true)
      return
    }
    current.seenIndexes.insert(plan.index)
    message = current
    let id = ChunkID(message: current.id, index: plan.index)
    for (position, frame) in plan.frames.enumerated() where frame.baseFrame < 0 {
      warn(
        .negativeFrameIndex, "negative frame number \(frame.baseFrame): drawn without its mouth",
        chunk: id, frame: position, protocolIssue: true)
    }
    let chunk = QueuedChunk(
      id: id, frames: plan.frames, imagesComplete: completeIndexes.remove(plan.index) != nil,
      startsOnFirstFrame: plan.startsOnFirstFrame)
    queue.insert(chunk, at: queue.firstIndex { $0.id.index > plan.index } ?? queue.endIndex)
    out.append(.chunkQueued(id))
  }

  private mutating func openMessage(_ id: MessageID) {
    message = MessageState(id: id)
    newestMessage = id
    interruptedNewest = false
    // Failed images stay failed (content keys: one id, one image) until one is ready; only
    // a set grown large is trimmed to the keys of chunks still to play.
    if failedKeys.count > 4_096 {
      let needed = Set(queue.lazy.flatMap(\.keys))
      failedKeys = failedKeys.filter { needed.contains($0) }
    }
  }

  /// The connection is gone: nothing more can come for the open message. Its chunks play
  /// out (their audio is here) with the mouths that are here, then the avatar returns to idle;
  /// no boundary hold waits for a chunk that cannot come.
  mutating func connectionLost() {
    guard message != nil else { return }
    for position in queue.indices { queue[position].imagesComplete = true }
    playing?.chunk.imagesComplete = true
    message?.audioEnded = true
    if playing == nil && queue.isEmpty && mode != .talking { closeMessage() }
  }

  /// Drops the playing and queued chunks; the picture loses their overlays at the next tick.
  mutating func interrupt(_ configuration: EngineConfiguration) {
    guard playing != nil || !queue.isEmpty else { return }
    var keys = Set<String>()
    if let playing { keys.formUnion(playing.chunk.keys) }
    for chunk in queue { keys.formUnion(chunk.keys) }
    if let playing, playing.audioStarted { out.append(.stopAudio(playing.chunk.id)) }
    if let current = message { out.append(.evictImages(current.id, keys: keys.sorted())) }
    if let current = message, current.speaking {
      out.append(.speakingEnded(current.id, interrupted: true))
    }
    metrics.interrupts += 1
    interruptedNewest = true
    playing = nil
    queue = []
    boundarySince = nil
    boundaryWait = nil
    closeMessage()
    if shown != nil {
      shown = nil
      needsDraw = cursor != nil
    }
    if mode == .talking || target == .speech {
      target = nil
      baseQueue = []
      setMode(.finishing)
    }
  }
}
