import Foundation

#if canImport(CLIVAVideo)
  import CLIVAVideo
#endif

/// Encodes an animation's frames as H.264 and decodes them back one by one: the playback form
/// of base frames (``PlaybackForm``), made once when an animation is downloaded so that
/// playback decodes a video frame (a few hundred microseconds, in hardware on a phone) instead
/// of a PNG (10–20 ms of inflate at 1280×768).
///
/// Packets are H.264 Annex B, one per frame, no B-frames, so frame `i` is packet `i` and a
/// decoder fed from a key frame gives each picture as soon as its packet goes in.
public protocol VideoFrameCodec: Sendable {
  /// Starts encoding `width`×`height` frames (both even), with a key frame every
  /// `keyInterval` frames, at constant quality `crf` (x264's scale: 0 lossless, 51 worst).
  func makeEncoder(width: Int, height: Int, keyInterval: Int, crf: Int)
    throws(LIVAMediaError) -> any VideoFrameEncoder
  /// A decoder whose pictures must be `width`×`height`.
  func makeDecoder(width: Int, height: Int) throws(LIVAMediaError) -> any VideoFrameDecoder
}

/// One animation's encoder: push every frame in order, then ``finish()``.
public protocol VideoFrameEncoder: AnyObject {
  /// Encodes the next frame (opaque: alpha is dropped).
  func push(_ frame: RGBAImage) throws(LIVAMediaError)
  /// The packets, one per frame pushed, in frame order, and which are key frames.
  func finish() throws(LIVAMediaError) -> [(packet: Data, isKey: Bool)]
}

/// A decoder for one animation's packets, fed in order from a key frame. Not thread-safe: one
/// user at a time.
public protocol VideoFrameDecoder: AnyObject {
  /// Decodes the next packet; returns its picture (alpha 255), or nil when `picture` is false
  /// (a frame decoded only because a later one depends on it). The picture is written into
  /// `buffer` when it has the picture's size (a buffer reused: no allocation, no page faults;
  /// it is taken, leaving nil), else into a new one.
  func decode(_ packet: UnsafeRawBufferPointer, picture: Bool, reusing buffer: inout [UInt8]?)
    throws(LIVAMediaError) -> RGBAImage?
  /// Forgets the pictures decoded so far; the next packet must be a key frame.
  func reset()
}

/// H.264 through FFmpeg's libavcodec and libswscale (Linux): x264 when the library has it
/// (constant quality, `fastdecode` tuning: no CABAC or deblocking, so decoding costs less),
/// one decoding thread per decoder.
public struct FFmpegVideoCodec: VideoFrameCodec {
  /// nil when this build has no libavcodec.
  public init?() {
    #if canImport(CLIVAVideo)
      return
    #else
      return nil
    #endif
  }

  /// An x264 encoder (or the library's other H.264 encoder); see
  /// ``VideoFrameCodec/makeEncoder(width:height:keyInterval:crf:)``.
  public func makeEncoder(width: Int, height: Int, keyInterval: Int, crf: Int)
    throws(LIVAMediaError) -> any VideoFrameEncoder
  {
    #if canImport(CLIVAVideo)
      return try Encoder(width: width, height: height, keyInterval: keyInterval, crf: crf)
    #else
      throw LIVAMediaError(.libraryUnavailable, "built without libavcodec")
    #endif
  }

  /// A one-thread, low-delay decoder converting to RGBA with libswscale.
  public func makeDecoder(width: Int, height: Int) throws(LIVAMediaError)
    -> any VideoFrameDecoder
  {
    #if canImport(CLIVAVideo)
      return try Decoder(width: width, height: height)
    #else
      throw LIVAMediaError(.libraryUnavailable, "built without libavcodec")
    #endif
  }

  #if canImport(CLIVAVideo)
    /// Runs `body` with a message buffer and turns a failure into an error.
    static func call(
      _ what: String, _ body: (UnsafeMutablePointer<CChar>, Int) -> Int32
    ) throws(LIVAMediaError) {
      var message = [CChar](repeating: 0, count: 256)
      let result = message.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
      guard result != Int32(LIVA_VIDEO_OK) else { return }
      throw error(result, what, message)
    }

