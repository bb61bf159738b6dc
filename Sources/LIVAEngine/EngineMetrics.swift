/// Quality accounting over an engine's life, as a value the owner can read at any time.
public struct EngineMetrics: Hashable, Sendable {
  /// Frames drawn (base frames, with or without overlays).
  public var framesDrawn = 0
  /// Frames drawn with overlays.
  public var overlayFramesDrawn = 0
  /// Holds by reason, counted once per frame slot held (``HoldReason/notDue`` and
  /// ``HoldReason/paused`` are not counted).
  public var holds: [HoldReason.Kind: Int] = [:]
  /// Discontinuities in the drawn base frames: a frame that is neither the next frame of the
  /// same animation nor frame 0 of an animation starting where the last one ended, and not
  /// explained by a counted skip.
  public var pops = 0
  /// Overlays drawn on a base frame other than their matched one. Must stay 0.
  public var desyncs = 0
  /// Overlay frames never drawn because they were not ready (after the hold cap, or once all
  /// images of their chunk had arrived), invalid, or on a missing animation.
  public var skippedOverlays = 0
  /// Overlay frames never drawn because their time had passed (frame-clock catch-up, or the
  /// audio clock running ahead).
  public var lateFrames = 0
  /// Speech slots drawn on their base frame without (some of) their mouth: the image failed
  /// or was rejected, the frame object was rejected, it never came, or the chunk had no
  /// plan. Counted as drawn in the chunk's report.
  public var mouthlessFrames = 0
  /// Base frames passed over without being drawn (catch-up outside speech).
  public var skippedBaseFrames = 0
  /// Ticks whose frame-clock catch-up hit ``EngineConfiguration/maxCatchUpFrames``.
  public var catchUps = 0
  /// Ticks where the audio clock moved the overlay more than one frame ahead.
  public var audioDriftCorrections = 0
  /// Protocol warnings (wrapped or negative frame numbers, rejected chunks, gaps).
  public var protocolWarnings = 0
  /// Waits at a chunk boundary that outlasted ``EngineConfiguration/boundaryGrace``: the mouth
  /// closed and the body kept moving until the next chunk came (or the wait ended). Graceful
  /// waits, not freezes: the holds they began with are in ``holds`` (`waitingForNextChunk`).
  public var boundaryWaits = 0
  /// Frames drawn without a mouth during ``boundaryWaits``: the body moving, and walking back
  /// next to where the late chunk starts.
  public var boundaryWaitFrames = 0
  /// Chunks whose first overlay frame was drawn.
  public var chunksStarted = 0
  /// Chunks left after their last frame (or interrupted).
  public var chunksFinished = 0
  /// Messages interrupted.
  public var interrupts = 0

  /// Empty metrics.
  public init() {}

  /// Holds of one kind.
  public func holds(_ kind: HoldReason.Kind) -> Int { holds[kind, default: 0] }
}

/// A bounded summary of timing errors: count, extremes, and a histogram of absolute errors
/// in 1 ms buckets (up to 1 s; larger errors land in the last bucket) for percentiles.
public struct SyncErrorStats: Hashable, Sendable {
  /// Samples recorded.
  public private(set) var count = 0
  /// Largest absolute error, in seconds.
  public private(set) var maxAbsolute = 0.0
  /// Sum of errors (signed), in seconds; `sum / count` is the mean bias.
  public private(set) var sum = 0.0
  private var histogram = [Int](repeating: 0, count: 1001)

  /// Empty statistics.
  public init() {}

  /// Records one signed error, in seconds.
  public mutating func record(_ error: Double) {
    guard error.isFinite else { return }
    count += 1
    sum += error
    maxAbsolute = max(maxAbsolute, abs(error))
    histogram[min(Int((abs(error) * 1000).rounded(.down)), histogram.count - 1)] += 1
  }

  /// The mean signed error, in seconds (0 without samples).
  public var mean: Double { count == 0 ? 0 : sum / Double(count) }

  /// The `p`-quantile (0...1) of absolute errors, in seconds, to 1 ms resolution (the upper
  /// edge of its bucket, or the largest error if smaller); nil without samples, so that no
  /// measurement never reads as a perfect one.
  public func percentile(_ p: Double) -> Double? {
    guard count > 0 else { return nil }
    let rank = max(1, Int((p * Double(count)).rounded(.up)))
    var seen = 0
    for (bucket, samples) in histogram.enumerated() {
      seen += samples
      if seen >= rank { return min(Double(bucket + 1) / 1000, maxAbsolute) }
    }
    return maxAbsolute
  }
}
