import Foundation
import LIVA
import LIVAEngine
import LIVAProtocol
import LIVARecording
import Testing

@Suite("Lip-sync measured from the written media")
struct OutputLipSyncTests {
  let chunk = ChunkID(message: MessageID(0), index: 0)

  func segment(start: Double, offset: Double = 0, stoppedAt: Double? = nil)
    -> HeadlessAudioOutput.Segment
  {
    // Built the way the output records it: start it, then read its segment back.
    let output = HeadlessAudioOutput()
    output.start(chunk, audio: Data(), offset: offset, at: start)
    if let stoppedAt { output.stop(chunk, at: stoppedAt) }
    return output.segments[0]
  }

  @Test("each mouth's first video frame against the track's position in its chunk then")
  func measures() {
    // The chunk's audio starts 0.5 s into the video: video frame 18 (0.6 s) hears 0.1 s of it.
    let segments = [segment(start: 1.0)]
    let mouths = [
      RecordingSurface.VideoMouth(number: 18, chunk: chunk, overlayIndex: 3),  // on time
      RecordingSurface.VideoMouth(number: 19, chunk: chunk, overlayIndex: 3),  // repeat: ignored
      RecordingSurface.VideoMouth(number: 21, chunk: chunk, overlayIndex: 4),  // 2 frames late
    ]
    let stats = OutputLipSync.measure(mouths: mouths, segments: segments, origin: 0.5)
    #expect(stats.count == 2)
    #expect(abs(stats.maxAbsolute - 2.0 / 30) < 1e-9)
    #expect(abs(stats.mean - 1.0 / 30) < 1e-9)
  }

  @Test("mouths outside their chunk's audio (before it, after it stopped) are not measured")
  func outsideAudio() {
    let segments = [segment(start: 1.0, offset: 0.2, stoppedAt: 1.5)]
    let mouths = [
      RecordingSurface.VideoMouth(number: 10, chunk: chunk, overlayIndex: 0),  // 0.333 s: before
      RecordingSurface.VideoMouth(number: 20, chunk: chunk, overlayIndex: 12),  // 0.2 + 0.167
      RecordingSurface.VideoMouth(number: 40, chunk: chunk, overlayIndex: 30),  // after the stop
    ]
    let stats = OutputLipSync.measure(mouths: mouths, segments: segments, origin: 0.5)
    #expect(stats.count == 1)
    #expect(abs(stats.mean - ((0.2 + 1.0 / 6) - 12.0 / 30)) < 1e-9)
  }
}
