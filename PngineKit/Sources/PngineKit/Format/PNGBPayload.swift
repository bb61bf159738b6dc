/// The 40-byte PNGB header (little-endian).
public struct PNGBHeader: Sendable, Hashable {
  /// The format version (0; every known dialect claims 0).
  public var version: UInt16
  /// Flags: bit 0 embedded executor, bit 1 animation table, bit 2 device-limits table,
  /// bit 3 premultiplied canvas.
  public var flags: UInt16
  /// The plugin bits.
  public var plugins: UInt8
  /// Offset of the embedded executor (WASM).
  public var executorOffset: UInt32
  /// Length of the embedded executor.
  public var executorLength: UInt32
  /// Offset of the string table.
  public var stringTableOffset: UInt32
  /// Offset of the data section.
  public var dataSectionOffset: UInt32
  /// Offset of the WGSL table.
  public var wgslTableOffset: UInt32
  /// Offset of the uniform table.
  public var uniformTableOffset: UInt32
  /// Offset of the animation table.
  public var animationTableOffset: UInt32

  /// The header's size in bytes.
  public static let size = 40

  /// Whether flags bit 0 (embedded executor) is set.
  public var hasEmbeddedExecutor: Bool { flags & 1 != 0 }
}

/// A PNGB payload whose header and section offsets have been validated.
public struct PNGBPayload: Sendable {
  /// The whole payload.
  public var bytes: [UInt8]
  /// Its header.
  public var header: PNGBHeader

  /// The embedded executor's bytes, or `nil` when flags bit 0 is clear.
  public var executorBytes: ArraySlice<UInt8>? {
    guard header.hasEmbeddedExecutor else { return nil }
    let start = Int(header.executorOffset)
    return bytes[start..<(start + Int(header.executorLength))]
  }

  /// Validates the header: magic `PNGB`, version 0, the executor inside the payload, and the
  /// sections ascending (header ≤ executor end ≤ strings ≤ data ≤ WGSL ≤ uniforms ≤
  /// animation ≤ end). Offsets in errors are into the payload.
  public init(_ bytes: [UInt8]) throws(PngineError) {
    let view = ByteView(bytes)
    guard bytes.count >= PNGBHeader.size else {
      throw PngineError(
        .invalidHeader, "payload of \(bytes.count) bytes is shorter than the 40-byte PNGB header",
        location: .init(chunk: "pNGb", byteOffset: 0))
    }
    guard bytes[0..<4].elementsEqual(Array("PNGB".utf8)) else {
      throw PngineError(
        .invalidHeader, "bad magic (expected PNGB)", location: .init(chunk: "pNGb", byteOffset: 0))
    }
    let header = PNGBHeader(
      version: view.u16le(4)!, flags: view.u16le(6)!, plugins: bytes[8],
      executorOffset: view.u32le(12)!, executorLength: view.u32le(16)!,
      stringTableOffset: view.u32le(20)!, dataSectionOffset: view.u32le(24)!,
      wgslTableOffset: view.u32le(28)!, uniformTableOffset: view.u32le(32)!,
      animationTableOffset: view.u32le(36)!)
    guard header.version == 0 else {
      throw PngineError(
        .invalidHeader, "unsupported PNGB version \(header.version)",
        location: .init(chunk: "pNGb", byteOffset: 4))
    }
    var floor = UInt64(PNGBHeader.size)
    if header.hasEmbeddedExecutor {
      let end = UInt64(header.executorOffset) + UInt64(header.executorLength)
      guard header.executorOffset >= UInt32(PNGBHeader.size), header.executorLength > 0,
        end <= UInt64(bytes.count)
      else {
        throw PngineError(
          .invalidHeader,
          "executor [\(header.executorOffset), +\(header.executorLength)) outside the payload of \(bytes.count) bytes",
          location: .init(chunk: "pNGb", byteOffset: 12))
      }
      floor = end
    }
    let sections: [(String, UInt32, Int)] = [
      ("string table", header.stringTableOffset, 20),
      ("data section", header.dataSectionOffset, 24),
      ("WGSL table", header.wgslTableOffset, 28),
      ("uniform table", header.uniformTableOffset, 32),
      ("animation table", header.animationTableOffset, 36),
    ]
    for (name, value, field) in sections {
      guard UInt64(value) >= floor, UInt64(value) <= UInt64(bytes.count) else {
        throw PngineError(
          .invalidHeader,
          "\(name) offset \(value) out of order or outside the payload (must lie in [\(floor), \(bytes.count)])",
          location: .init(chunk: "pNGb", byteOffset: field))
      }
      floor = UInt64(value)
    }
    self.bytes = bytes
    self.header = header
  }

