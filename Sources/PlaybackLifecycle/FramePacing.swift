/// A frame-rate range to ask the display for: the three numbers of `CAFrameRateRange`.
public struct FrameRateRange: Sendable, Hashable {
  /// The lowest rate the content can live with.
  public var minimum: Double
  /// The highest rate worth having.
  public var maximum: Double
  /// The rate asked for.
  public var preferred: Double

  /// Makes a range.
  public init(minimum: Double, maximum: Double, preferred: Double) {
    self.minimum = minimum
    self.maximum = maximum
    self.preferred = preferred
  }
}

/// Display ticks for content that changes at its own rate (LIVA's 30 fps speech and 10 fps
/// idle, a PNGine animation's target rate), on 60 Hz screens and ProMotion ones (up to 120 Hz,
/// in steps of 120 / n).
///
/// The rule: ask for the lowest rate the display offers that is a whole multiple of the
/// content's rate and at least twice it, so that every content frame lands on a tick and the
/// engine can read the audio clock half a frame ahead; when the display offers none, its
/// maximum. The battery gets the rest.
public enum FramePacing {
  /// The rates a display whose maximum is `displayMaximum` offers: the whole ones of
  /// `displayMaximum / n`, down to 10 Hz.
  public static func offeredRates(displayMaximum: Double) -> [Double] {
    guard displayMaximum > 0 else { return [] }
    return (1...12).map { displayMaximum / Double($0) }
      .filter { $0 >= 10 - 1e-9 && abs($0 - $0.rounded()) < 1e-9 }
  }

  /// The range to ask for content changing `contentRate` times a second.
  public static func preferredRange(contentRate: Double, displayMaximum: Double)
    -> FrameRateRange
  {
    let rates = offeredRates(displayMaximum: displayMaximum).sorted()
    let fitting = rates.first { rate in
      let ratio = rate / contentRate
      return ratio >= 2 - 1e-9 && abs(ratio - ratio.rounded()) < 1e-6
    }
    let preferred = fitting ?? displayMaximum
    return FrameRateRange(
      minimum: min(preferred, contentRate), maximum: preferred, preferred: preferred)
  }

  /// How many display ticks each content frame lasts at `displayRate`: whole when the rates
  /// divide, else the average (a cadence that alternates, e.g. 2.5 for 24 fps at 60 Hz).
  public static func ticksPerFrame(displayRate: Double, contentRate: Double) -> Double {
    displayRate / contentRate
  }
}
