#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A strict, allocation-light JSON reader over UTF-8 bytes (RFC 8259), with a nesting limit.
///
/// Written by hand rather than with Foundation so that the wire's modules stay free of
/// Foundation, so that strings without escapes (the long base64 images) are copied once, and
/// so that every failure is a ``JSONWireError`` with the byte offset of the problem.
package struct JSONReader {
  private let bytes: UnsafeBufferPointer<UInt8>
  private var index: Int
  private let end: Int
  private let maximumDepth: Int
  private let baseOffset: Int
  /// Values (of any kind, containers included) the document may still hold.
  private var valuesLeft: Int

  /// Parses exactly one JSON value filling `slice` (surrounding whitespace allowed).
  /// `baseOffset` is added to the offsets reported in errors.
  ///
  /// Memory: the reader reserves nothing ahead (an empty `{}` or `[]` allocates nothing), and
  /// a document of more than `maximumValues` values (containers, members and elements alike)
  /// is refused when the next one is met, before it is built. What a document of `n` bytes
  /// can hold is then bounded by the smaller of `n` and `maximumValues` times the size of one
  /// small container (a few hundred bytes), whatever its shape.
  package static func parseDocument(
    _ slice: Slice<UnsafeBufferPointer<UInt8>>, maximumDepth: Int, baseOffset: Int,
    maximumValues: Int = .max
  ) throws(JSONWireError) -> JSONValue {
    var reader = JSONReader(
      bytes: slice.base, index: slice.startIndex, end: slice.endIndex,
      maximumDepth: maximumDepth, baseOffset: baseOffset - slice.startIndex,
      valuesLeft: maximumValues)
    let value = try reader.parseValue(depth: 0)
    reader.skipWhitespace()
    guard reader.index == reader.end else { throw reader.error("trailing characters after JSON") }
    return value
  }

  private func error(_ message: String) -> JSONWireError {
    JSONWireError(message, offset: baseOffset + index)
  }

  private mutating func skipWhitespace() {
    while index < end {
      switch bytes[index] {
      case 0x20, 0x09, 0x0A, 0x0D: index += 1
      default: return
      }
    }
  }

  private mutating func parseValue(depth: Int) throws(JSONWireError) -> JSONValue {
    skipWhitespace()
    guard index < end else { throw error("unexpected end of JSON") }
    valuesLeft -= 1
    guard valuesLeft >= 0 else {
      var refusal = error("more JSON values than the limit")
      refusal.exceedsLimit = true
      throw refusal
    }
    switch bytes[index] {
    case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
    case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
    case UInt8(ascii: "\""): return .string(try parseString())
    case UInt8(ascii: "t"):
      try expectLiteral("true")
      return .bool(true)
    case UInt8(ascii: "f"):
      try expectLiteral("false")
      return .bool(false)
    case UInt8(ascii: "n"):
      try expectLiteral("null")
      return .null
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
      return .number(try parseNumber())
    default:
      throw error("unexpected character in JSON")
    }
  }

  private mutating func expectLiteral(_ literal: StaticString) throws(JSONWireError) {
    let count = literal.utf8CodeUnitCount
    guard end - index >= count else { throw error("truncated literal") }
    let matches = literal.withUTF8Buffer { expected in
      var offset = 0
      while offset < count {
        if bytes[index + offset] != expected[offset] { return false }
        offset += 1
      }
      return true
    }
    guard matches else { throw error("invalid literal") }
    index += count
  }

  private mutating func parseObject(depth: Int) throws(JSONWireError) -> JSONValue {
    guard depth <= maximumDepth else { throw error("JSON nests deeper than \(maximumDepth)") }
    index += 1  // {
    // Nothing reserved: `[{},{},…]` must cost no storage per object.
    var members: [String: JSONValue] = [:]
    skipWhitespace()
    if index < end, bytes[index] == UInt8(ascii: "}") {
      index += 1
      return .object(members)
    }
    while true {
      skipWhitespace()
      guard index < end, bytes[index] == UInt8(ascii: "\"") else {
        throw error("expected a string key")
      }
      let key = try parseString()
      skipWhitespace()
      guard index < end, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
      index += 1
      members[key] = try parseValue(depth: depth)
      skipWhitespace()
      guard index < end else { throw error("unterminated object") }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
      } else if bytes[index] == UInt8(ascii: "}") {
        index += 1
        return .object(members)
      } else {
        throw error("expected ',' or '}'")
      }
    }
  }

  private mutating func parseArray(depth: Int) throws(JSONWireError) -> JSONValue {
    guard depth <= maximumDepth else { throw error("JSON nests deeper than \(maximumDepth)") }
    index += 1  // [
    var elements: [JSONValue] = []
    skipWhitespace()
    if index < end, bytes[index] == UInt8(ascii: "]") {
      index += 1
      return .array(elements)
    }
    while true {
      elements.append(try parseValue(depth: depth))
      skipWhitespace()
      guard index < end else { throw error("unterminated array") }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
      } else if bytes[index] == UInt8(ascii: "]") {
        index += 1
        return .array(elements)
      } else {
        throw error("expected ',' or ']'")
      }
    }
  }

  private mutating func parseString() throws(JSONWireError) -> String {
    index += 1  // opening quote
    let start = index
    // Long strings (base64 images): find the closing quote with the C library's vectorised
    // memchr, then check the span for a backslash (memchr again) and control characters
    // (one SWAR test per eight bytes). Falls through to the byte loop on anything special.
    if end - index >= 128, let base = bytes.baseAddress,
      let found = memchr(base + index, 0x22, end - index)
    {
      let quote = UnsafeRawPointer(found) - UnsafeRawPointer(base)
      if memchr(base + index, 0x5C, quote - index) == nil,
        !Self.containsControlCharacter(base, from: index, to: quote)
      {
        let text = String(
          decoding: UnsafeBufferPointer(start: base + start, count: quote - start), as: UTF8.self)
        index = quote + 1
        return text
      }
    }
    // Fast path: no escapes, copy the bytes once. Skip eight bytes at a time while none of
    // them is a quote, a backslash or a control character (SWAR tests, exact for existence).
    if let base = bytes.baseAddress {
      let raw = UnsafeRawPointer(base)
      let ones: UInt64 = 0x0101_0101_0101_0101
      let highs: UInt64 = 0x8080_8080_8080_8080
      while index + 8 <= end {
        let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
        let control = (word &- ones &* 0x20) & ~word & highs
        let quote = ((word ^ (ones &* 0x22)) &- ones) & ~(word ^ (ones &* 0x22)) & highs
        let backslash = ((word ^ (ones &* 0x5C)) &- ones) & ~(word ^ (ones &* 0x5C)) & highs
        if control | quote | backslash != 0 { break }
        index += 8
      }
    }
    while index < end {
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        let text = String(
          decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        index += 1
        return text
      }
      if byte == UInt8(ascii: "\\") { break }
      if byte < 0x20 { throw error("control character in string") }
      index += 1
    }
    guard index < end else { throw error("unterminated string") }
    var buffer = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<index]))
    while index < end {
      let byte = bytes[index]
      switch byte {
      case UInt8(ascii: "\""):
        index += 1
        return String(decoding: buffer, as: UTF8.self)
      case UInt8(ascii: "\\"):
        index += 1
        guard index < end else { throw error("unterminated escape") }
        let escaped = bytes[index]
        index += 1
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(escaped)
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"): try appendUnicodeEscape(to: &buffer)
        default: throw error("invalid escape")
        }
      default:
        if byte < 0x20 { throw error("control character in string") }
        buffer.append(byte)
        index += 1
      }
    }
    throw error("unterminated string")
  }

  /// Whether a byte below 0x20 lies in `base[from..<to]`.
  private static func containsControlCharacter(
    _ base: UnsafePointer<UInt8>, from: Int, to: Int
  ) -> Bool {
    let raw = UnsafeRawPointer(base)
    let ones: UInt64 = 0x0101_0101_0101_0101
    var index = from
    var found: UInt64 = 0
    // A byte b < 0x20 sets its high bit in (b - 0x20) & ~b; bytes >= 0x80 never do.
    while index + 8 <= to {
      let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
      found |= (word &- ones &* 0x20) & ~word
      index += 8
    }
    if found & (ones &* 0x80) != 0 { return true }
    while index < to {
      if base[index] < 0x20 { return true }
      index += 1
    }
    return false
  }

  private mutating func readHex4() throws(JSONWireError) -> UInt32 {
    guard end - index >= 4 else { throw error("truncated \\u escape") }
    var value: UInt32 = 0
    for _ in 0..<4 {
      let byte = bytes[index]
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
      default: throw error("invalid \\u escape")
      }
      value = value << 4 | UInt32(digit)
      index += 1
    }
    return value
  }

  /// Appends the scalar of a `\uXXXX` escape (a surrogate pair when one follows), writing
  /// U+FFFD for a lone surrogate, as JSON allows such strings but Swift strings cannot hold them.
  private mutating func appendUnicodeEscape(to buffer: inout [UInt8]) throws(JSONWireError) {
    var scalarValue = try readHex4()
    if (0xD800...0xDBFF).contains(scalarValue) {
      if end - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
      {
        let saved = index
        index += 2
        let low = try readHex4()
        if (0xDC00...0xDFFF).contains(low) {
          scalarValue = 0x10000 + ((scalarValue - 0xD800) << 10) + (low - 0xDC00)
        } else {
          index = saved
          scalarValue = 0xFFFD
        }
      } else {
        scalarValue = 0xFFFD
      }
    } else if (0xDC00...0xDFFF).contains(scalarValue) {
      scalarValue = 0xFFFD
    }
    let scalar = Unicode.Scalar(scalarValue) ?? "\u{FFFD}"
    buffer.append(contentsOf: UTF8.encode(scalar)!)
  }

  private mutating func parseNumber() throws(JSONWireError) -> Double {
    let start = index
    if bytes[index] == UInt8(ascii: "-") { index += 1 }
    guard index < end else { throw error("truncated number") }
    if bytes[index] == UInt8(ascii: "0") {
      index += 1
    } else if isDigit(bytes[index]) {
      while index < end, isDigit(bytes[index]) { index += 1 }
    } else {
      throw error("invalid number")
    }
    var isInteger = true
    if index < end, bytes[index] == UInt8(ascii: ".") {
      isInteger = false
      index += 1
      guard index < end, isDigit(bytes[index]) else { throw error("invalid fraction") }
      while index < end, isDigit(bytes[index]) { index += 1 }
    }
    if index < end, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
      isInteger = false
      index += 1
      if index < end, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
        index += 1
      }
      guard index < end, isDigit(bytes[index]) else { throw error("invalid exponent") }
      while index < end, isDigit(bytes[index]) { index += 1 }
    }
    let digits = UnsafeBufferPointer(rebasing: bytes[start..<index])
    if isInteger, digits.count <= 16 {
      var value: Int64 = 0
      var negative = false
      for byte in digits {
        if byte == UInt8(ascii: "-") {
          negative = true
        } else {
          value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
      }
      return Double(negative ? -value : value)
    }
    guard let value = Double(String(decoding: digits, as: UTF8.self)), value.isFinite else {
      throw error("number out of range")
    }
    return value
  }

  private func isDigit(_ byte: UInt8) -> Bool {
    byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
  }
}
