#if canImport(ImageIO) && !os(Linux)
  import CoreGraphics
  import Foundation
  import ImageIO

  /// Apple platforms: ImageIO decodes PNG, WebP and JPEG and encodes PNG. Kept thin on
  /// purpose (it is not compiled by the Linux CI); the format logic lives in the shared code.
  enum ImageIOCodec {
    static func decode(_ data: Data, format: ImageFormat, limits: DecodeLimits)
      throws(LIVAMediaError) -> RGBAImage
    {
      let source = format.rawValue
      guard let imageSource = CGImageSourceCreateWithData(data as CFData, nil) else {
        throw LIVAMediaError(.corruptData, "ImageIO cannot read the bytes", source: source)
      }
      switch CGImageSourceGetStatus(imageSource) {
      case .statusComplete: break
      case .statusIncomplete, .statusReadingHeader, .statusUnexpectedEOF:
        throw LIVAMediaError(.truncatedData, "ImageIO: incomplete image", source: source)
      default:
        throw LIVAMediaError(.corruptData, "ImageIO: invalid image", source: source)
      }
      guard
        let properties = CGImageSourceCopyPropertiesAtIndex(imageSource, 0, nil)
          as? [CFString: Any],
        let width = properties[kCGImagePropertyPixelWidth] as? Int,
        let height = properties[kCGImagePropertyPixelHeight] as? Int
      else {
        throw LIVAMediaError(.corruptData, "ImageIO: no image size", source: source)
      }
      try limits.check(width: width, height: height, format: format)
      guard let image = CGImageSourceCreateImageAtIndex(imageSource, 0, nil),
        let space = CGColorSpace(name: CGColorSpace.sRGB)
      else {
        throw LIVAMediaError(.corruptData, "ImageIO: undecodable image", source: source)
      }
      // CoreGraphics bitmap contexts only draw premultiplied RGBA; un-premultiply after.
      var pixels = [UInt8](repeating: 0, count: width * height * 4)
      let drawn = pixels.withUnsafeMutableBytes { buffer -> Bool in
        guard
          let context = CGContext(
            data: buffer.baseAddress, width: width, height: height, bitsPerComponent: 8,
            bytesPerRow: width * 4, space: space,
            bitmapInfo: CGImageAlphaInfo.premultipliedLast.rawValue)
        else { return false }
        context.setBlendMode(.copy)
        context.draw(image, in: CGRect(x: 0, y: 0, width: width, height: height))
        return true
      }
      guard drawn else {
        throw LIVAMediaError(.corruptData, "ImageIO: cannot draw the image", source: source)
      }
      for i in stride(from: 0, to: pixels.count, by: 4) {
        let alpha = Int(pixels[i + 3])
        guard alpha != 0, alpha != 255 else { continue }
        for c in i..<(i + 3) {
          pixels[c] = UInt8(min(255, (Int(pixels[c]) * 255 + alpha / 2) / alpha))
        }
      }
      return try RGBAImage(width: width, height: height, pixels: pixels)
    }

    static func encodePNG(_ image: RGBAImage) throws(LIVAMediaError) -> Data {
      let failure = LIVAMediaError(.corruptData, "ImageIO cannot encode PNG", source: "png")
      guard let provider = CGDataProvider(data: Data(image.pixels) as CFData),
        let space = CGColorSpace(name: CGColorSpace.sRGB),
        let cgImage = CGImage(
          width: image.width, height: image.height, bitsPerComponent: 8, bitsPerPixel: 32,
          bytesPerRow: image.stride, space: space,
          bitmapInfo: CGBitmapInfo(rawValue: CGImageAlphaInfo.last.rawValue),
          provider: provider, decode: nil, shouldInterpolate: false, intent: .defaultIntent)
      else { throw failure }
      let output = NSMutableData()
      guard
        let destination = CGImageDestinationCreateWithData(
          output as CFMutableData, "public.png" as CFString, 1, nil)
      else { throw failure }
      CGImageDestinationAddImage(destination, cgImage, nil)
      guard CGImageDestinationFinalize(destination) else { throw failure }
      return output as Data
    }
  }
#endif
