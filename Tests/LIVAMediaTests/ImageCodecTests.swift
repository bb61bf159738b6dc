import Foundation
import LIVATestSupport
import Testing

@testable import LIVAMedia

@Suite("Image codecs")
struct ImageCodecTests {
  let codec = SystemImageCodec()

  @Test("PNG round trip is exact", arguments: [(1, 1), (3, 2), (64, 40), (101, 79)])
  func pngRoundTrip(size: (Int, Int)) throws {
    let image = TestSupport.pattern(width: size.0, height: size.1)
    let encoded = try codec.encode(image, as: .png)
    #expect(ImageFormat(sniffing: encoded) == .png)
    #expect(try codec.decode(encoded) == image)
    var fast = SystemImageCodec()
    fast.pngFavoursSpeed = true  // the recorder's setting: still lossless
    #expect(try codec.decode(try fast.encode(image, as: .png)) == image)
  }

  @Test(
    "lossless WebP round trip is exact for every visible pixel",
    arguments: [(1, 1), (64, 40), (100, 80)])
  func webpLosslessRoundTrip(size: (Int, Int)) throws {
    let image = TestSupport.pattern(width: size.0, height: size.1)
    let encoded = try codec.encode(image, as: .webp)
    #expect(ImageFormat(sniffing: encoded) == .webp)
    // libwebp's simple lossless API may change the colour under fully transparent pixels
    // (its `exact` option is off); those are invisible, so compare with them cleared.
    #expect(
      TestSupport.clearingInvisible(try codec.decode(encoded))
        == TestSupport.clearingInvisible(image))
  }

  @Test("lossy WebP round trip stays close")
  func webpLossyRoundTrip() throws {
    let image = RGBAImage(width: 100, height: 80, fill: RGBA(200, 40, 90, 255))
    let encoded = try codec.encode(image, as: .webp, quality: 90)
    let decoded = try codec.decode(encoded)
    #expect(decoded.width == 100 && decoded.height == 80)
    #expect(TestSupport.maxDifference(decoded, image) <= 8)
  }

  @Test("JPEG fixture decodes to opaque RGBA close to its source gradient")
  func jpegDecode() throws {
    let image = try codec.decode(try TestSupport.fixture("gradient-24x16.jpg"))
    #expect(image.width == 24 && image.height == 16)
    // The fixture was made from the gradient (x*10, y*15, 128) at quality 95.
    var worst = 0
    for y in 0..<16 {
      for x in 0..<24 {
        let p = image[x, y]
        #expect(p.a == 255)
        worst = max(worst, abs(Int(p.r) - x * 10), abs(Int(p.g) - y * 15), abs(Int(p.b) - 128))
      }
    }
    #expect(worst <= 12)
  }

  #if os(Linux)
    @Test("without libwebp, WebP is a typed error and PNG still works")
    func missingWebPLibrary() throws {
      let webp = try codec.encode(TestSupport.pattern(width: 4, height: 4), as: .webp)
      let png = try codec.encode(TestSupport.pattern(width: 4, height: 4), as: .png)
      let without = SystemImageCodec(webPLibraryNames: ["libwebp-not-installed.so.7"])
      #expect(!without.supportsWebP && codec.supportsWebP)
      #expect {
        try without.decode(webp)
      } throws: { ($0 as? LIVAMediaError)?.code == .libraryUnavailable }
      #expect {
        try without.encode(RGBAImage(width: 2, height: 2), as: .webp)
      } throws: { ($0 as? LIVAMediaError)?.code == .libraryUnavailable }
      #expect(try without.decode(png) == TestSupport.pattern(width: 4, height: 4))
    }
  #endif

  @Test("JPEG encoding is refused with a typed error")
  func jpegEncodeRefused() {
    #expect(throws: LIVAMediaError.self) {
      try codec.encode(RGBAImage(width: 2, height: 2), as: .jpeg)
    }
  }

  @Test("unknown bytes are unsupportedFormat", arguments: [[], [0x00], Array("GIF89a......".utf8)])
  func unknownFormat(bytes: [UInt8]) {
    #expect {
      try codec.decode(Data(bytes))
    } throws: { ($0 as? LIVAMediaError)?.code == .unsupportedFormat }
  }

  @Test("the pixel-count limit is checked before decoding", arguments: ImageFormat.allCases)
  func pixelLimit(format: ImageFormat) throws {
    let data = try encoded(TestSupport.pattern(width: 64, height: 40), format)
    let size = try codec.decode(data)
    let pixels = size.width * size.height
    #expect {
      try codec.decode(data, limits: DecodeLimits(maximumPixelCount: pixels - 1))
    } throws: { ($0 as? LIVAMediaError)?.code == .imageTooLarge }
    #expect(try codec.decode(data, limits: DecodeLimits(maximumPixelCount: pixels)) == size)
  }

  @Test(
    "every prefix of a valid file is a typed error, or (a PNG short of its end chunk) the image",
    arguments: Variant.allCases)
  func everyPrefix(variant: Variant) throws {
    let data = try variant.data(codec)
    let whole = try variant.checkedDecode(codec, data)
    var errors = 0
    for length in 0..<data.count {
      do {
        let image = try codec.decode(data.prefix(length))
        // Only the end can be missing: what decodes is the whole picture.
        #expect(image == whole, "\(length) of \(data.count) bytes")
      } catch let error as LIVAMediaError {
        errors += 1
        // Too short to recognise is unsupported; recognised but cut short is truncated.
        let expected: LIVAMediaError.Code =
          ImageFormat(sniffing: data.prefix(length)) == nil ? .unsupportedFormat : .truncatedData
        #expect(error.code == expected, "\(length) of \(data.count) bytes: \(error)")
      } catch {
        Issue.record("\(length) of \(data.count) bytes: untyped \(error)")
      }
    }
    // Cutting off the end must be noticed at least for most prefixes.
    #expect(errors > data.count / 2)
  }

  @Test("truncation is reported as truncatedData", arguments: [ImageFormat.png, .webp, .jpeg])
  func truncationCode(format: ImageFormat) throws {
    let data = try encoded(TestSupport.pattern(width: 20, height: 12), format)
    for length in [data.count * 2 / 3, data.count - 20] {
      #expect {
        try codec.decode(data.prefix(length))
      } throws: { ($0 as? LIVAMediaError)?.code == .truncatedData }
    }
  }

  /// A lossless WebP made by another encoder from the formula below (raw RGBA through
  /// `ffmpeg -f rawvideo -pix_fmt rgba -s 24x16 -i - -c:v libwebp -lossless 1`), so that the
  /// decoder is checked against pixels known without it: a decoder that swapped channels or
  /// dropped alpha would round-trip its own output but fail here.
  @Test("a WebP written by another encoder decodes to the pixels it was made from")
  func webPFromElsewhere() throws {
    let image = try codec.decode(TestSupport.fixture("pattern-24x16-lossless.webp"))
    #expect(image.width == 24 && image.height == 16)
    var wrong: [String] = []
    for y in 0..<16 {
      for x in 0..<24 {
        let want = RGBA(UInt8(x * 10), UInt8(y * 15), UInt8((x + y) * 5), UInt8(255 - x * 4))
        if image[x, y] != want { wrong.append("(\(x), \(y)): \(image[x, y]), not \(want)") }
      }
    }
    #expect(wrong.isEmpty, "\(wrong.count) pixels: \(wrong.prefix(3))")
  }

  @Test(
    "corrupt bytes give a typed error or an image; a PNG that decodes is the original",
    arguments: Variant.allCases)
  func corruptBytes(variant: Variant) throws {
    let data = try variant.data(codec)
    let whole = try variant.checkedDecode(codec, data)
    var generator = SplitMix64(seed: RunSeed.seeds(1)[0] ^ 0x5EED)
    var errors = 0
    for round in 0..<300 {
      var bytes = [UInt8](data)
      // Flip 1 to 8 bytes past the magic number.
      for _ in 0...(round % 8) {
        let index = 12 + Int(generator.next() % UInt64(bytes.count - 12))
        bytes[index] ^= UInt8(truncatingIfNeeded: generator.next() | 1)
      }
      do {
        let image = try codec.decode(Data(bytes))
        #expect(image.byteCount == image.width * image.height * 4)
        if variant == .png {
          // Every chunk but the end one is under a CRC: damage the decoder accepted lay
          // where it does not read, so the pixels are the original's.
          #expect(image == whole, "round \(round)")
        }
      } catch let error as LIVAMediaError {
        errors += 1
        // Damaged dimensions may ask for too many pixels; all else is damage or a cut.
        #expect(
          [.corruptData, .truncatedData, .imageTooLarge].contains(error.code),
          "round \(round): \(error)")
      } catch {
        Issue.record("round \(round): untyped \(error)")
      }
    }
    if variant == .png || variant == .webpLossless {
      // PNG's CRCs and lossless WebP's strict bitstream notice most damage.
      #expect(errors > 100)
    }
  }

  @Test("ImageFormat recognises magic numbers")
  func sniffing() throws {
    let image = TestSupport.pattern(width: 4, height: 4)
    #expect(ImageFormat(sniffing: try codec.encode(image, as: .png)) == .png)
    #expect(ImageFormat(sniffing: try codec.encode(image, as: .webp)) == .webp)
    #expect(ImageFormat(sniffing: try TestSupport.fixture("gradient-24x16.jpg")) == .jpeg)
    #expect(ImageFormat(sniffing: Data("RIFF....WAVE".utf8)) == nil)
  }

  @Test("errors carry code, message and source")
  func errorDescription() {
    let error = LIVAMediaError(.corruptData, "bad", source: "png", offset: 12)
    #expect(error.description == "corruptData: bad (png at byte 12)")
  }

  private func encoded(_ image: RGBAImage, _ format: ImageFormat) throws -> Data {
    switch format {
    case .jpeg:
      // No JPEG encoder: use the committed fixture.
      return try TestSupport.fixture("gradient-24x16.jpg")
    case .png, .webp:
      return try codec.encode(image, as: format)
    }
  }
}

