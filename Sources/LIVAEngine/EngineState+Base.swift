import LIVAProtocol

// Base animation: idle loop, transitions, finishing, return, requested animations.
extension EngineState {
  /// One frame slot outside speech.
  mutating func baseStep(_ configuration: EngineConfiguration) {
    if base.target != .speech, speech.playing == nil, !speech.queue.isEmpty,
      isStartable(0, configuration),
      let entry = entryPoint(for: .speech)
    {
      planEntry(to: entry, target: .speech, budget: configuration.maxEntryDelay, configuration)
      return
    }
    if base.mode == .idle, base.target == nil, speech.queue.isEmpty, !base.requests.isEmpty {
      let request = base.requests.removeFirst()
      if base.graph.contains(request) {
        planEntry(
          to: Cursor(animation: request, index: 0), target: .animation(request), budget: nil,
          configuration)
        return
      }
      warn(.requestDropped, "\(request) is no longer available")
    }
    if base.mode == .finishing,
      frameClock.clock - base.modeSince + EngineState.epsilon >= configuration.finishTimeout
    {
      warn(.cut, "finishing the base animation took longer than \(configuration.finishTimeout) s")
      planReturn(configuration)
      return
    }
    if base.mode == .transition, let target = base.target, let entry = entryPoint(for: target),
      isJustBefore(entry)
    {
      arrive(configuration)
      return
    }
    guard let cursor = base.cursor, let count = base.graph.frameCount(of: cursor.animation) else {
      warn(.cut, "the animation on screen is no longer available")
      cutToIdle(configuration)
      return
    }
    // The frame the owner could not show yet is shown again, late rather than never: skipping
    // it would jump the body by a frame. Bounded, so a frame that never decodes is no freeze.
    if let missed = picture.notPresented, missed.frame == cursor {
      if missed.slots < EngineState.missedFrameRetries {
        picture.notPresented?.slots += 1
        picture.needsDraw = true
        return
      }
      picture.notPresented = nil
    }
    if cursor.reversed {
      if cursor.index > 0 {
        show(cursor.animation, cursor.index - 1, reversed: true)
      } else {
        animationEnded(configuration)
      }
    } else if cursor.index + 1 < count {
      show(cursor.animation, cursor.index + 1)
    } else {
      animationEnded(configuration)
    }
  }

  /// Shows the first frame of a walk's leg: frame 0 forwards, the last frame backwards.
  private mutating func start(_ leg: Leg) {
    let last = max(0, (base.graph.frameCount(of: leg.animation) ?? 1) - 1)
    show(leg.animation, leg.reversed ? last : 0, reversed: leg.reversed)
  }

  /// The animation on screen has shown its last frame.
  private mutating func animationEnded(_ configuration: EngineConfiguration) {
    if !base.baseQueue.isEmpty {
      start(base.baseQueue.removeFirst())
      return
    }
    switch base.mode {
    case .transition:
      warn(.cut, "the planned path ended away from its target")
      arrive(configuration)
    case .animation, .finishing:
      planReturn(configuration)
    case .returning:
      setMode(.idle)
      idleNext(configuration)
    default:
      idleNext(configuration)
    }
  }

  /// Where a target starts: the first overlay frame of the head chunk, or frame 0 of the
  /// requested animation.
  func entryPoint(for target: Target) -> Cursor? {
    switch target {
    case .speech:
      guard let first = speech.queue.first?.frames.first else { return nil }
      return Cursor(animation: first.animation, index: resolvedIndex(of: first) ?? 0)
    case .animation(let name):
      return Cursor(animation: name, index: 0)
    }
  }

  /// Whether `entry` may be drawn next without a pop: the frame before it (walking forwards)
  /// or after it (walking backwards) of its animation, or the end of a leg at its start pose.
  func isJustBefore(_ entry: Cursor) -> Bool {
    guard let cursor = base.cursor else { return true }
    if cursor.animation == entry.animation
      && cursor.index == (cursor.reversed ? entry.index + 1 : entry.index - 1)
    {
      return true
    }
    guard entry.index == 0, let count = base.graph.frameCount(of: cursor.animation) else {
      return false
    }
    return cursor.reversed
      ? cursor.index == 0 && cursor.animation.from == entry.animation.from
      : cursor.index == count - 1 && cursor.animation.to == entry.animation.from
  }

