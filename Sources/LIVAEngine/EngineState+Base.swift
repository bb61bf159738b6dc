import LIVAProtocol

// Base animation: idle loop, transitions, finishing, return, requested animations.
extension State {
  /// One frame slot outside speech.
  mutating func baseStep(_ configuration: EngineConfiguration) {
    if target != .speech, playing == nil, !queue.isEmpty, isStartable(0, configuration),
      let entry = entryPoint(for: .speech)
    {
      planEntry(to: entry, target: .speech, budget: configuration.maxEntryDelay, configuration)
      return
    }
    if mode == .idle, target == nil, queue.isEmpty, !requests.isEmpty {
      let request = requests.removeFirst()
      if graph.contains(request) {
        planEntry(
          to: Cursor(animation: request, index: 0), target: .animation(request), budget: nil,
          configuration)
        return
      }
      warn(.requestDropped, "\(request) is no longer available")
    }
    if mode == .finishing, clock - modeSince + State.epsilon >= configuration.finishTimeout {
      warn(.cut, "finishing the base animation took longer than \(configuration.finishTimeout) s")
      planReturn(configuration)
      return
    }
    if mode == .transition, let target, let entry = entryPoint(for: target), isJustBefore(entry) {
      arrive(configuration)
      return
    }
    guard let cursor, let count = graph.frameCount(of: cursor.animation) else {
      warn(.cut, "the animation on screen is no longer available")
      cutToIdle(configuration)
      return
    }
    if cursor.index + 1 < count {
      show(cursor.animation, cursor.index + 1)
    } else {
      animationEnded(configuration)
    }
  }

  /// The animation on screen has shown its last frame.
  private mutating func animationEnded(_ configuration: EngineConfiguration) {
    if !baseQueue.isEmpty {
      show(baseQueue.removeFirst(), 0)
      return
    }
    switch mode {
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
      guard let first = queue.first?.frames.first else { return nil }
      return Cursor(animation: first.animation, index: resolvedIndex(of: first) ?? 0)
    case .animation(let name):
      return Cursor(animation: name, index: 0)
    }
  }

  /// Whether `entry` may be drawn next without a pop.
  func isJustBefore(_ entry: Cursor) -> Bool {
    guard let cursor else { return true }
    if entry.index == 0 {
      guard let count = graph.frameCount(of: cursor.animation) else { return false }
      return cursor.index == count - 1 && cursor.animation.to == entry.animation.from
    }
    return cursor.animation == entry.animation && cursor.index == entry.index - 1
  }

  /// Plans the way from the picture to `entry`: finish the current animation, then the
  /// cheapest path to the entry's start pose, at the speaking rate. A way longer than `budget`
  /// seconds, or no way at all, is replaced by a cut (a counted pop). Consumes this slot.
  mutating func planEntry(
    to entry: Cursor, target newTarget: Target, budget: Double?,
    _ configuration: EngineConfiguration
  ) {
    target = newTarget
    baseQueue = []
    guard let cursor, graph.contains(entry.animation), !isJustBefore(entry) else {
      arrive(configuration)
      return
    }
    var frames = 0
    var path: [AnimationName] = []
    if entry.index > 0 {
      guard cursor.animation == entry.animation, cursor.index < entry.index - 1 else {
        warn(
          .cut,
          "\(entry.animation)#\(entry.index) cannot be reached from \(cursor.animation)#\(cursor.index)"
        )
        arrive(configuration)
        return
      }
      frames = entry.index - 1 - cursor.index
    } else if let found = graph.path(from: cursor.animation.to, to: entry.animation.from) {
      let remaining = max(0, (graph.frameCount(of: cursor.animation) ?? 0) - 1 - cursor.index)
      frames = remaining + found.reduce(0) { $0 + (graph.frameCount(of: $1) ?? 0) }
      path = found
    } else {
      warn(.cut, "no path from \(cursor.animation.to) to \(entry.animation.from)")
      arrive(configuration)
      return
    }
    if let budget, Double(frames) / configuration.speakingFPS > budget + State.epsilon {
      warn(
        .cut, "reaching \(entry.animation) would take \(frames) frames, over the \(budget) s budget"
      )
      arrive(configuration)
      return
    }
    baseQueue = path
    setMode(.transition)
    baseStep(configuration)
  }

  /// The target's entry point is next: start speech, or the requested animation.
  mutating func arrive(_ configuration: EngineConfiguration) {
    switch target {
    case .speech:
      startSpeech(configuration)
    case .animation(let name):
      target = nil
      baseQueue = []
      setMode(.animation)
      show(name, 0)
    case nil:
      cutToIdle(configuration)
    }
  }

  /// Plans the way from the end of the animation on screen back to the idle pose and shows its
  /// first frame (or the idle loop's, when already there).
  mutating func planReturn(_ configuration: EngineConfiguration) {
    target = nil
    baseQueue = []
    guard let cursor else {
      cutToIdle(configuration)
      return
    }
    guard let path = graph.path(from: cursor.animation.to, toPose: configuration.idlePose) else {
      warn(.cut, "no path from \(cursor.animation.to) back to \(configuration.idlePose)")
      cutToIdle(configuration)
      return
    }
    guard let first = path.first else {
      setMode(.idle)
      idleNext(configuration)
      return
    }
    baseQueue = Array(path.dropFirst())
    setMode(.returning)
    show(first, 0)
  }

  /// The idle loop's next animation (the ping-pong partner, usually).
  mutating func idleNext(_ configuration: EngineConfiguration) {
    if let cursor, let next = graph.next(after: cursor.animation, toward: configuration.idlePose) {
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
    target = nil
    baseQueue = []
    if let idle = idleStartAnimation(configuration) {
      setMode(.idle)
      show(idle, 0)
    } else {
      setMode(.waiting)
      noteHold(.noBaseAnimation, configuration)
    }
  }

  mutating func request(_ name: AnimationName, _ configuration: EngineConfiguration) {
    guard graph.contains(name) else {
      warn(.requestDropped, "\(name) is not available")
      return
    }
    if requests.count >= configuration.maxPendingAnimationRequests {
      let dropped = requests.removeFirst()
      warn(.requestDropped, "\(dropped) dropped: too many pending requests")
    }
    requests.append(name)
  }
}
