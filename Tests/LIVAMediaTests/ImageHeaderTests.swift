import Foundation
import LIVAProtocol
import Testing

@testable import LIVAMedia

/// Base frames are checked at download by their header: a damaged frame or one too large to
/// hold decoded is refused before it is cached (a PNG signature followed by zeros used to be
/// cached and skipped by the idle loop on every pass, forever).
@Suite("Image headers: sizes read without decoding; damaged or oversized base frames refused")
struct ImageHeaderTests {
  let codec = SystemImageCodec()

  @Test("a JPEG's start-of-frame size is the decoded image's")
  func jpegSize() throws {
    let data = try TestSupport.fixture("gradient-24x16.jpg")
    let header = try #require(ImageHeader(reading: data))
    let decoded = try codec.decode(data)
    #expect(header.format == .jpeg)
    #expect(header.width == decoded.width && header.height == decoded.height)
    #expect(header.width == 24 && header.height == 16)
  }

  @Test(
    "the header's size is the decoded image's, in every format encoded here",
    arguments: [ImageFormat.png, .webp])
  func sizesMatch(format: ImageFormat) throws {
    for (width, height) in [(1, 1), (37, 20), (640, 384), (1280, 768)] {
      let image = TestSupport.pattern(width: width, height: height, opaque: true)
      let data = try codec.encode(image, as: format)
      let header = try #require(ImageHeader(reading: data), "\(format) \(width)×\(height)")
      #expect(header.format == format)
      #expect(header.width == width && header.height == height, "\(format)")
      // Lossless WebP and lossy: both kinds.
      if format == .webp {
        let lossy = try codec.encode(image, as: .webp, quality: 80)
        let lossyHeader = ImageHeader(reading: lossy)
        #expect(lossyHeader?.width == width && lossyHeader?.height == height)
      }
    }
  }

  @Test("no size, no header: a signature and zeros, a truncated header, garbage")
  func damaged() throws {
    let png = try codec.encode(TestSupport.pattern(width: 8, height: 8), as: .png)
    let webp = try codec.encode(TestSupport.pattern(width: 8, height: 8), as: .webp)
    let jpeg = try TestSupport.fixture("gradient-24x16.jpg")
    let cases: [Data] = [
      png.prefix(8) + Data(count: 4096),  // the production finding
      png.prefix(20), webp.prefix(20), jpeg.prefix(4),
      Data("RIFF\0\0\0\0WEBPJUNK".utf8) + Data(count: 32),
      Data([0xFF, 0xD8, 0xFF, 0xDA, 0, 2]) + Data(count: 64),  // a scan before any frame
      Data(count: 100),
    ]
    for data in cases { #expect(ImageHeader(reading: data) == nil, "\([UInt8](data.prefix(16)))") }
  }

  @Test(
    "a damaged base frame, or one whose decoded size exceeds the budget, is refused at download")
  func refusedAtDownload() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try BaseFrameStore(root: root, memoryByteLimit: 1 << 20)
    try store.beginDownload(.idleForward, frames: 2)
    let png = try codec.encode(TestSupport.pattern(width: 32, height: 20), as: .png)
    #expect {
      try store.storeFrame(png.prefix(8) + Data(count: 4096), index: 0, of: .idleForward)
    } throws: { ($0 as? LIVAMediaError)?.code == .corruptData }
    // 600×600 RGBA is 1.4 MB decoded, over the 1 MiB budget.
    let large = try codec.encode(TestSupport.pattern(width: 600, height: 600), as: .webp)
    #expect {
      try store.storeFrame(large, index: 1, of: .idleForward)
    } throws: { ($0 as? LIVAMediaError)?.code == .imageTooLarge }
    // Nothing of either was cached: the download lacks both frames and fails.
    try store.storeFrame(png, index: 0, of: .idleForward)
    #expect(throws: LIVAMediaError.self) { try store.finishDownload(.idleForward, version: "1") }
    #expect(!store.isAvailable(.idleForward))
  }
}
