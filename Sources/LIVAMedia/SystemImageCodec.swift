import Foundation

/// The platform's image codec: PNG, WebP and JPEG decoding, PNG and WebP encoding.
///
/// - **Linux:** PNG through libpng's simplified `png_image` API (linked through pkg-config;
///   the classic API reports errors with `longjmp`, which Swift cannot survive). WebP through
///   `libwebp.so.7` **loaded at run time** with `dlopen` (see ``WebPLibrary``). JPEG decoding
///   through libjpeg behind a small C shim that keeps `setjmp`/`longjmp` inside C; JPEG
///   encoding is not offered.
/// - **Apple platforms:** ImageIO for decoding all three formats and for PNG encoding; WebP
///   encoding throws `unsupportedOperation` (ImageIO cannot write WebP).
///
/// The format is recognised from the bytes, never from a MIME type a server claims.
/// Decoding checks ``DecodeLimits`` against the header before allocating pixels.
public struct SystemImageCodec: ImageCodec {
  #if os(Linux)
    private let webp: Result<WebPLibrary, LIVAMediaError>
  #endif

  /// Whether PNG encoding favours speed over size (a recorder writing a frame every 1/30 s);
  /// false: libpng's default compression.
  public var pngFavoursSpeed = false

  /// Creates the codec. On Linux this opens `libwebp.so.7`; when it is missing, PNG and
  /// JPEG still work and WebP calls throw `libraryUnavailable`.
  public init() {
    #if os(Linux)
      webp = Result { () throws(LIVAMediaError) in try WebPLibrary() }
    #endif
  }

  #if os(Linux)
    /// Creates the codec with libwebp looked up under `webPLibraryNames` (tests use a name
    /// that does not exist to check the behaviour of a machine without libwebp).
    init(webPLibraryNames: [String]) {
      webp = Result { () throws(LIVAMediaError) in try WebPLibrary(names: webPLibraryNames) }
    }
  #endif

  /// Whether WebP decoding and encoding work here (on Linux: `libwebp.so.7` was found).
  public var supportsWebP: Bool {
    #if os(Linux)
      if case .success = webp { return true }
      return false
    #else
      return true
    #endif
  }

  /// Decodes PNG, WebP or JPEG bytes to straight-alpha RGBA.
  public func decode(_ data: Data, limits: DecodeLimits) throws(LIVAMediaError) -> RGBAImage {
    guard let format = ImageFormat(sniffing: data) else {
      throw LIVAMediaError(
        .unsupportedFormat,
        data.count < 12
          ? "\(data.count) bytes are too few to recognise an image format"
          : "the bytes are not PNG, WebP or JPEG", offset: 0)
    }
    #if os(Linux)
      switch format {
      case .png: return try PNGCodec.decode(data, limits: limits)
      case .webp: return try webp.get().decode(data, limits: limits)
      case .jpeg: return try JPEGDecoder.decode(data, limits: limits)
      }
    #elseif canImport(ImageIO)
      return try ImageIOCodec.decode(data, format: format, limits: limits)
    #else
      throw LIVAMediaError(.unsupportedOperation, "no image decoder on this platform")
    #endif
  }

  /// Encodes PNG (always lossless) or WebP (lossless when `quality` is nil).
  public func encode(_ image: RGBAImage, as format: ImageFormat, quality: Float?)
    throws(LIVAMediaError) -> Data
  {
    switch format {
    case .png:
      #if os(Linux)
        return try PNGCodec.encode(image, fast: pngFavoursSpeed)
      #elseif canImport(ImageIO)
        return try ImageIOCodec.encodePNG(image)
      #else
        throw LIVAMediaError(.unsupportedOperation, "no PNG encoder on this platform")
      #endif
    case .webp:
      #if os(Linux)
        return try webp.get().encode(image, quality: quality)
      #else
        throw LIVAMediaError(
          .unsupportedOperation, "WebP encoding is not available on this platform",
          source: "webp")
      #endif
    case .jpeg:
      throw LIVAMediaError(
        .unsupportedOperation, "JPEG encoding is not offered", source: "jpeg")
    }
  }
}
