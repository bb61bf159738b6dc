import Foundation

/// An event payload as it comes off the wire: JSON that may hold binary data.
///
/// This is LIVAProtocol's own input representation, so that the protocol layer depends on
/// Foundation only and not on a particular Socket.IO implementation. It has the same shape as
/// `SocketIO.JSONValue` (binary placeholders already rebuilt), so converting between the two
/// is a one-to-one recursive mapping; any other transport (a URLSession WebSocket, a test)
/// can build it directly.
public enum WireValue: Sendable, Hashable {
  /// `null`.
  case null
  /// `true` or `false`.
  case bool(Bool)
  /// A number.
  case number(Double)
  /// A string.
  case string(String)
  /// An array.
  case array([WireValue])
  /// An object.
  case object([String: WireValue])
  /// Binary data (a Socket.IO attachment).
  case binary(Data)

  /// The member `key` of an object, or nil when this is not an object or has no such key.
  public subscript(key: String) -> WireValue? {
    if case .object(let members) = self { return members[key] }
    return nil
  }

  /// A short name of the value's JSON type, used in error messages.
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
}

extension WireValue: ExpressibleByNilLiteral {
  /// `nil` is JSON `null`.
  public init(nilLiteral: ()) { self = .null }
}

extension WireValue: ExpressibleByBooleanLiteral {
  /// A Boolean literal.
  public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension WireValue: ExpressibleByIntegerLiteral {
  /// An integer literal.
  public init(integerLiteral value: Int) { self = .number(Double(value)) }
}

extension WireValue: ExpressibleByFloatLiteral {
  /// A floating-point literal.
  public init(floatLiteral value: Double) { self = .number(value) }
}

extension WireValue: ExpressibleByStringLiteral {
  /// A string literal.
  public init(stringLiteral value: String) { self = .string(value) }
}

extension WireValue: ExpressibleByArrayLiteral {
  /// An array literal.
  public init(arrayLiteral elements: WireValue...) { self = .array(elements) }
}

extension WireValue: ExpressibleByDictionaryLiteral {
  /// A dictionary literal; a repeated key keeps its last value.
  public init(dictionaryLiteral elements: (String, WireValue)...) {
    self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
  }
}

/// Limits on the values of incoming LIVA events. Anything beyond them is rejected with a
/// ``LIVAProtocolError`` (`outOfRange` or `tooLarge`) naming the event and field.
public struct LIVAEventLimits: Hashable, Sendable {
  /// The largest index accepted anywhere (chunk, batch, section, sequence, frame, sprite
  /// frame number). Default 1,000,000.
  public var maximumIndex: Int
  /// The largest count accepted (total frames, images, batches). Default 1,000,000.
  public var maximumCount: Int
  /// The most frame objects in one event (all sections together). Default 10,000.
  public var maximumFramesPerEvent: Int
  /// The largest decoded image, in bytes. Default 16 MiB.
  public var maximumImageBytes: Int
  /// The largest decoded audio chunk, in bytes. Default 16 MiB.
  public var maximumAudioBytes: Int
  /// The longest string accepted for ids, file names, modes and labels. Default 512.
  public var maximumStringLength: Int
  /// The largest absolute overlay coordinate or size, in pixels. Default 100,000.
  public var maximumCoordinate: Double
  /// The most animations in a manifest. Default 1,000.
  public var maximumAnimations: Int

  /// Creates limits; every argument has a default.
  public init(
    maximumIndex: Int = 1_000_000, maximumCount: Int = 1_000_000,
    maximumFramesPerEvent: Int = 10_000, maximumImageBytes: Int = 16 << 20,
    maximumAudioBytes: Int = 16 << 20, maximumStringLength: Int = 512,
    maximumCoordinate: Double = 100_000, maximumAnimations: Int = 1_000
  ) {
    self.maximumIndex = maximumIndex
    self.maximumCount = maximumCount
    self.maximumFramesPerEvent = maximumFramesPerEvent
    self.maximumImageBytes = maximumImageBytes
    self.maximumAudioBytes = maximumAudioBytes
    self.maximumStringLength = maximumStringLength
    self.maximumCoordinate = maximumCoordinate
    self.maximumAnimations = maximumAnimations
  }

  /// The default limits.
  public static let `default` = LIVAEventLimits()
}
