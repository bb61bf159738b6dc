import LIVATestSupport
import PngineKit
import Testing

/// `RGBAImage.pngData()` (PngineKit's own PNG writer: snapshots, `pngine render`), read back by
/// a decoder that shares no code with it (``IndependentPNG``).
@Suite struct PNGOutputTests {
  @Test("snapshots written as PNG decode, elsewhere, to the same RGBA pixels")
  func independentlyDecoded() throws {
    try requireTool(IndependentPNG.isAvailable, "python3")
    var generator = LIVATestSupport.SplitMix64(seed: RunSeed.seeds(1)[0])
    let (width, height) = (29, 17)
    // Random pixels, alpha included: every channel's place shows.
    let pixels = (0..<(width * height * 4)).map { _ in
      UInt8(truncatingIfNeeded: generator.next())
    }
    let image = RGBAImage(width: width, height: height, pixels: pixels)
    #expect(
      try IndependentPNG.read(image.pngData())
        == IndependentPNG.expected(width: width, height: height, pixels: pixels))
  }
}
