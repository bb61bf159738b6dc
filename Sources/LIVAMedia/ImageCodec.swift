import Foundation

/// An encoded image format.
public enum ImageFormat: String, Hashable, Sendable, CaseIterable {
  /// PNG.
  case png
  /// WebP (lossy or lossless, still images only).
  case webp
  /// JPEG (baseline or progressive).
  case jpeg

  /// Recognises a format from its first bytes (magic numbers), or nil.
  public init?(sniffing data: Data) {
    let head = [UInt8](data.prefix(12))
    if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
      self = .png
    } else if head.count >= 12, head[0..<4].elementsEqual("RIFF".utf8),
      head[8..<12].elementsEqual("WEBP".utf8)
    {
      self = .webp
    } else if head.starts(with: [0xFF, 0xD8, 0xFF]) {
      self = .jpeg
    } else {
      return nil
    }
  }

  /// The MIME type, e.g. `image/webp`.
  public var mimeType: String { "image/\(rawValue)" }
}

/// Limits a decoder enforces before allocating anything.
public struct DecodeLimits: Hashable, Sendable {
  /// The largest accepted `width * height`. The default, 16 Mpx, is 16 times a production
  /// 1280×768 frame.
  public var maximumPixelCount: Int

  /// Creates limits.
  public init(maximumPixelCount: Int = 16 * 1024 * 1024) {
    self.maximumPixelCount = maximumPixelCount
  }

  /// Throws ``LIVAMediaError/Code-swift.struct/imageTooLarge`` when `width × height` is not
  /// a positive size within the limit.
  func check(width: Int, height: Int, format: ImageFormat) throws(LIVAMediaError) {
    guard width > 0, height > 0, width <= 1 << 15, height <= 1 << 15 else {
      throw LIVAMediaError(
        .imageTooLarge, "impossible dimensions \(width)×\(height)", source: format.rawValue)
    }
    guard width * height <= maximumPixelCount else {
      throw LIVAMediaError(
        .imageTooLarge,
        "\(width)×\(height) exceeds the limit of \(maximumPixelCount) pixels",
        source: format.rawValue)
    }
  }
}

/// Turns encoded bytes into ``RGBAImage``s and back.
///
/// Implementations are thread-safe: one codec may decode on several threads at once.
/// Bad input never crashes; it throws ``LIVAMediaError``.
public protocol ImageCodec: Sendable {
  /// Decodes an image. Throws `unsupportedFormat`, `corruptData`, `truncatedData`,
  /// `imageTooLarge` or `libraryUnavailable`.
  func decode(_ data: Data, limits: DecodeLimits) throws(LIVAMediaError) -> RGBAImage

  /// Encodes an image in `format`. `quality` in 0...100 applies to lossy formats only; nil
  /// asks for lossless where the format has it.
  func encode(_ image: RGBAImage, as format: ImageFormat, quality: Float?) throws(LIVAMediaError)
    -> Data
}

extension ImageCodec {
  /// Decodes with the default ``DecodeLimits``.
  public func decode(_ data: Data) throws(LIVAMediaError) -> RGBAImage {
    try decode(data, limits: DecodeLimits())
  }

  /// Encodes losslessly (PNG, lossless WebP).
  public func encode(_ image: RGBAImage, as format: ImageFormat) throws(LIVAMediaError) -> Data {
    try encode(image, as: format, quality: nil)
  }
}
