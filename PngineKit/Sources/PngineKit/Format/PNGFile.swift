/// Caps on what the format stage accepts. The defaults are upstream's.
public struct FormatLimits: Sendable, Hashable {
  /// The largest chunk data accepted, in bytes (16 MiB).
  public var maxChunkLength: Int
  /// The largest inflated payload accepted, in bytes (64 MiB).
  public var maxInflatedLength: Int

  /// Makes limits; the defaults are upstream's 16 MiB chunk and 64 MiB inflated.
  public init(maxChunkLength: Int = 16 << 20, maxInflatedLength: Int = 64 << 20) {
    self.maxChunkLength = maxChunkLength
    self.maxInflatedLength = maxInflatedLength
  }
}

/// One chunk of a PNG, as read (its CRC already checked).
public struct PNGChunk: Sendable, Hashable {
  /// The four-letter type, e.g. `IHDR`, `pNGb`.
  public var type: String
  /// The offset of the chunk's length field in the file.
  public var offset: Int
  /// The length of the chunk's data.
  public var length: Int
}

/// A PNG read chunk by chunk with every CRC checked, and the PNGine chunks it carries.
///
/// `pNGb` holds the payload (`[u8 version = 1][u8 flags][payload]`, flags bit 0 = raw
/// DEFLATE); `pNGm` (JSON metadata), `pNGa` (audio WASM) and `pNGf` (a pre-flattened command
/// buffer) are reported.
public struct PNGFile: Sendable {
  /// Every chunk in file order.
  public var chunks: [PNGChunk]
  /// The inflated PNGB payload of the `pNGb` chunk, if there is one.
  public var payloadBytes: [UInt8]?
  /// The `pNGb` chunk's version byte and flags byte.
  public var payloadVersion: UInt8?
  /// The `pNGb` flags byte (bit 0: the payload was raw DEFLATE).
  public var payloadFlags: UInt8?
  /// The `pNGm` JSON metadata, as text.
  public var metadata: String?
  /// The `pNGa` chunk's data length (audio WASM), if present.
  public var audioLength: Int?
  /// The `pNGf` chunk's data length (pre-flattened command buffer), if present.
  public var flattenedLength: Int?

  static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

  /// Reads a PNG: checks the signature and every chunk's CRC, stops at `IEND`, inflates the
  /// `pNGb` payload under `limits`. A PNG without `pNGb` is returned with `payloadBytes == nil`.
  public static func read(_ bytes: [UInt8], limits: FormatLimits = FormatLimits())
    throws(PngineError) -> PNGFile
  {
    let view = ByteView(bytes)
    guard bytes.count >= 8, bytes[0..<8].elementsEqual(signature) else {
      throw PngineError(.invalidPNG, "not a PNG: bad signature", location: .init(byteOffset: 0))
    }
    var file = PNGFile(chunks: [])
    var offset = 8
    var sawEnd = false
    while offset < bytes.count {
      guard let rawLength = view.u32be(offset), view.has(offset + 4, 4) else {
        throw PngineError(
          .invalidPNG, "truncated chunk header", location: .init(byteOffset: offset))
      }
      let type = chunkName(bytes[(offset + 4)..<(offset + 8)])
      guard rawLength <= UInt32(Int32.max) else {
        throw PngineError(
          .invalidPNG, "chunk length \(rawLength) above 2^31-1",
          location: .init(chunk: type, byteOffset: offset))
      }
      let length = Int(rawLength)
      guard length <= limits.maxChunkLength else {
        throw PngineError(
          .limitExceeded, "chunk of \(length) bytes passes the cap of \(limits.maxChunkLength)",
          location: .init(chunk: type, byteOffset: offset))
      }
      guard view.has(offset + 8, length + 4) else {
        throw PngineError(
          .invalidPNG, "chunk runs past the end of the file (\(length) bytes declared)",
          location: .init(chunk: type, byteOffset: offset))
      }
      let dataStart = offset + 8
      let stored = view.u32be(dataStart + length)!
      let computed = CRC32.checksum(bytes[(offset + 4)..<(dataStart + length)])
      guard stored == computed else {
        throw PngineError(
          .crcMismatch,
          "CRC mismatch: stored 0x\(String(stored, radix: 16)), computed 0x\(String(computed, radix: 16))",
          location: .init(chunk: type, byteOffset: offset))
      }
      file.chunks.append(PNGChunk(type: type, offset: offset, length: length))
      let data = bytes[dataStart..<(dataStart + length)]
      switch type {
      case "pNGb":
        guard file.payloadBytes == nil else {
          throw PngineError(
            .invalidPNG, "a second pNGb chunk", location: .init(chunk: type, byteOffset: offset))
        }
        try file.readPayload(data, chunkOffset: offset, limits: limits)
      case "pNGm": file.metadata = String(decoding: data, as: UTF8.self)
      case "pNGa": file.audioLength = length
      case "pNGf": file.flattenedLength = length
      default: break
      }
      offset = dataStart + length + 4
      if type == "IEND" {
        sawEnd = true
        break
      }
    }
    guard sawEnd else {
      throw PngineError(.invalidPNG, "no IEND chunk", location: .init(byteOffset: offset))
    }
    return file
  }

  private mutating func readPayload(
    _ data: ArraySlice<UInt8>, chunkOffset: Int, limits: FormatLimits
  ) throws(PngineError) {
    guard data.count >= 2 else {
      throw PngineError(
        .invalidHeader, "pNGb chunk shorter than its 2-byte header",
        location: .init(chunk: "pNGb", byteOffset: chunkOffset))
    }
    let version = data[data.startIndex]
    let flags = data[data.startIndex + 1]
    guard version == 1 else {
      throw PngineError(
        .invalidHeader, "pNGb version \(version), expected 1",
        location: .init(chunk: "pNGb", byteOffset: chunkOffset + 8))
    }
    payloadVersion = version
    payloadFlags = flags
    let body = Array(data.dropFirst(2))
    if flags & 1 != 0 {
      payloadBytes = try RawInflate.inflate(
        body, limit: limits.maxInflatedLength, chunk: "pNGb", inputOffset: chunkOffset + 10)
    } else {
      guard body.count <= limits.maxInflatedLength else {
        throw PngineError(
          .limitExceeded, "payload passes the cap of \(limits.maxInflatedLength) bytes",
          location: .init(chunk: "pNGb", byteOffset: chunkOffset))
      }
      payloadBytes = body
    }
  }

  static func chunkName(_ bytes: ArraySlice<UInt8>) -> String {
    String(
      decoding: bytes.map { (0x20..<0x7F).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
  }
}