    static func error(_ result: Int32, _ what: String, _ message: [CChar]) -> LIVAMediaError {
      let text = String(
        decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      let code: LIVAMediaError.Code =
        switch Int(result) {
        case Int(LIVA_VIDEO_UNAVAILABLE): .libraryUnavailable
        case Int(LIVA_VIDEO_INVALID): .invalidArgument
        case Int(LIVA_VIDEO_NO_MEMORY): .limitExceeded
        default: .corruptData
        }
      return LIVAMediaError(code, "\(what): \(text.isEmpty ? "code \(result)" : text)")
    }

    final class Encoder: VideoFrameEncoder {
      let handle: OpaquePointer
      let width: Int
      let height: Int

      init(width: Int, height: Int, keyInterval: Int, crf: Int) throws(LIVAMediaError) {
        var message = [CChar](repeating: 0, count: 256)
        let handle = message.withUnsafeMutableBufferPointer {
          liva_video_encoder_open(
            Int32(clamping: width), Int32(clamping: height), Int32(clamping: keyInterval),
            Int32(clamping: crf), $0.baseAddress, $0.count)
        }
        guard let handle else {
          throw FFmpegVideoCodec.error(Int32(LIVA_VIDEO_UNAVAILABLE), "H.264 encoder", message)
        }
        self.handle = handle
        self.width = width
        self.height = height
      }

      deinit { liva_video_encoder_close(handle) }

      func push(_ frame: RGBAImage) throws(LIVAMediaError) {
        guard frame.width == width, frame.height == height else {
          throw LIVAMediaError(
            .invalidArgument,
            "a \(frame.width)×\(frame.height) frame in a \(width)×\(height) animation")
        }
        try FFmpegVideoCodec.call("H.264 encoder") { message, size in
          frame.pixels.withUnsafeBufferPointer {
            liva_video_encoder_push(handle, $0.baseAddress, message, size)
          }
        }
      }

      func finish() throws(LIVAMediaError) -> [(packet: Data, isKey: Bool)] {
        var bytes: UnsafePointer<UInt8>?
        var sizes: UnsafePointer<Int32>?
        var keys: UnsafePointer<UInt8>?
        var count: Int32 = 0
        try FFmpegVideoCodec.call("H.264 encoder") { message, size in
          liva_video_encoder_finish(handle, &bytes, &sizes, &keys, &count, message, size)
        }
        guard let bytes, let sizes, let keys else { return [] }
        var packets: [(packet: Data, isKey: Bool)] = []
        var offset = 0
        for index in 0..<Int(count) {
          let size = Int(sizes[index])
          packets.append((Data(bytes: bytes + offset, count: size), keys[index] != 0))
          offset += size
        }
        return packets
      }
    }

    final class Decoder: VideoFrameDecoder {
      let handle: OpaquePointer
      let width: Int
      let height: Int

      init(width: Int, height: Int) throws(LIVAMediaError) {
        var message = [CChar](repeating: 0, count: 256)
        let handle = message.withUnsafeMutableBufferPointer {
          liva_video_decoder_open(
            Int32(clamping: width), Int32(clamping: height), $0.baseAddress, $0.count)
        }
        guard let handle else {
          throw FFmpegVideoCodec.error(Int32(LIVA_VIDEO_UNAVAILABLE), "H.264 decoder", message)
        }
        self.handle = handle
        self.width = width
        self.height = height
      }

      deinit { liva_video_decoder_close(handle) }

      func decode(
        _ packet: UnsafeRawBufferPointer, picture: Bool, reusing buffer: inout [UInt8]?
      )
        throws(LIVAMediaError) -> RGBAImage?
      {
        guard let base = packet.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
          throw LIVAMediaError(.corruptData, "an empty packet")
        }
        guard picture else {
          try FFmpegVideoCodec.call("H.264 decoder") { message, size in
            liva_video_decode(handle, base, packet.count, nil, message, size)
          }
          return nil
        }
        var message = [CChar](repeating: 0, count: 256)
        var result: Int32 = 0
        func decode(into pixels: UnsafeMutableBufferPointer<UInt8>) {
          result = message.withUnsafeMutableBufferPointer {
            liva_video_decode(
              handle, base, packet.count, pixels.baseAddress, $0.baseAddress, $0.count)
          }
        }
        var pixels: [UInt8]
        if buffer?.count == width * height * 4, var reused = buffer.take() {
          reused.withUnsafeMutableBufferPointer { decode(into: $0) }
          pixels = reused
        } else {
          pixels = [UInt8](unsafeUninitializedCapacity: width * height * 4) { buffer, count in
            decode(into: buffer)
            count = result == Int32(LIVA_VIDEO_OK) ? buffer.count : 0
          }
        }
        guard result == Int32(LIVA_VIDEO_OK) else {
          throw FFmpegVideoCodec.error(result, "H.264 decoder", message)
        }
        return try RGBAImage(width: width, height: height, pixels: pixels)
      }

      func reset() { liva_video_decoder_reset(handle) }
    }
  #endif
}
