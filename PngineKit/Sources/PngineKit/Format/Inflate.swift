import CZlib

/// Raw DEFLATE (no zlib header, `wbits = -15`) through the system zlib, streaming in 64 KiB
/// steps so that a bomb stops as soon as the output passes `limit`, never after.
enum RawInflate {
  static func inflate(_ input: [UInt8], limit: Int, chunk: String = "pNGb", inputOffset: Int = 0)
    throws(PngineError) -> [UInt8]
  {
    var stream = z_stream()
    let initStatus = inflateInit2_(
      &stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
    guard initStatus == Z_OK else {
      throw PngineError(
        .inflateFailed, "zlib inflateInit2 failed (\(initStatus))",
        location: .init(chunk: chunk, byteOffset: inputOffset))
    }
    defer { inflateEnd(&stream) }

    let step = 64 * 1024
    var output = [UInt8]()
    var window = [UInt8](repeating: 0, count: step)
    var status: Int32 = Z_OK
    var failure: PngineError?
    input.withUnsafeBufferPointer { inBuf in
      stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
      stream.avail_in = UInt32(inBuf.count)
      window.withUnsafeMutableBufferPointer { outBuf in
        while true {
          stream.next_out = outBuf.baseAddress
          stream.avail_out = UInt32(step)
          status = CZlib.inflate(&stream, Z_NO_FLUSH)
          let produced = step - Int(stream.avail_out)
          if produced > 0 {
            if output.count + produced > limit {
              failure = PngineError(
                .limitExceeded,
                "inflated payload passes the cap of \(limit) bytes (stopped at \(output.count + produced))",
                location: .init(chunk: chunk, byteOffset: inputOffset + Int(stream.total_in)))
              return
            }
            output.append(contentsOf: outBuf[0..<produced])
          }
          if status == Z_STREAM_END { return }
          if status == Z_BUF_ERROR {
            failure = PngineError(
              .inflateFailed, "truncated DEFLATE stream",
              location: .init(chunk: chunk, byteOffset: inputOffset + Int(stream.total_in)))
            return
          }
          if status != Z_OK {
            failure = PngineError(
              .inflateFailed, "corrupt DEFLATE stream (zlib status \(status))",
              location: .init(chunk: chunk, byteOffset: inputOffset + Int(stream.total_in)))
            return
          }
          if stream.avail_in == 0 && produced == 0 {
            failure = PngineError(
              .inflateFailed, "truncated DEFLATE stream",
              location: .init(chunk: chunk, byteOffset: inputOffset + Int(stream.total_in)))
            return
          }
        }
      }
    }
    if let failure { throw failure }
    return output
  }
}

/// CRC-32 as PNG uses it (zlib's `crc32`).
enum CRC32 {
  static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
    bytes.withUnsafeBufferPointer { buf in
      UInt32(truncatingIfNeeded: crc32(0, buf.baseAddress, UInt32(buf.count)))
    }
  }
}