/// Encoded inputs for the robustness tests.
enum Variant: String, CaseIterable, Sendable {
  case png
  case webpLossless
  case webpLossy
  case jpeg

  func data(_ codec: SystemImageCodec) throws -> Data {
    let image = TestSupport.pattern(width: 20, height: 12)
    switch self {
    case .png: return try codec.encode(image, as: .png)
    case .webpLossless: return try codec.encode(image, as: .webp)
    case .webpLossy: return try codec.encode(image, as: .webp, quality: 75)
    case .jpeg: return try TestSupport.fixture("gradient-24x16.jpg")
    }
  }

  /// `data` (this variant's whole file) decoded, checked against the pixels it was made
  /// from: exactly for the lossless formats (alpha-0 colour aside for WebP), within a mean
  /// error of 12 a channel for lossy WebP, and the fixture's gradient for JPEG. A decoder
  /// returning zeros or swapped channels fails here.
  func checkedDecode(_ codec: SystemImageCodec, _ data: Data) throws -> RGBAImage {
    let image = try codec.decode(data)
    let source = TestSupport.pattern(width: 20, height: 12)
    switch self {
    case .png:
      #expect(image == source)
    case .webpLossless:
      #expect(TestSupport.clearingInvisible(image) == TestSupport.clearingInvisible(source))
    case .webpLossy:
      #expect(image.width == 20 && image.height == 12)
      let total = zip(image.pixels, source.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
      #expect(total <= 12 * source.pixels.count, "mean error \(total / source.pixels.count)")
    case .jpeg:
      #expect(image.width == 24 && image.height == 16)
      var worst = 0
      for y in 0..<image.height {
        for x in 0..<image.width {
          let p = image[x, y]
          worst = max(
            worst, abs(Int(p.r) - x * 10), abs(Int(p.g) - y * 15), abs(Int(p.b) - 128),
            255 - Int(p.a))
        }
      }
      #expect(worst <= 12)
    }
    return image
  }
}
