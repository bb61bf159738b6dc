import LIVAEngine
import LIVAMedia
import LIVAProtocol

/// Which base frames to keep decoded ahead of the engine, most urgent first: the window the
/// player asks its ``LIVAMedia/BaseFramePrefetcher`` for. A pure function of the engine's state
/// and the room the budget leaves.
enum BaseFrameWindow {
  /// Frames a window of `budget` bytes holds: as many as fit, less two for the frame being
  /// drawn and a decode in flight; what is beyond (least urgent) waits for the next update.
  static func capacity(budget: Int, frameBytes: Int?, reserved: Int = 0) -> Int {
    max(2, budget / max(1, frameBytes ?? 1 << 20) - 2 - reserved)
  }

  /// How many of the frames the engine will draw a window of `capacity` frames reaches ahead:
  /// three quarters of it (the rest starts the animations speech may switch to), at least 4,
  /// at most 90 (3 s at 30 fps: further out, plans change before they are drawn).
  static func reach(capacity: Int) -> Int { max(4, min(90, capacity * 3 / 4)) }

  /// The base frames to decode ahead, most urgent first, `capacity` at most.
  static func frames(for engine: LIVAEngine, capacity: Int) -> [BaseFrameRef] {
    let graph = engine.graph
    var frames: [BaseFrameRef] = []
    if let onScreen = engine.lastDrawnFrame {
      frames.append(BaseFrameRef(animation: onScreen.animation, index: onScreen.index))
    }
    if let idle = graph.contains(.idleForward) ? .idleForward : graph.animations.first {
      frames.append(BaseFrameRef(animation: idle, index: 0))  // always ready
    }
    // At most 3 s ahead at 30 fps: further out, plans change before they are drawn.
    let upcoming = engine.upcomingBaseFrames(reach(capacity: capacity))
    var poses: [KeyPose] = [.idleEnd]
    if let onScreen = engine.lastDrawnFrame {
      poses += [onScreen.animation.to, onScreen.animation.from]
    }
    var starts: [BaseFrameRef] = []
    for pose in poses {
      for name in graph.animations(from: pose) {
        let count = graph.frameCount(of: name) ?? 0
        starts += (0..<min(4, count)).map { BaseFrameRef(animation: name, index: $0) }
      }
    }
    if engine.lastDrawnFrame?.mode == .idle {
      // Idle: speech may come at any moment and its first frames are due at once, while idle
      // draws slowly (two frames reach 0.2 s ahead at 10 fps). So the first frames speech
      // draws come right after the next two idle frames: at 1280×768 the window holds six
      // frames, and reaching further into idle left no room for them (speech began with
      // base-frame misses).
      let intoTalking = starts.filter { $0.index == 0 && $0.animation.to.pose.isTalking }
      // On the half of the loop that leaves `idle_1_e`, speech walks it back to there: the
      // frame behind the one on screen is the first one it draws.
      var behind: [BaseFrameRef] = []
      if let onScreen = engine.lastDrawnFrame, onScreen.index > 0,
        onScreen.animation.from == .idleEnd
      {
        behind = [BaseFrameRef(animation: onScreen.animation, index: onScreen.index - 1)]
      }
      // Queued speech may still wait (for its images, for its link) while idle goes on: the
      // next idle frames are asked for beside the speech's, interleaved, so either branch the
      // engine takes is decoded (idle went on to a frame nobody had asked for: a miss).
      let idleGoesOn = engine.upcomingBaseFrames(2, queuedSpeech: false)
      var nearest: [BaseFrameRef] = []
      for step in 0..<2 {
        if step < idleGoesOn.count { nearest.append(idleGoesOn[step]) }
        if step < upcoming.count { nearest.append(upcoming[step]) }
      }
      frames += nearest + behind + intoTalking + Array(upcoming.dropFirst(2))
      frames += starts
    } else {
      frames += upcoming + starts
    }
    var seen = Set<BaseFrameRef>()
    return Array(frames.filter { seen.insert($0).inserted }.prefix(capacity))
  }
}
