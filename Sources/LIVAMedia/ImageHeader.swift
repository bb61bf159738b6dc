import Foundation

/// The size an encoded image declares in its header, read without decoding: PNG's `IHDR`,
/// WebP's `VP8 `, `VP8L` or `VP8X` chunk, JPEG's start-of-frame segment. Lets a download refuse
/// bytes that are no decodable image, or an image too large to hold, before they are cached.
public struct ImageHeader: Hashable, Sendable {
  /// The format, from the magic number.
  public var format: ImageFormat
  /// The width in pixels.
  public var width: Int
  /// The height in pixels.
  public var height: Int

  /// The bytes the decoded image takes (RGBA, 4 bytes a pixel).
  public var decodedByteCount: Int { width * height * 4 }

  /// Reads the header of `data`; nil when the bytes are no image of a known format or its
  /// header is missing, truncated or declares no size.
  public init?(reading data: Data) {
    guard let format = ImageFormat(sniffing: data) else { return nil }
    let bytes = [UInt8](data.prefix(64 << 10))  // JPEG headers come within the first segments
    let size: (Int, Int)?
    switch format {
    case .png: size = Self.png(bytes)
    case .webp: size = Self.webp(bytes)
    case .jpeg: size = Self.jpeg(bytes)
    }
    guard let (width, height) = size, width > 0, height > 0 else { return nil }
    self.format = format
    self.width = width
    self.height = height
  }

  private static func bigEndian(_ bytes: [UInt8], _ at: Int, _ count: Int) -> Int? {
    guard at >= 0, at + count <= bytes.count else { return nil }
    return bytes[at..<at + count].reduce(0) { $0 << 8 | Int($1) }
  }

  private static func littleEndian(_ bytes: [UInt8], _ at: Int, _ count: Int) -> Int? {
    guard at >= 0, at + count <= bytes.count else { return nil }
    return bytes[at..<at + count].reversed().reduce(0) { $0 << 8 | Int($1) }
  }

  /// The first chunk after the signature must be `IHDR`: width and height, 4 bytes each.
  private static func png(_ bytes: [UInt8]) -> (Int, Int)? {
    guard bytes.count >= 24, bytes[12..<16].elementsEqual("IHDR".utf8),
      let width = bigEndian(bytes, 16, 4), let height = bigEndian(bytes, 20, 4)
    else { return nil }
    return (width, height)
  }

  /// `RIFF` size `WEBP`, then the first chunk: lossy (`VP8 `, a key frame's start code then
  /// 14-bit sizes), lossless (`VP8L`, signature 0x2F then 14-bit sizes minus one) or extended
  /// (`VP8X`, 24-bit canvas sizes minus one).
  private static func webp(_ bytes: [UInt8]) -> (Int, Int)? {
    guard bytes.count >= 30 else { return nil }
    let chunk = String(decoding: bytes[12..<16], as: UTF8.self)
    switch chunk {
    case "VP8 ":
      guard bytes[23] == 0x9D, bytes[24] == 0x01, bytes[25] == 0x2A,
        let width = littleEndian(bytes, 26, 2), let height = littleEndian(bytes, 28, 2)
      else { return nil }
      return (width & 0x3FFF, height & 0x3FFF)
    case "VP8L":
      guard bytes[20] == 0x2F, let bits = littleEndian(bytes, 21, 4) else { return nil }
      return ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    case "VP8X":
      guard let width = littleEndian(bytes, 24, 3), let height = littleEndian(bytes, 27, 3) else {
        return nil
      }
      return (width + 1, height + 1)
    default:
      return nil
    }
  }

  /// Segments from the start marker until a start-of-frame (SOF0–SOF15 but DHT, JPG and
  /// DAC), whose height and width follow the sample precision.
  private static func jpeg(_ bytes: [UInt8]) -> (Int, Int)? {
    var index = 2
    while index + 4 <= bytes.count {
      guard bytes[index] == 0xFF else { return nil }
      let marker = bytes[index + 1]
      if marker == 0xFF {  // fill byte
        index += 1
        continue
      }
      if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) {
        index += 2
        continue
      }
      guard let length = bigEndian(bytes, index + 2, 2), length >= 2 else { return nil }
      if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
        guard let height = bigEndian(bytes, index + 5, 2),
          let width = bigEndian(bytes, index + 7, 2)
        else { return nil }
        return (width, height)
      }
      if marker == 0xDA || marker == 0xD9 { return nil }  // scan or end before any frame
      index += 2 + length
    }
    return nil
  }
}
