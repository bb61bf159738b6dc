#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A JSON value that can also hold binary data: the one value type of the wire, shared by the
/// Socket.IO layer (packet payloads) and the LIVA protocol (event payloads, where it is called
/// `WireValue`), so an event is decoded from the very tree the packet parser built.
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
  case binary(Data)

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
  public var binaryValue: Data? {
    if case .binary(let value) = self { return value }
    return nil
  }

  /// A short name of the value's JSON type, for error messages.
  public var typeName: String {
    switch self {
    case .null: return "null"
    case .bool: return "boolean"
    case .number: return "number"
    case .string: return "string"
    case .array: return "array"
    case .object: return "object"
    case .binary: return "binary"
    }
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
  /// Binary data from an array of bytes (and from array literals: `.binary([1, 2, 3])`).
  public static func binary(_ bytes: [UInt8]) -> JSONValue { .binary(Data(bytes)) }
}
