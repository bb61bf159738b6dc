#if os(Linux)
  import Foundation
  #if canImport(Glibc)
    import Glibc
  #elseif canImport(Musl)
    import Musl
  #endif

  /// libwebp, opened at run time with `dlopen("libwebp.so.7")`.
  ///
  /// **Why not link it?** A fresh Debian machine of the kind the SDK is built on has the
  /// WebP runtime (`libwebp7`) but not `libwebp-dev`: no headers and no unversioned
  /// `libwebp.so`, so a system-library target for libwebp would not compile or link there,
  /// and the README promises a build with no extra setup. The five functions needed have
  /// had a stable C ABI since libwebp 0.5, so binding them by name is small and safe. When
  /// the library is absent, WebP calls throw `libraryUnavailable` instead of the whole
  /// package failing to build or load.
  ///
  /// The handle is owned by this object and closed in `deinit`; there is no process-wide
  /// cache (each ``SystemImageCodec`` holds one reference, and `dlopen` itself refcounts).
  final class WebPLibrary: Sendable {
    private typealias GetInfo =
      @convention(c) (
        UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?
      ) -> Int32
    private typealias DecodeRGBAInto =
      @convention(c) (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?, Int, Int32)
      -> UnsafeMutablePointer<UInt8>?
    private typealias EncodeRGBA =
      @convention(c) (
        UnsafePointer<UInt8>?, Int32, Int32, Int32, Float,
        UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?
      ) -> Int
    private typealias EncodeLosslessRGBA =
      @convention(c) (
        UnsafePointer<UInt8>?, Int32, Int32, Int32,
        UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?
      ) -> Int
    private typealias Free = @convention(c) (UnsafeMutableRawPointer?) -> Void

    /// Holds the raw handle; `@unchecked Sendable` because it is written once in `init` and
    /// only read afterwards, and libwebp's entry points are thread-safe.
    private struct Handle: @unchecked Sendable { let raw: UnsafeMutableRawPointer }

    private struct Functions: @unchecked Sendable {
      // @unchecked Sendable: immutable C function pointers into a library that is never
      // unloaded while this value lives; libwebp's simple API is thread-safe.
      let getInfo: GetInfo
      let decodeRGBAInto: DecodeRGBAInto
      let encodeRGBA: EncodeRGBA
      let encodeLosslessRGBA: EncodeLosslessRGBA
      let free: Free
    }

    private let handle: Handle
    private let functions: Functions

    /// Opens the first of `names` that loads and binds the needed symbols.
    init(names: [String] = ["libwebp.so.7", "libwebp.so"]) throws(LIVAMediaError) {
      var reasons: [String] = []
      for name in names {
        guard let raw = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
          reasons.append(dlerror().map { String(cString: $0) } ?? name)
          continue
        }
        func symbol<T>(_ name: String, as type: T.Type) -> T? {
          guard let pointer = dlsym(raw, name) else { return nil }
          return unsafeBitCast(pointer, to: type)
        }
        guard let getInfo = symbol("WebPGetInfo", as: GetInfo.self),
          let decode = symbol("WebPDecodeRGBAInto", as: DecodeRGBAInto.self),
          let encode = symbol("WebPEncodeRGBA", as: EncodeRGBA.self),
          let lossless = symbol("WebPEncodeLosslessRGBA", as: EncodeLosslessRGBA.self),
          let free = symbol("WebPFree", as: Free.self)
        else {
          reasons.append("\(name) lacks a needed WebP function")
          dlclose(raw)
          continue
        }
        handle = Handle(raw: raw)
        functions = Functions(
          getInfo: getInfo, decodeRGBAInto: decode, encodeRGBA: encode,
          encodeLosslessRGBA: lossless, free: free)
        return
      }
      throw LIVAMediaError(
        .libraryUnavailable,
        "libwebp could not be loaded (install the libwebp7 package): "
          + reasons.joined(separator: "; "), source: "webp")
    }

    deinit { dlclose(handle.raw) }

    func decode(_ data: Data, limits: DecodeLimits) throws(LIVAMediaError) -> RGBAImage {
      let result: Result<RGBAImage, LIVAMediaError> = data.withUnsafeBytes { raw in
        let bytes = raw.bindMemory(to: UInt8.self)
        var width: Int32 = 0
        var height: Int32 = 0
        guard functions.getInfo(bytes.baseAddress, bytes.count, &width, &height) != 0 else {
          return .failure(Self.failure(data, "WebPGetInfo rejected the header"))
        }
        let w = Int(width)
        let h = Int(height)
        do throws(LIVAMediaError) {
          try limits.check(width: w, height: h, format: .webp)
        } catch {
          return .failure(error)
        }
        var ok = true
        let pixels = [UInt8](unsafeUninitializedCapacity: w * h * 4) { buffer, count in
          ok =
            functions.decodeRGBAInto(
              bytes.baseAddress, bytes.count, buffer.baseAddress, w * h * 4, Int32(w * 4))
            != nil
          count = ok ? w * h * 4 : 0
        }
        guard ok else { return .failure(Self.failure(data, "WebPDecodeRGBAInto failed")) }
        return Result { () throws(LIVAMediaError) in
          try RGBAImage(width: w, height: h, pixels: pixels)
        }
      }
      return try result.get()
    }

    func encode(_ image: RGBAImage, quality: Float?) throws(LIVAMediaError) -> Data {
      var output: UnsafeMutablePointer<UInt8>? = nil
      let size = image.pixels.withUnsafeBufferPointer { pixels in
        if let quality {
          return functions.encodeRGBA(
            pixels.baseAddress, Int32(image.width), Int32(image.height), Int32(image.stride),
            min(max(quality, 0), 100), &output)
        }
        return functions.encodeLosslessRGBA(
          pixels.baseAddress, Int32(image.width), Int32(image.height), Int32(image.stride),
          &output)
      }
      defer { functions.free(output) }
      guard size > 0, let output else {
        throw LIVAMediaError(.corruptData, "libwebp could not encode the image", source: "webp")
      }
      return Data(bytes: output, count: size)
    }

    /// A RIFF container announcing more bytes than arrived is truncated; anything else that
    /// libwebp refuses is corrupt.
    private static func failure(_ data: Data, _ what: String) -> LIVAMediaError {
      let head = [UInt8](data.prefix(8))
      if head.count == 8 {
        let announced =
          Int(head[4]) | Int(head[5]) << 8 | Int(head[6]) << 16 | Int(head[7]) << 24
        if announced + 8 > data.count {
          return LIVAMediaError(
            .truncatedData, "\(what): \(data.count) of \(announced + 8) bytes", source: "webp",
            offset: data.count)
        }
      }
      return LIVAMediaError(.corruptData, what, source: "webp")
    }
  }
#endif
