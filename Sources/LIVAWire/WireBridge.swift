import Foundation
import LIVAProtocol
import SocketIO

// The bridge between the Socket.IO layer's values and the LIVA protocol's: the two modules know
// nothing of each other (SocketIO is generic, LIVAProtocol imports only Foundation), so the
// client and the reference backend both convert here.

extension WireValue {
  /// Converts a Socket.IO value (binary attachments included) to the protocol's wire value.
  public init(_ value: JSONValue) {
    switch value {
    case .null: self = .null
    case .bool(let bool): self = .bool(bool)
    case .number(let number): self = .number(number)
    case .string(let string): self = .string(string)
    case .array(let array): self = .array(array.map(WireValue.init))
    case .object(let object): self = .object(object.mapValues(WireValue.init))
    case .binary(let bytes): self = .binary(Data(bytes))
    }
  }
}

extension JSONValue {
  /// Converts a protocol wire value to a Socket.IO value (binary becomes an attachment).
  public init(_ value: WireValue) {
    switch value {
    case .null: self = .null
    case .bool(let bool): self = .bool(bool)
    case .number(let number): self = .number(number)
    case .string(let string): self = .string(string)
    case .array(let array): self = .array(array.map(JSONValue.init))
    case .object(let object): self = .object(object.mapValues(JSONValue.init))
    case .binary(let data): self = .binary(Array(data))
    }
  }
}