  /// The string table: `u16 count, u16 offsets[], u16 lengths[]`, then UTF-8 bytes.
  public func strings() throws(PngineError) -> [String] {
    let start = Int(header.stringTableOffset)
    let end = Int(header.dataSectionOffset)
    let view = ByteView(bytes)
    guard end - start >= 2, let count = view.u16le(start) else {
      throw tableError("string table shorter than its count", at: start)
    }
    let dataStart = start + 2 + Int(count) * 4
    guard dataStart <= end else {
      throw tableError("string table of \(count) entries does not fit", at: start)
    }
    var out: [String] = []
    out.reserveCapacity(Int(count))
    for i in 0..<Int(count) {
      let offset = Int(view.u16le(start + 2 + i * 2)!)
      let length = Int(view.u16le(start + 2 + Int(count) * 2 + i * 2)!)
      guard dataStart + offset + length <= end else {
        throw tableError("string \(i) runs past the table", at: start + 2 + i * 2)
      }
      let s = dataStart + offset
      out.append(String(decoding: bytes[s..<(s + length)], as: UTF8.self))
    }
    return out
  }

  /// The data section's entries: `u16 count, {u32 offset, u32 length}[]`, offsets relative to
  /// the end of the entry list. Returned as payload ranges, each checked to lie inside the
  /// section, and their sum too.
  public func dataBlobs() throws(PngineError) -> [Range<Int>] {
    let start = Int(header.dataSectionOffset)
    let end = Int(header.wgslTableOffset)
    let view = ByteView(bytes)
    guard end - start >= 2, let count = view.u16le(start) else {
      throw tableError("data section shorter than its count", at: start)
    }
    let blobStart = start + 2 + Int(count) * 8
    guard blobStart <= end else {
      throw tableError("data section of \(count) entries does not fit", at: start)
    }
    var total = 0
    var out: [Range<Int>] = []
    out.reserveCapacity(Int(count))
    for i in 0..<Int(count) {
      let offset = Int(view.u32le(start + 2 + i * 8)!)
      let length = Int(view.u32le(start + 6 + i * 8)!)
      total += length
      guard offset <= end - blobStart, length <= end - blobStart - offset,
        total <= end - blobStart
      else {
        throw tableError("data entry \(i) runs past the section", at: start + 2 + i * 8)
      }
      out.append((blobStart + offset)..<(blobStart + offset + length))
    }
    return out
  }

  /// The WGSL table: `varint count`, then per module `{varint data_id, varint dep_count,
  /// varint deps[]}`. Returns each module's data id and dependencies.
  public func wgslModules() throws(PngineError) -> [(dataID: UInt32, dependencies: [UInt32])] {
    var cursor = Int(header.wgslTableOffset)
    let end = Int(header.uniformTableOffset)
    let count = try varint(&cursor, end: end)
    guard count <= UInt32(end - cursor) else {
      throw tableError("WGSL table of \(count) entries does not fit", at: cursor)
    }
    var out: [(dataID: UInt32, dependencies: [UInt32])] = []
    for _ in 0..<count {
      let id = try varint(&cursor, end: end)
      let depCount = try varint(&cursor, end: end)
      guard depCount <= UInt32(end - cursor) else {
        throw tableError("WGSL entry with \(depCount) dependencies does not fit", at: cursor)
      }
      var deps: [UInt32] = []
      for _ in 0..<depCount { deps.append(try varint(&cursor, end: end)) }
      out.append((id, deps))
    }
    return out
  }

  /// A PNGB varint: `0xxxxxxx` (1 byte), `10xxxxxx` + 1 byte, `11xxxxxx` + 3 bytes, big-endian
  /// payload.
  func varint(_ cursor: inout Int, end: Int) throws(PngineError) -> UInt32 {
    guard cursor < end, cursor < bytes.count else {
      throw tableError("varint past the end of its table", at: cursor)
    }
    let first = bytes[cursor]
    let extra = first & 0x80 == 0 ? 0 : (first & 0x40 == 0 ? 1 : 3)
    guard cursor + extra < end else {
      throw tableError("varint past the end of its table", at: cursor)
    }
    var value = UInt32(extra == 0 ? first : first & 0x3F)
    for i in 0..<extra { value = value << 8 | UInt32(bytes[cursor + 1 + i]) }
    cursor += 1 + extra
    return value
  }

  private func tableError(_ message: String, at offset: Int) -> PngineError {
    PngineError(.invalidTable, message, location: .init(chunk: "pNGb", byteOffset: offset))
  }
}
