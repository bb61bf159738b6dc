import Foundation
import LIVAEngine
import LIVAProtocol
import Testing

@testable import LIVA
@testable import LIVARecording

/// The measures CI's gates rest on, on hand-made inputs whose answers are known: percentiles of
/// timing errors, judder in the video and lip-sync from the written media.
@Suite("The recording's measures")
struct RecordingMeasuresTests {
  @Test("no samples is no measurement: every percentile is nil, not a perfect 0")
  func percentileWithoutSamples() {
    let empty = SyncErrorStats()
    #expect(empty.percentile(0.5) == nil)
    #expect(empty.percentile(0.95) == nil)
    let report = SessionReport.LipSync(empty)
    #expect(report.samples == 0)
    #expect(report.p95Milliseconds == nil)
    #expect(report.maxMilliseconds == nil)
  }

  @Test("percentiles of absolute errors, to the millisecond bucket above, capped by the largest")
  func percentilesOfKnownErrors() throws {
    var stats = SyncErrorStats()
    // 1..100 ms, half of them negative: absolute errors 1..100 ms.
    for ms in 1...100 { stats.record(Double(ms % 2 == 0 ? ms : -ms) / 1000) }
    #expect(stats.count == 100)
    // The 50th smallest is 50 ms, in the [50, 51) bucket: its upper edge.
    #expect(try #require(stats.percentile(0.5)) == 0.051)
    #expect(try #require(stats.percentile(0.95)) == 0.096)
    // The top bucket's edge (101 ms) is above every sample: the largest is returned.
    #expect(try #require(stats.percentile(1)) == 0.1)
    #expect(abs(stats.mean - 0.0005) < 1e-12)  // (2+4+...+100 - 1-3-...-99) / 100 / 1000
    // A non-finite error is not a sample.
    stats.record(.nan)
    #expect(stats.count == 100)
  }

  @Test("one sample: every percentile is that sample")
  func oneSample() {
    var stats = SyncErrorStats()
    stats.record(-0.0042)
    #expect(stats.percentile(0.05) == 0.0042)
    #expect(stats.percentile(0.95) == 0.0042)
  }

  func frame(
    _ index: Int, _ mode: EngineMode = .talking, animation: String = "talking_1_s_talking_1_e"
  )
    throws -> DrawnFrame
  {
    DrawnFrame(animation: try AnimationName(parsing: animation), index: index, mode: mode)
  }

  func counts(_ motion: VideoMotion) -> [Int] { [motion.compared, motion.repeats, motion.skips] }

  func motion(_ frames: [DrawnFrame]) -> VideoMotion {
    var motion = VideoMotion()
    for (a, b) in zip(frames, frames.dropFirst()) { motion.add(a, b) }
    return motion
  }

  @Test("judder: a frame shown twice is a repeat, a frame missed a skip, a walk back is motion")
  func videoMotion() throws {
    let smooth = motion(try [0, 1, 2, 3, 2, 1].map { try frame($0) })
    #expect(counts(smooth) == [5, 0, 0])
    let judder = motion(try [0, 1, 1, 2, 4, 5, 5, 5].map { try frame($0) })
    #expect(counts(judder) == [7, 3, 1])
  }

  @Test("judder is measured at full rate only, within one animation")
  func videoMotionIgnoresIdleAndAnimationChanges() throws {
    // Idle and waiting run at their own pace; a change of animation is not a step.
    let idle = motion(
      try [0, 0, 0, 3].map { try frame($0, .idle, animation: "idle_1_s_idle_1_e") })
    #expect(idle.compared == 0)
    let change = motion([
      try frame(5), try frame(0, animation: "talking_1_e_idle_1_s"),
      try frame(0, animation: "talking_1_e_idle_1_s"),
    ])
    #expect(counts(change) == [1, 1, 0])
  }

  let chunk = ChunkID(message: MessageID(0), index: 0)

  func segment(start: Double, offset: Double = 0, stoppedAt: Double? = nil)
    -> HeadlessAudioOutput.Segment
  {
    HeadlessAudioOutput.Segment(
      chunk: chunk, audio: Data(), start: start, offset: offset, duration: 2,
      stoppedAt: stoppedAt)
  }

  @Test("lip-sync from the media: each mouth's first video frame against the audio track")
  func outputLipSync() throws {
    // Audio placed at 1.000 s of the video (display clock 11.000, origin 10.000). Mouth k is
    // due at 1 + k/30 s: video frame 30 + k. Mouth 0 on time, mouth 3 one frame late (33 ms),
    // mouth 6 shown again later (only its first frame counts), mouth 9 before its audio began.
    let mouths = [
      RecordingSurface.VideoMouth(number: 30, chunk: chunk, overlayIndex: 0),
      RecordingSurface.VideoMouth(number: 34, chunk: chunk, overlayIndex: 3),
      RecordingSurface.VideoMouth(number: 36, chunk: chunk, overlayIndex: 6),
      RecordingSurface.VideoMouth(number: 40, chunk: chunk, overlayIndex: 6),
      RecordingSurface.VideoMouth(number: 20, chunk: chunk, overlayIndex: 9),
    ]
    let stats = OutputLipSync.measure(
      mouths: mouths, segments: [segment(start: 11.0004)], origin: 10)
    #expect(stats.count == 3)
    #expect(abs(stats.maxAbsolute - 1.0 / 30) < 1e-9)
    #expect(try #require(stats.percentile(0.5)) == 0.001)  // mouths 0 and 6: 0 ms, bucket [0, 1)
    // A mouth of a chunk that was never played is not measured; nor one after its stop.
    let other = RecordingSurface.VideoMouth(
      number: 31, chunk: ChunkID(message: MessageID(1), index: 0), overlayIndex: 0)
    let stopped = OutputLipSync.measure(
      mouths: [mouths[0], mouths[1], other], segments: [segment(start: 11, stoppedAt: 11.05)],
      origin: 10)
    #expect(stopped.count == 1)
  }
}
