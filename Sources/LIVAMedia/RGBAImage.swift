/// A decoded image: 8-bit RGBA pixels, row-major, top row first, no padding between rows
/// (`stride == width * 4`).
///
/// **Pixel format:** sRGB, **straight (non-premultiplied) alpha**: a pixel's colour channels
/// are not scaled by its alpha. That is what libpng's simplified API and `WebPDecodeRGBA`
/// produce, so decoding costs no conversion; the ``Compositor`` does the alpha arithmetic.
public struct RGBAImage: Hashable, Sendable {
  /// Width in pixels.
  public let width: Int
  /// Height in pixels.
  public let height: Int
  /// `width * height * 4` bytes: R, G, B, A for each pixel.
  public var pixels: [UInt8]

  /// Bytes per row.
  public var stride: Int { width * 4 }
  /// The size of the pixel buffer in bytes (what caches count).
  public var byteCount: Int { pixels.count }

  /// Wraps a pixel buffer, checking that its size matches the dimensions.
  public init(width: Int, height: Int, pixels: [UInt8]) throws(LIVAMediaError) {
    guard width > 0, height > 0, width <= 1 << 15, height <= 1 << 15,
      pixels.count == width * height * 4
    else {
      throw LIVAMediaError(
        .invalidArgument,
        "\(pixels.count) bytes is not a \(width)×\(height) RGBA buffer")
    }
    self.width = width
    self.height = height
    self.pixels = pixels
  }

  /// An image filled with one colour. Width and height must be positive (a programming
  /// error otherwise); for sizes from untrusted input use ``init(width:height:pixels:)``.
  public init(width: Int, height: Int, fill: RGBA = RGBA(0, 0, 0, 0)) {
    precondition(width > 0 && height > 0, "image dimensions must be positive")
    self.width = width
    self.height = height
    let count = width * height * 4
    // One 32-bit pattern repeated by the standard library: fast even in debug builds, where a
    // per-byte loop over a 512×512 frame costs tens of milliseconds (start-up time).
    let pattern = [fill.r, fill.g, fill.b, fill.a].withUnsafeBytes { $0.load(as: UInt32.self) }
    self.pixels = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
      let raw = UnsafeMutableRawBufferPointer(buffer)
      raw.bindMemory(to: UInt32.self).update(repeating: pattern)
      initialized = count
    }
  }

  /// The pixel at column `x`, row `y`.
  public subscript(x: Int, y: Int) -> RGBA {
    get {
      let i = (y * width + x) * 4
      return RGBA(pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3])
    }
    set {
      let i = (y * width + x) * 4
      pixels[i] = newValue.r
      pixels[i + 1] = newValue.g
      pixels[i + 2] = newValue.b
      pixels[i + 3] = newValue.a
    }
  }
}

/// One straight-alpha RGBA pixel.
public struct RGBA: Hashable, Sendable {
  /// Red.
  public var r: UInt8
  /// Green.
  public var g: UInt8
  /// Blue.
  public var b: UInt8
  /// Alpha (255 is opaque).
  public var a: UInt8

  /// Creates a pixel.
  public init(_ r: UInt8, _ g: UInt8, _ b: UInt8, _ a: UInt8 = 255) {
    self.r = r
    self.g = g
    self.b = b
    self.a = a
  }
}
