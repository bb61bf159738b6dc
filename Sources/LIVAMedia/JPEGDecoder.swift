#if os(Linux)
  import CLIVAJPEG
  import Foundation
  #if canImport(Glibc)
    import Glibc
  #elseif canImport(Musl)
    import Musl
  #endif

  /// JPEG decoding through libjpeg(-turbo), via the `CLIVAJPEG` C shim that keeps libjpeg's
  /// `setjmp`/`longjmp` error handling inside C.
  enum JPEGDecoder {
    static func decode(_ data: Data, limits: DecodeLimits) throws(LIVAMediaError) -> RGBAImage {
      var pixels: UnsafeMutablePointer<UInt8>? = nil
      var width: Int32 = 0
      var height: Int32 = 0
      var message = [CChar](repeating: 0, count: 256)
      let status = data.withUnsafeBytes { raw in
        liva_jpeg_decode_rgba(
          raw.bindMemory(to: UInt8.self).baseAddress, raw.count, limits.maximumPixelCount,
          &pixels, &width, &height, &message, message.count)
      }
      defer { free(pixels) }
      let text = String(
        decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
        as: UTF8.self)
      switch Int(status) {
      case Int(LIVA_JPEG_OK):
        guard let pixels else { break }
        let w = Int(width)
        let h = Int(height)
        try limits.check(width: w, height: h, format: .jpeg)
        return try RGBAImage(
          width: w, height: h,
          pixels: [UInt8](UnsafeBufferPointer(start: pixels, count: w * h * 4)))
      case Int(LIVA_JPEG_TRUNCATED):
        throw LIVAMediaError(.truncatedData, "libjpeg: \(text)", source: "jpeg")
      case Int(LIVA_JPEG_TOO_LARGE):
        throw LIVAMediaError(.imageTooLarge, "libjpeg: \(text)", source: "jpeg")
      default:
        break
      }
      throw LIVAMediaError(.corruptData, "libjpeg: \(text)", source: "jpeg")
    }
  }
#endif
