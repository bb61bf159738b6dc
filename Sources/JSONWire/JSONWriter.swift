/// A compact JSON writer with sorted object keys. Binary values become Socket.IO placeholders
/// and are collected in ``attachments``, in document order.
package struct JSONWriter {
  /// The UTF-8 text written so far.
  package var bytes: [UInt8] = []
  /// The binary values met so far, in placeholder order.
  package var attachments: [[UInt8]] = []

  package init() {}

  package mutating func write(_ value: JSONValue) {
    switch value {
    case .null: append("null")
    case .bool(let flag): append(flag ? "true" : "false")
    case .number(let number): writeNumber(number)
    case .string(let text): writeString(text)
    case .array(let elements):
      bytes.append(UInt8(ascii: "["))
      for (offset, element) in elements.enumerated() {
        if offset > 0 { bytes.append(UInt8(ascii: ",")) }
        write(element)
      }
      bytes.append(UInt8(ascii: "]"))
    case .object(let members):
      bytes.append(UInt8(ascii: "{"))
      for (offset, key) in members.keys.sorted().enumerated() {
        if offset > 0 { bytes.append(UInt8(ascii: ",")) }
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
        write(members[key]!)
      }
      bytes.append(UInt8(ascii: "}"))
    case .binary(let data):
      append("{\"_placeholder\":true,\"num\":")
      append(String(attachments.count))
      bytes.append(UInt8(ascii: "}"))
      attachments.append(Array(data))
    }
  }

  private mutating func append(_ text: String) {
    bytes.append(contentsOf: text.utf8)
  }

  private mutating func writeNumber(_ number: Double) {
    guard number.isFinite else {
      append("null")  // JSON has no NaN or infinity; JavaScript's JSON.stringify does the same.
      return
    }
    if number.rounded(.towardZero) == number, abs(number) < 1e15 {
      append(String(Int64(number)))
    } else {
      append(String(number))
    }
  }

  private mutating func writeString(_ text: String) {
    bytes.append(UInt8(ascii: "\""))
    var text = text
    text.withUTF8 { utf8 in
      // Copy runs that need no escaping in bulk (base64 images are one long run).
      var runStart = 0
      for index in 0..<utf8.count {
        let byte = utf8[index]
        if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") { continue }
        if runStart < index {
          bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
        }
        appendEscaped(byte)
        runStart = index + 1
      }
      if runStart < utf8.count {
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
      }
    }
    bytes.append(UInt8(ascii: "\""))
  }

  private mutating func appendEscaped(_ byte: UInt8) {
    switch byte {
    case UInt8(ascii: "\""): append("\\\"")
    case UInt8(ascii: "\\"): append("\\\\")
    case 0x0A: append("\\n")
    case 0x0D: append("\\r")
    case 0x09: append("\\t")
    default:
      let hex = Array("0123456789abcdef".utf8)
      append("\\u00")
      bytes.append(hex[Int(byte >> 4)])
      bytes.append(hex[Int(byte & 0xF)])
    }
  }

}
