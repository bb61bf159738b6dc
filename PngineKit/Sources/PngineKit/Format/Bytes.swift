/// Little- and big-endian reads from a byte array that return `nil` past the end instead of
/// trapping. Offsets are absolute indices into `bytes`.
struct ByteView {
  let bytes: [UInt8]

  init(_ bytes: [UInt8]) { self.bytes = bytes }

  var count: Int { bytes.count }

  @inline(__always)
  func has(_ offset: Int, _ length: Int) -> Bool {
    offset >= 0 && length >= 0 && offset <= bytes.count - length
  }

  @inline(__always)
  func u8(_ offset: Int) -> UInt8? {
    has(offset, 1) ? bytes[offset] : nil
  }

  @inline(__always)
  func u16le(_ offset: Int) -> UInt16? {
    guard has(offset, 2) else { return nil }
    return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
  }

  @inline(__always)
  func u32le(_ offset: Int) -> UInt32? {
    guard has(offset, 4) else { return nil }
    return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8
      | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
  }

  @inline(__always)
  func u32be(_ offset: Int) -> UInt32? {
    guard has(offset, 4) else { return nil }
    return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
      | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
  }
}

/// `values` as little-endian f32 bytes, the first `size` of them (0 … `4 × values.count`): the
/// uniform writes upstream's hosts make (time, pointer).
func littleEndianFloatBytes(_ values: [Float], prefix size: Int) -> [UInt8] {
  var bytes: [UInt8] = []
  bytes.reserveCapacity(values.count * 4)
  for value in values {
    let bits = value.bitPattern
    for shift in stride(from: 0, to: 32, by: 8) {
      bytes.append(UInt8((bits >> UInt32(shift)) & 0xFF))
    }
  }
  return Array(bytes.prefix(max(0, min(size, bytes.count))))
}

/// `value` as unsigned LEB128 (WebAssembly's encoding of sizes, counts and indices).
func unsignedLEB128(_ value: UInt64) -> [UInt8] {
  var value = value
  var out: [UInt8] = []
  repeat {
    var byte = UInt8(value & 0x7F)
    value >>= 7
    if value != 0 { byte |= 0x80 }
    out.append(byte)
  } while value != 0
  return out
}