  /// The cheapest walk, in frames, from the frame on screen to just before frame 0 of `entry`:
  /// on forwards to the end of the animation on screen, or back to its start, then animations
  /// played forwards or backwards between key poses. Nil when there is none.
  func cheapestWalk(from cursor: Cursor, to entry: AnimationName) -> (frames: Int, legs: [Leg])? {
    guard let count = base.graph.frameCount(of: cursor.animation) else { return nil }
    let ahead = (
      pose: cursor.reversed ? cursor.animation.from : cursor.animation.to,
      frames: cursor.reversed ? cursor.index : count - 1 - cursor.index
    )
    let behind = (
      pose: cursor.reversed ? cursor.animation.to : cursor.animation.from,
      frames: cursor.reversed ? count - 1 - cursor.index : cursor.index
    )
    var best: (frames: Int, legs: [Leg])?
    for (turn, start) in [(false, ahead), (true, behind)] {
      guard var walk = walk(from: start.pose, to: entry.from) else { continue }
      walk.frames += start.frames
      var legs = walk.legs
      if turn {
        // Turning round: the rest of the animation on screen, the other way.
        legs.insert(Leg(animation: cursor.animation, reversed: !cursor.reversed), at: 0)
      }
      if let last = legs.last, last.animation == entry, last.reversed {
        walk.frames -= 1  // back through the entry's own animation: stop one frame before it
      }
      if best.map({ walk.frames < $0.frames }) ?? true { best = (walk.frames, legs) }
    }
    return best
  }

  /// Dijkstra over key poses; every available animation is an edge forwards, and a transition
  /// between two poses (`idle_1_e_talking_1_s`) also backwards, from its end pose to its start
  /// pose; an edge costs its frame count. Gestures and loops within one pose (`hi_1_s_hi_1_e`)
  /// are never played backwards as part of a walk.
  private func walk(from start: KeyPose, to target: KeyPose) -> (frames: Int, legs: [Leg])? {
    var best: [KeyPose: (frames: Int, legs: [Leg])] = [start: (0, [])]
    var done: Set<KeyPose> = []
    while let (pose, current) = best.filter({ !done.contains($0.key) }).min(by: {
      ($0.value.frames, $0.value.legs.count, $0.key) < (
        $1.value.frames, $1.value.legs.count, $1.key
      )
    }) {
      if pose == target { return current }
      done.insert(pose)
      for animation in base.graph.animations {
        for reversed in [false, true] where !reversed || animation.from.pose != animation.to.pose {
          let (from, to) =
            reversed ? (animation.to, animation.from) : (animation.from, animation.to)
          guard from == pose, !done.contains(to), let count = base.graph.frameCount(of: animation)
          else { continue }
          let candidate = (
            frames: current.frames + count,
            legs: current.legs + [Leg(animation: animation, reversed: reversed)]
          )
          if best[to].map({ candidate.frames < $0.frames }) ?? true { best[to] = candidate }
        }
      }
    }
    return nil
  }

