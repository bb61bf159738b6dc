import Foundation

/// Decodes standard base64 (RFC 4648 §4, `+` and `/`), with or without `=` padding (up to
/// two, ignored).
///
/// Images and audio arrive as base64 strings inside the JSON of every speech chunk, tens of
/// megabytes a minute, so this sits on the receive path. It decodes four characters per step
/// through four lookup tables whose entries are already shifted into place, so one `|`
/// assembles three bytes and one comparison checks all four characters. Anything that is not
/// in the alphabet (whitespace, URL-safe `-`/`_`, `=` before the end, a lone trailing
/// character) makes it return `nil`.
enum Base64 {
  /// A marker bit above the 24 bits of a decoded quantum: set by any invalid character.
  private static let invalid: UInt32 = 1 << 24

  /// `table[k * 256 + c]` is the 6-bit value of character `c` shifted into place for
  /// position `k` of a quantum, or ``invalid``.
  private static let table: [UInt32] = {
    var values = [UInt32](repeating: invalid, count: 256)
    for (value, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
      .utf8.enumerated()
    {
      values[Int(character)] = UInt32(value)
    }
    return [18, 12, 6, 0].flatMap { shift in
      values.map { $0 == invalid ? invalid : $0 << UInt32(shift) }
    }
  }()

  /// The decoded bytes of `text`, or `nil` when it is not valid base64.
  static func decode(_ text: Substring.UTF8View) -> Data? {
    if let result = text.withContiguousStorageIfAvailable({ decode($0) }) { return result }
    return decode(Array(text))
  }

  /// The decoded bytes of `encoded`, or `nil` when it is not valid base64.
  static func decode(_ encoded: [UInt8]) -> Data? {
    encoded.withUnsafeBufferPointer { decode($0) }
  }

  /// The decoded bytes of `encoded`, or `nil` when it is not valid base64.
  static func decode(_ encoded: UnsafeBufferPointer<UInt8>) -> Data? {
    var length = encoded.count
    // Padding: up to two `=` at the end, ignored (as Foundation's decoder does, a padded
    // text need not be whole quanta).
    var padding = 0
    while padding < 2, length > 0, encoded[length - 1] == UInt8(ascii: "=") {
      length -= 1
      padding += 1
    }
    let tail = length % 4
    if tail == 1 { return nil }
    let whole = length - tail
    let size = whole / 4 * 3 + (tail == 0 ? 0 : tail - 1)
    guard size > 0 else { return length == 0 && padding == 0 ? Data() : nil }
    guard let output = malloc(size)?.assumingMemoryBound(to: UInt8.self) else { return nil }
    let valid = table.withUnsafeBufferPointer { table in
      guard let input = encoded.baseAddress, let t = table.baseAddress else { return false }
      var seen: UInt32 = 0
      var read = 0
      var written = 0
      while read < whole {
        let quantum =
          t[Int(input[read])] | t[256 + Int(input[read + 1])] | t[512 + Int(input[read + 2])]
          | t[768 + Int(input[read + 3])]
        seen |= quantum
        output[written] = UInt8(truncatingIfNeeded: quantum >> 16)
        output[written + 1] = UInt8(truncatingIfNeeded: quantum >> 8)
        output[written + 2] = UInt8(truncatingIfNeeded: quantum)
        read += 4
        written += 3
      }
      // A final partial quantum: two characters make one byte, three make two (the bits
      // below the last byte are ignored, as most decoders do).
      if tail > 0 {
        var quantum = t[Int(input[read])] | t[256 + Int(input[read + 1])]
        if tail == 3 { quantum |= t[512 + Int(input[read + 2])] }
        seen |= quantum
        output[written] = UInt8(truncatingIfNeeded: quantum >> 16)
        if tail == 3 { output[written + 1] = UInt8(truncatingIfNeeded: quantum >> 8) }
      }
      return seen & invalid == 0
    }
    guard valid else {
      free(output)
      return nil
    }
    return Data(bytesNoCopy: output, count: size, deallocator: .free)
  }
}
