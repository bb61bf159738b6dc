import LIVAEngine

/// A stretch of time in which the picture should have changed and did not.
public struct Freeze: Sendable, Hashable, Codable {
  /// Why the picture froze, when known.
  public enum Cause: String, Sendable, Hashable, Codable {
    /// The display did not tick (the app's main thread or the render path stalled).
    case displayStall
    /// A mouth was due and its image was not decoded yet.
    case overlayNotReady
    /// The last frame of a chunk was held waiting for the next chunk.
    case waitingForNextChunk
    /// No base animation could be drawn.
    case noBaseAnimation
    /// The base frame to draw was not decoded in memory.
    case baseFrameMiss
    /// An overlay image left memory between the engine's decision and the draw.
    case overlayMiss
  }

  /// When it started, in display time (seconds).
  public var start: Double
  /// How long it lasted, in seconds.
  public var duration: Double
  /// Why.
  public var cause: Cause

  /// Creates a freeze.
  public init(start: Double, duration: Double, cause: Cause) {
    self.start = start
    self.duration = duration
    self.cause = cause
  }
}

/// Finds freezes and counts frames per second, from display ticks and what each tick did.
///
/// A pure value (time is an argument). A freeze is either a gap between two display ticks
/// longer than ``threshold`` (`displayStall`), or the time from the first tick that had to hold
/// the picture (a frame was due and could not be drawn) to the next frame presented, when
/// longer than ``threshold``. A pause is not a freeze, nor are the ticks between frames of a
/// slower animation (idle at 10 fps).
///
/// Nor is a wait at a chunk boundary that ends within ``boundaryWaitLimit``: the engine holds
/// the last frame of a chunk while the next one is late, for its
/// ``LIVAEngine/EngineConfiguration/boundaryGrace`` at most, then closes the mouth and keeps
/// the body moving (frames are presented again). Such waits are counted apart
/// (``boundaryWaits``); a hold at a boundary that lasts longer is a freeze (a frozen open
/// mouth).
public struct FreezeDetector: Sendable {
  /// Seconds of ``framesPerSecond`` kept: 600 (ten minutes); older seconds are dropped.
  public static let framesPerSecondLimit = 600

  /// The shortest freeze recorded, in seconds (default 0.1: seeds 002 and 003's 100 ms).
  public var threshold: Double
  /// The longest hold at a chunk boundary (cause ``Freeze/Cause/waitingForNextChunk``) that is
  /// a wait, not a freeze, in seconds. Default 0.25: the engine's default
  /// ``LIVAEngine/EngineConfiguration/boundaryGrace`` (0.2 s) plus a frame slot and a display
  /// tick, the most by which the hold as the display sees it can exceed the grace.
  public var boundaryWaitLimit: Double
  /// The freezes found, oldest first (the last 1,000).
  public private(set) var freezes: [Freeze] = []
  /// Freezes found in all.
  public private(set) var count = 0
  /// The longest freeze, in seconds.
  public private(set) var longest = 0.0
  /// Waits at chunk boundaries longer than ``threshold`` that ended within
  /// ``boundaryWaitLimit`` (the next chunk came, or the mouth closed and the body moved on):
  /// graceful waits, not freezes, oldest first (the last 1,000). `duration` is how long the
  /// picture held.
  public private(set) var boundaryWaits: [Freeze] = []
  /// Boundary waits found in all.
  public private(set) var boundaryWaitCount = 0
  /// Frames presented in each second of display time, for the last
  /// ``framesPerSecondLimit`` seconds: entry `i` is second ``framesPerSecondStart`` `+ i` since
  /// the first tick.
  public private(set) var framesPerSecond: [Int] = []
  /// The second (since the first tick) that ``framesPerSecond`` starts at: 0 until
  /// ``framesPerSecondLimit`` seconds have passed.
  public private(set) var framesPerSecondStart = 0

  private var firstTick: Double?
  private var lastTick: Double?
  private var heldSince: (time: Double, cause: Freeze.Cause)?

  /// Creates a detector.
  public init(threshold: Double = 0.1, boundaryWaitLimit: Double = 0.25) {
    self.threshold = threshold
    self.boundaryWaitLimit = boundaryWaitLimit
  }

  /// A display tick at `now`.
  public mutating func tick(at now: Double) {
    if firstTick == nil { firstTick = now }
    if let lastTick, now - lastTick > threshold {
      record(Freeze(start: lastTick, duration: now - lastTick, cause: .displayStall))
      // The stall explains the stretch so far; a hold counts again from here.
      if let held = heldSince { heldSince = (now, held.cause) }
    }
    lastTick = max(lastTick ?? now, now)
  }

  /// The tick at `now` had to hold the picture for `cause`.
  public mutating func held(at now: Double, cause: Freeze.Cause) {
    if heldSince == nil { heldSince = (now, cause) }
  }

  /// Playback was paused: an ongoing hold is not a freeze.
  public mutating func paused() { heldSince = nil }

  /// A frame was presented at `now`.
  public mutating func presented(at now: Double) {
    if let held = heldSince, now - held.time > threshold {
      let hold = Freeze(start: held.time, duration: now - held.time, cause: held.cause)
      if held.cause == .waitingForNextChunk, hold.duration <= boundaryWaitLimit + 1e-9 {
        boundaryWaitCount += 1
        boundaryWaits.append(hold)
        if boundaryWaits.count > 1_000 { boundaryWaits.removeFirst() }
      } else {
        record(hold)
      }
    }
    heldSince = nil
    guard let firstTick else { return }
    let second = max(0, Int((now - firstTick).rounded(.down)))
    guard second >= framesPerSecondStart else { return }  // older than the seconds kept
    let index = second - framesPerSecondStart
    if framesPerSecond.count <= index {
      framesPerSecond += Array(repeating: 0, count: index + 1 - framesPerSecond.count)
    }
    framesPerSecond[index] += 1
    let excess = framesPerSecond.count - Self.framesPerSecondLimit
    if excess > 0 {
      framesPerSecond.removeFirst(excess)
      framesPerSecondStart += excess
    }
  }

  private mutating func record(_ freeze: Freeze) {
    count += 1
    longest = max(longest, freeze.duration)
    freezes.append(freeze)
    if freezes.count > 1_000 { freezes.removeFirst() }
  }
}
