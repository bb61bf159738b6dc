import Foundation
import LIVAEngine
import LIVAProtocol
import Testing

@testable import LIVA
@testable import LIVARecording

/// The report's silent-mouth measurement (what an app must never show: no mouth shown while no audio
/// plays for more than 200 ms), computed from presented frames and played audio alone.
@Suite("Silent mouths in a session report")
struct SilentMouthTests {
  /// A timeline entry at `time`, with a mouth or without.
  func entry(_ time: Double, mouth: Bool) -> RecordingSurface.TimelineEntry {
    RecordingSurface.TimelineEntry(
      time: time, mode: "talking", animation: "talking_1_s_talking_1_e", index: 0,
      overlays: mouth ? ["m"] : [], chunk: mouth ? "m0/c0" : nil, frame: mouth ? 0 : nil,
      audioPosition: nil)
  }

  /// Frames every 1/30 s from `start` to `end` (exclusive), with or without a mouth.
  func frames(_ start: Double, _ end: Double, mouth: Bool) -> [RecordingSurface.TimelineEntry] {
    stride(from: 0, to: Int(((end - start) * 30).rounded()), by: 1).map {
      entry(start + Double($0) / 30, mouth: mouth)
    }
  }

  func segment(start: Double, duration: Double, offset: Double = 0, stoppedAt: Double? = nil)
    -> HeadlessAudioOutput.Segment
  {
    HeadlessAudioOutput.Segment(
      chunk: ChunkID(message: MessageID(0), index: 0), audio: Data(), start: start,
      offset: offset, duration: duration, stoppedAt: stoppedAt)
  }

  struct Case: Sendable, CustomTestStringConvertible {
    var name: String
    var timeline: [RecordingSurface.TimelineEntry]
    var segments: [HeadlessAudioOutput.Segment]
    var skew = 0.0
    var longest: Double
    var total: Double
    var over: Int
    var testDescription: String { name }
  }

  var cases: [Case] {
    [
      Case(
        name: "mouths within the audio",
        timeline: frames(1, 2, mouth: true) + [entry(2, mouth: false)],
        segments: [segment(start: 1, duration: 1)], longest: 0, total: 0, over: 0),
      Case(
        name: "a late chunk held with the mouth open: 1.5 s",
        timeline: frames(1, 2, mouth: true) + frames(2, 3.5, mouth: true)
          + frames(3.5, 4.5, mouth: true) + [entry(4.5, mouth: false)],
        segments: [segment(start: 1, duration: 1), segment(start: 3.5, duration: 1)],
        longest: 1500, total: 1500, over: 1),
      Case(
        name: "the mouth closes 0.2 s into the silence",
        timeline: frames(1, 2.2, mouth: true) + frames(2.2, 3.5, mouth: false)
          + frames(3.5, 4.5, mouth: true) + [entry(4.5, mouth: false)],
        segments: [segment(start: 1, duration: 1), segment(start: 3.5, duration: 1)],
        longest: 200, total: 200, over: 1),
      Case(
        name: "two stretches, one split by a frame without a mouth",
        timeline: frames(1, 2.1, mouth: true) + [entry(2.1, mouth: false)]
          + frames(2.2, 2.25, mouth: true) + [entry(2.25, mouth: false)],
        segments: [segment(start: 1, duration: 1)], longest: 100, total: 150, over: 2),
      Case(
        name: "a chunk stopped early (interrupted) is silent from then",
        timeline: frames(1, 1.6, mouth: true) + [entry(1.6, mouth: false)],
        segments: [segment(start: 1, duration: 1, stoppedAt: 1.5)], longest: 100, total: 100,
        over: 1),
      Case(
        name: "audio started 0.4 s in, on a clock 25 % fast, plays 0.48 s of display time",
        timeline: frames(1, 1.6, mouth: true) + [entry(1.6, mouth: false)],
        segments: [segment(start: 1, duration: 1, offset: 0.4)], skew: 0.25, longest: 120,
        total: 120, over: 1),
    ]
  }

  @Test("silent mouths: the stretches of a mouth on screen outside every audio segment")
  func measure() {
    for test in cases {
      let result = SilentMouth.measure(
        timeline: test.timeline, segments: test.segments, clockSkew: test.skew)
      #expect(abs(result.longestMilliseconds - test.longest) < 1e-6, "\(test.name): \(result)")
      #expect(abs(result.totalMilliseconds - test.total) < 1e-6, "\(test.name): \(result)")
      #expect(result.stretchesOverThreshold == test.over, "\(test.name): \(result)")
    }
  }
}
