import LIVAMedia
import Testing

@testable import LIVAPlatform

@Suite("Pixel hand-off")
struct PacingAndHandoffTests {
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

@Suite("Purge steps")
struct PurgeStepTests {
  @Test("each purge level's steps: the window ahead stays in the foreground only")
  func levels() {
    #expect(
      PurgeStep.steps(for: .light) == [.framePoolSpares, .playedOverlays, .decodedFramesBehind])
    #expect(PurgeStep.steps(for: .deep) == [.framePoolSpares, .playedOverlays, .decodedFrames])
  }
}
