import LIVAMedia
import Testing

@testable import LIVAPlatform

@Suite("Frame pacing and pixel hand-off")
struct PacingAndHandoffTests {
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

  @Test("an opaque frame is handed over as it is, with its alpha skipped")
  func opaque() {
    let pixels: [UInt8] = [10, 20, 30, 255, 40, 50, 60, 255]
    let handoff = PixelHandoff(width: 2, height: 1, straightRGBA: pixels)
    #expect(handoff.alpha == .opaque && handoff.pixels == pixels && handoff.bytesPerRow == 8)
  }

  @Test(
    "a translucent frame is premultiplied, rounded to nearest",
    arguments: [
      ([200, 100, 50, 128], [100, 50, 25, 128]), ([255, 255, 255, 0], [0, 0, 0, 0]),
      ([255, 1, 254, 1], [1, 0, 1, 1]), ([90, 90, 90, 255], [90, 90, 90, 255]),
    ] as [([UInt8], [UInt8])])
  func premultiplied(pixel: [UInt8], expected: [UInt8]) {
    // A second, translucent pixel makes the frame translucent.
    let handoff = PixelHandoff(width: 2, height: 1, straightRGBA: pixel + [0, 0, 0, 0])
    #expect(handoff.alpha == .premultiplied)
    #expect(Array(handoff.pixels.prefix(4)) == expected)
  }
}

@Suite("Layer gravity")
struct LayerGravityTests {
  @Test("each content mode has its layer gravity")
  func gravity() {
    #expect(LayerGravity(.aspectFit) == .resizeAspect)
    #expect(LayerGravity(.aspectFill) == .resizeAspectFill)
    #expect(LayerGravity(.stretch) == .resize)
  }
}
