/// A JSON value that can also hold binary data: the payload of a Socket.IO packet.
///
/// On receive, the binary placeholders of a BINARY_EVENT or BINARY_ACK
/// (`{"_placeholder":true,"num":N}`) are replaced by ``binary(_:)`` values wherever they
/// are nested. On send, every ``binary(_:)`` value is split out into an attachment and a
/// placeholder is written in its place, so an event can mix JSON and bytes freely.
///
/// Numbers are held as `Double`, as in JavaScript: integers are exact up to 2^53.
public enum JSONValue: Sendable, Hashable {
  /// `null`.
  case null
  /// `true` or `false`.
  case bool(Bool)
  /// A number.
  case number(Double)
  /// A string.
  case string(String)
  /// An array.
  case array([JSONValue])
  /// An object. Key order is not preserved; the encoder writes keys sorted.
  case object([String: JSONValue])
  /// Binary data: an attachment of a binary packet.
  case binary([UInt8])

  /// The member `key` of an object, or nil when this is not an object or has no such key.
  public subscript(key: String) -> JSONValue? {
    if case .object(let members) = self { return members[key] }
    return nil
  }

  /// The element at `index` of an array, or nil when this is not an array or it is too short.
  public subscript(index: Int) -> JSONValue? {
    if case .array(let elements) = self, elements.indices.contains(index) {
      return elements[index]
    }
    return nil
  }

  /// The string, when this is a string.
  public var stringValue: String? {
    if case .string(let value) = self { return value }
    return nil
  }

  /// The number, when this is a number.
  public var numberValue: Double? {
    if case .number(let value) = self { return value }
    return nil
  }

  /// The number as an `Int`, when this is a number with no fractional part that fits.
  public var intValue: Int? {
    guard case .number(let value) = self, value.rounded(.towardZero) == value,
      value >= -9_007_199_254_740_992, value <= 9_007_199_254_740_992
    else { return nil }
    return Int(value)
  }

  /// The Boolean, when this is `true` or `false`.
  public var boolValue: Bool? {
    if case .bool(let value) = self { return value }
    return nil
  }

  /// The elements, when this is an array.
  public var arrayValue: [JSONValue]? {
    if case .array(let value) = self { return value }
    return nil
  }

  /// The members, when this is an object.
  public var objectValue: [String: JSONValue]? {
    if case .object(let value) = self { return value }
    return nil
  }

  /// The bytes, when this is binary data.
  public var binaryValue: [UInt8]? {
    if case .binary(let value) = self { return value }
    return nil
  }

  /// Whether this value contains binary data at any depth.
  public var containsBinary: Bool {
    switch self {
    case .binary: return true
    case .array(let elements): return elements.contains { $0.containsBinary }
    case .object(let members): return members.values.contains { $0.containsBinary }
    case .null, .bool, .number, .string: return false
    }
  }
}

extension JSONValue: ExpressibleByNilLiteral {
  /// `nil` is JSON `null`.
  public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
  /// A Boolean literal.
  public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
  /// An integer literal.
  public init(integerLiteral value: Int) { self = .number(Double(value)) }
}

extension JSONValue: ExpressibleByFloatLiteral {
  /// A floating-point literal.
  public init(floatLiteral value: Double) { self = .number(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
  /// A string literal.
  public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
  /// An array literal.
  public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
  /// A dictionary literal; a repeated key keeps its last value.
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
  }
}

extension JSONValue {
  /// Parses JSON text (no binary placeholders are interpreted).
  ///
  /// - Throws: ``SocketIOError`` with code `malformedJSON` when the text is not one valid
  ///   JSON value or nests deeper than `maximumNestingDepth`.
  public init(parsing text: String, maximumNestingDepth: Int = 64) throws(SocketIOError) {
    self = try withUTF8Bytes(of: text) { (bytes) throws(SocketIOError) -> JSONValue in
      try JSONReader.parseDocument(bytes[...], maximumDepth: maximumNestingDepth, baseOffset: 0)
    }
  }

  /// Serializes the value as compact JSON with sorted keys. Binary values are written as
  /// Socket.IO placeholders numbered from 0 in document order; use
  /// ``SocketIOPacket/encode()`` to get the attachments as well.
  public var jsonText: String {
    var writer = JSONWriter()
    writer.write(self)
    return String(decoding: writer.bytes, as: UTF8.self)
  }
}
