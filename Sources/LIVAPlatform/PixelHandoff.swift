/// Frames handed to the platform's image type (`CGImage` on Apple), converted once, off the
/// main thread: the SDK's frames are straight (not premultiplied) RGBA; Core Graphics draws
/// premultiplied alpha, or no alpha at all for an opaque frame.
public struct PixelHandoff: Sendable, Hashable {
  /// How the alpha channel of the handed-over bytes is to be read (`CGImageAlphaInfo`).
  public enum Alpha: Sendable, Hashable {
    /// Every pixel is opaque: the fourth byte is to be skipped (`noneSkipLast`).
    case opaque
    /// Colour premultiplied by alpha (`premultipliedLast`).
    case premultiplied
  }

  /// Width in pixels.
  public var width: Int
  /// Height in pixels.
  public var height: Int
  /// Bytes per row (no padding: `width * 4`).
  public var bytesPerRow: Int { width * 4 }
  /// How to read the alpha byte.
  public var alpha: Alpha
  /// RGBA bytes, rows top first.
  public var pixels: [UInt8]

  /// Converts straight RGBA `pixels` of a `width` × `height` frame: an opaque frame is handed
  /// over as it is (no copy is made), any other one premultiplied, each colour channel
  /// `(c × a + 127) / 255`. Call it on the thread that produced the frame, never on the main
  /// thread.
  public init(width: Int, height: Int, straightRGBA pixels: [UInt8]) {
    self.width = width
    self.height = height
    precondition(pixels.count == width * height * 4, "RGBA of width × height")
    var opaque = true
    var index = 3
    while index < pixels.count {
      if pixels[index] != 255 {
        opaque = false
        break
      }
      index += 4
    }
    if opaque {
      self.alpha = .opaque
      self.pixels = pixels
      return
    }
    var converted = pixels
    converted.withUnsafeMutableBufferPointer { bytes in
      var offset = 0
      while offset < bytes.count {
        let alpha = UInt32(bytes[offset + 3])
        if alpha != 255 {
          for channel in 0..<3 {
            bytes[offset + channel] = UInt8((UInt32(bytes[offset + channel]) * alpha + 127) / 255)
          }
        }
        offset += 4
      }
    }
    self.alpha = .premultiplied
    self.pixels = converted
  }
}
