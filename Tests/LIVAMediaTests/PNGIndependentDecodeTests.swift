#if os(Linux)
  import Foundation
  import LIVATestSupport
  import Testing

  @testable import LIVAMedia

  /// The PNG files LIVAMedia writes (libpng, through PNGCodec), read back by a decoder that
  /// shares no code with it (``IndependentPNG``).
  @Suite("PNG output, read by an independent decoder")
  struct PNGIndependentDecodeTests {
    @Test(
      "LIVAMedia's PNG encoder, fast and small, translucent and opaque",
      arguments: [(false, false), (false, true), (true, false), (true, true)])
    func encoderOutput(fast: Bool, opaque: Bool) throws {
      try requireTool(IndependentPNG.isAvailable, "python3")
      // Gradients and noise: the encoder's filter choice varies by row.
      let image = TestSupport.pattern(width: 37, height: 23, seed: 11, opaque: opaque)
      let png = try PNGCodec.encode(image, fast: fast)
      #expect(
        try IndependentPNG.read([UInt8](png))
          == IndependentPNG.expected(width: 37, height: 23, pixels: image.pixels))
    }
  }
#endif
