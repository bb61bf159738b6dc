import Foundation

/// How much PCM one MP3 chunk may become, decided from its frame headers before anything is
/// decoded. A platform decoder that turns MP3 into Float32 samples would otherwise size its
/// buffers from what the file claims: a 2 MiB MP3 at a low bit rate is 10 minutes, ~370 MB.
///
/// The budget is in seconds: a chunk longer than ``maximumSeconds`` is refused
/// (`limitExceeded`); one within it gets buffer capacities from its real frame count, converted
/// to whole frames with checks (no trapping conversion).
public struct PCMBudget: Hashable, Sendable {
  /// The longest chunk decoded. The default, 60 s, is several times a production chunk
  /// (a sentence, 2 to 10 s) and holds at most 60 × 48,000 × 2 × 4 bytes ≈ 22 MiB of PCM.
  public var maximumSeconds: Double

  /// A budget of `maximumSeconds` a chunk.
  public init(maximumSeconds: Double = 60) {
    self.maximumSeconds = maximumSeconds
  }

  /// The most frames (samples per channel) the stream of `timing` may decode to at
  /// `sampleRate`: every audio frame found (encoder delay and padding included), rounded up,
  /// plus one MP3 frame of slack for a decoder's priming. Throws `limitExceeded` when the
  /// stream is longer than ``maximumSeconds``, `invalidArgument` for a rate that is not a
  /// positive finite number.
  public func frames(for timing: MP3Timing, at sampleRate: Double) throws(LIVAMediaError) -> Int {
    guard sampleRate.isFinite, sampleRate > 0, sampleRate <= 768_000 else {
      throw LIVAMediaError(.invalidArgument, "sample rate \(sampleRate)", source: "mp3")
    }
    let samples = Double(timing.frameCount) * Double(timing.samplesPerFrame)
    let seconds = samples / Double(max(1, timing.sampleRate))
    guard seconds <= maximumSeconds else {
      throw LIVAMediaError(
        .limitExceeded,
        "an MP3 chunk of \(Int(seconds.rounded())) s exceeds the \(Int(maximumSeconds)) s budget",
        source: "mp3")
    }
    return Int((seconds * sampleRate).rounded(.up)) + timing.samplesPerFrame
  }

  /// ``frames(for:at:)`` of `data`, parsed; throws `notMP3` when it is no MP3.
  public func frames(for data: Data, at sampleRate: Double) throws(LIVAMediaError) -> Int {
    try frames(for: MP3Timing(parsing: data), at: sampleRate)
  }
}
