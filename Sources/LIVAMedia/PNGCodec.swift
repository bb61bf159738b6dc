#if os(Linux)
  import CLibPNG
  import Foundation

  /// PNG through libpng's simplified API, which catches libpng's `longjmp` errors inside the
  /// library and reports them as a return value plus `png_image.message`.
  enum PNGCodec {
    static func decode(_ data: Data, limits: DecodeLimits) throws(LIVAMediaError) -> RGBAImage {
      let result: Result<RGBAImage, LIVAMediaError> = data.withUnsafeBytes { raw in
        var image = png_image()
        image.version = png_uint_32(CLibPNG_IMAGE_VERSION)
        // libpng keeps pointing at `raw` until png_image_finish_read/free: stay in this closure.
        guard png_image_begin_read_from_memory(&image, raw.baseAddress, raw.count) != 0 else {
          return .failure(error(&image))
        }
        let width = Int(image.width)
        let height = Int(image.height)
        do throws(LIVAMediaError) {
          try limits.check(width: width, height: height, format: .png)
        } catch {
          png_image_free(&image)
          return .failure(error)
        }
        image.format = png_uint_32(CLibPNG_FORMAT_RGBA)
        var ok = true
        let pixels = [UInt8](unsafeUninitializedCapacity: width * height * 4) { buffer, count in
          ok =
            png_image_finish_read(&image, nil, buffer.baseAddress, png_int_32(width * 4), nil)
            != 0
          if ok {
            count = width * height * 4
          } else {
            count = 0
          }
        }
        guard ok else { return .failure(error(&image)) }
        png_image_free(&image)
        return Result { () throws(LIVAMediaError) in
          try RGBAImage(width: width, height: height, pixels: pixels)
        }
      }
      return try result.get()
    }

    /// - Parameter fast: favour speed over size (libpng's `PNG_IMAGE_FLAG_FAST`).
    static func encode(_ rgba: RGBAImage, fast: Bool = false) throws(LIVAMediaError) -> Data {
      var image = png_image()
      image.version = png_uint_32(CLibPNG_IMAGE_VERSION)
      image.width = png_uint_32(rgba.width)
      image.height = png_uint_32(rgba.height)
      image.format = png_uint_32(CLibPNG_FORMAT_RGBA)
      if fast { image.flags = png_uint_32(CLibPNG_IMAGE_FLAG_FAST) }
      let result: Result<Data, LIVAMediaError> = rgba.pixels.withUnsafeBytes { pixels in
        // One pass into a buffer of the largest possible size (compressing twice, once to
        // measure, doubled the cost), then trimmed.
        var size = CLibPNG_size_max(image)
        var output = Data(count: Int(size))
        let written = output.withUnsafeMutableBytes { out in
          png_image_write_to_memory(&image, out.baseAddress, &size, 0, pixels.baseAddress, 0, nil)
        }
        guard written != 0 else { return .failure(error(&image)) }
        output.count = Int(size)
        return .success(output)
      }
      return try result.get()
    }

    /// Turns libpng's message into a typed error and frees the image's resources.
    private static func error(_ image: inout png_image) -> LIVAMediaError {
      let text = withUnsafeBytes(of: image.message) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      png_image_free(&image)
      // libpng reports running out of input as a read error.
      let truncated =
        text.contains("end of") || text.contains("Read Error")
        || text.contains("truncated") || text.contains("Not enough")
      return LIVAMediaError(
        truncated ? .truncatedData : .corruptData, "libpng: \(text)", source: "png")
    }
  }
#endif
