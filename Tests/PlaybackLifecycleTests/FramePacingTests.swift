import PlaybackLifecycle
import Testing

@Suite("Frame pacing")
struct FramePacingTests {
  @Test(
    "the display rate asked for each content rate",
    arguments: [
      // (content fps, display maximum, preferred, minimum)
      (30.0, 60.0, 60.0, 30.0), (30.0, 120.0, 60.0, 30.0), (10.0, 60.0, 20.0, 10.0),
      (10.0, 120.0, 20.0, 10.0), (24.0, 120.0, 120.0, 24.0), (24.0, 60.0, 60.0, 24.0),
      (60.0, 120.0, 120.0, 60.0), (60.0, 60.0, 60.0, 60.0), (15.0, 60.0, 30.0, 15.0),
    ] as [(Double, Double, Double, Double)])
  func preferred(content: Double, display: Double, preferred: Double, minimum: Double) {
    let range = FramePacing.preferredRange(contentRate: content, displayMaximum: display)
    #expect(range.preferred == preferred)
    #expect(range.minimum == minimum)
    #expect(range.maximum == preferred)
  }

  @Test("ProMotion's offered rates")
  func offered() {
    #expect(
      FramePacing.offeredRates(displayMaximum: 120) == [120, 60, 40, 30, 24, 20, 15, 12, 10])
    #expect(FramePacing.ticksPerFrame(displayRate: 120, contentRate: 30) == 4)
  }
}