  /// Plans the way from the picture to `entry`: finish the current animation, then the
  /// cheapest path to the entry's start pose, at the speaking rate. A way longer than `budget`
  /// seconds, or no way at all, is replaced by a cut (a counted pop). Consumes this slot.
  mutating func planEntry(
    to entry: Cursor, target newTarget: Target, budget: Double?,
    _ configuration: EngineConfiguration
  ) {
    base.target = newTarget
    base.baseQueue = []
    guard let cursor = base.cursor, base.graph.contains(entry.animation), !isJustBefore(entry)
    else {
      arrive(configuration)
      return
    }
    var frames = 0
    var path: [Leg] = []
    /// Which way to play the animation on screen to reach an entry inside it.
    var direction: Bool?
    if entry.index > 0 {
      if cursor.animation == entry.animation, cursor.index < entry.index - 1 {
        frames = entry.index - 1 - cursor.index
        direction = false
      } else if cursor.animation == entry.animation, cursor.index > entry.index + 1 {
        // Back through the animation on screen: the frame after the entry is its neighbour.
        frames = cursor.index - entry.index - 1
        direction = true
      } else if let found = cheapestWalk(from: cursor, to: entry.animation) {
        // To the entry's animation, then through it up to the frame before the entry.
        frames = found.frames + entry.index
        path = found.legs + [Leg(animation: entry.animation)]
      } else {
        warn(
          .cut,
          "\(entry.animation)#\(entry.index) cannot be reached from \(cursor.animation)#\(cursor.index)"
        )
        arrive(configuration)
        return
      }
    } else if let found = cheapestWalk(from: cursor, to: entry.animation) {
      frames = found.frames
      path = found.legs
    } else {
      warn(.cut, "no path from \(cursor.animation)#\(cursor.index) to \(entry.animation.from)")
      arrive(configuration)
      return
    }
    if let budget, Double(frames) / configuration.speakingFPS > budget + EngineState.epsilon {
      warn(
        .cut, "reaching \(entry.animation) would take \(frames) frames, over the \(budget) s budget"
      )
      arrive(configuration)
      return
    }
    if let turn = path.first, turn.animation == cursor.animation, turn.reversed != cursor.reversed {
      // The walk starts by turning round in the animation on screen.
      path.removeFirst()
      self.base.cursor?.reversed = turn.reversed
    }
    if let direction { self.base.cursor?.reversed = direction }
    base.baseQueue = path
    setMode(.transition)
    baseStep(configuration)
  }

  /// The target's entry point is next: start speech, or the requested animation.
  mutating func arrive(_ configuration: EngineConfiguration) {
    switch base.target {
    case .speech:
      startSpeech(configuration)
    case .animation(let name):
      base.target = nil
      base.baseQueue = []
      setMode(.animation)
      show(name, 0)
    case nil:
      cutToIdle(configuration)
    }
  }

  /// Plans the way from the end of the animation on screen back to the idle pose and shows its
  /// first frame (or the idle loop's, when already there).
  mutating func planReturn(_ configuration: EngineConfiguration) {
    base.target = nil
    base.baseQueue = []
    guard let cursor = base.cursor else {
      cutToIdle(configuration)
      return
    }
    // Where the animation on screen ended: its end pose, or its start pose when it was played
    // backwards.
    let pose = cursor.reversed ? cursor.animation.from : cursor.animation.to
    guard let path = base.graph.path(from: pose, toPose: configuration.idlePose) else {
      warn(.cut, "no path from \(pose) back to \(configuration.idlePose)")
      cutToIdle(configuration)
      return
    }
    guard let first = path.first else {
      setMode(.idle)
      idleNext(configuration)
      return
    }
    base.baseQueue = path.dropFirst().map { Leg(animation: $0) }
    setMode(.returning)
    show(first, 0)
  }

  /// The idle loop's next animation (the ping-pong partner, usually).
  mutating func idleNext(_ configuration: EngineConfiguration) {
    if let cursor = base.cursor, cursor.reversed {
      // Played backwards, it ended at its start pose: go on from there.
      let candidates = base.graph.animations(from: cursor.animation.from)
      if let next = candidates.first(where: { $0.to.pose == configuration.idlePose })
        ?? candidates.first
      {
        show(next, 0)
        return
      }
    }
    if let cursor = base.cursor,
      let next = base.graph.next(after: cursor.animation, toward: configuration.idlePose)
    {
      show(next, 0)
    } else if let idle = idleStartAnimation(configuration) {
      show(idle, 0)
    } else {
      setMode(.waiting)
      noteHold(.noBaseAnimation, configuration)
    }
  }

  /// Jumps straight to the idle loop's first frame (a pop, counted when drawn).
  mutating func cutToIdle(_ configuration: EngineConfiguration) {
    base.target = nil
    base.baseQueue = []
    if let idle = idleStartAnimation(configuration) {
      setMode(.idle)
      show(idle, 0)
    } else {
      setMode(.waiting)
      noteHold(.noBaseAnimation, configuration)
    }
  }

  mutating func request(_ name: AnimationName, _ configuration: EngineConfiguration) {
    guard base.graph.contains(name) else {
      warn(.requestDropped, "\(name) is not available")
      return
    }
    if base.requests.count >= configuration.maxPendingAnimationRequests {
      let dropped = base.requests.removeFirst()
      warn(.requestDropped, "\(dropped) dropped: too many pending requests")
    }
    base.requests.append(name)
  }
}
