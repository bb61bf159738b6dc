#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A Socket.IO 5 packet: its kind, namespace, optional ack id and JSON payload.
///
/// Binary data is not a packet kind of its own here: a payload that holds ``JSONValue/binary(_:)``
/// values is written as a BINARY_EVENT or BINARY_ACK with attachments, and a received
/// BINARY_EVENT or BINARY_ACK comes out as ``Kind-swift.enum/event`` or
/// ``Kind-swift.enum/ack`` with its placeholders replaced by the attachments.
public struct SocketIOPacket: Sendable, Hashable {
  /// The kind of a packet.
  public enum Kind: Sendable, Hashable {
    /// `0`: connect to a namespace (client → server, with an optional auth object) or the
    /// server's acceptance (server → client, with `{"sid": ...}`).
    case connect
    /// `1`: leave a namespace.
    case disconnect
    /// `2` (or `5` with attachments): an event, `["name", arguments...]`.
    case event
    /// `3` (or `6` with attachments): the answer to an event that carried an ack id.
    case ack
    /// `4`: the server refused the namespace connection.
    case connectError
  }

  /// The kind.
  public var kind: Kind
  /// The namespace, `/` by default. A query part (`/admin?x=1`) is not part of it.
  public var namespace: String
  /// The ack id of an event that wants an answer, or of the answer itself.
  public var ackID: Int?
  /// The JSON payload, with binary attachments in place.
  public var payload: JSONValue?

  /// Creates a packet. Prefer the static constructors, which produce valid payloads.
  public init(kind: Kind, namespace: String = "/", ackID: Int? = nil, payload: JSONValue? = nil) {
    self.kind = kind
    self.namespace = namespace
    self.ackID = ackID
    self.payload = payload
  }

  /// An event `name` with its arguments.
  public static func event(
    _ name: String, _ arguments: [JSONValue] = [], namespace: String = "/", ackID: Int? = nil
  ) -> SocketIOPacket {
    SocketIOPacket(
      kind: .event, namespace: namespace, ackID: ackID,
      payload: .array([.string(name)] + arguments))
  }

  /// The answer to the event that carried `ackID`.
  public static func ack(_ ackID: Int, _ arguments: [JSONValue] = [], namespace: String = "/")
    -> SocketIOPacket
  {
    SocketIOPacket(kind: .ack, namespace: namespace, ackID: ackID, payload: .array(arguments))
  }

  /// A namespace CONNECT, with an optional payload (the client's auth, or the server's `sid`).
  public static func connect(namespace: String = "/", payload: JSONValue? = nil) -> SocketIOPacket {
    SocketIOPacket(kind: .connect, namespace: namespace, payload: payload)
  }

  /// A namespace DISCONNECT.
  public static func disconnect(namespace: String = "/") -> SocketIOPacket {
    SocketIOPacket(kind: .disconnect, namespace: namespace)
  }

  /// A CONNECT_ERROR with `{"message": message}`.
  public static func connectError(_ message: String, namespace: String = "/") -> SocketIOPacket {
    SocketIOPacket(
      kind: .connectError, namespace: namespace, payload: .object(["message": .string(message)]))
  }

  /// The event name, for an event.
  public var eventName: String? {
    guard kind == .event else { return nil }
    return payload?[0]?.stringValue
  }

  /// The arguments: for an event, the payload after the name; for an ack, the whole payload.
  public var arguments: [JSONValue] {
    guard let elements = payload?.arrayValue else { return [] }
    return kind == .event ? Array(elements.dropFirst()) : elements
  }

  /// The packet in its wire form: the packet text (without the Engine.IO `4` prefix) and the
  /// binary attachments, in placeholder order.
  public func encode() -> (text: String, attachments: [[UInt8]]) {
    var writer = JSONWriter()
    if let payload { writer.write(payload) }
    let binary = !writer.attachments.isEmpty && (kind == .event || kind == .ack)
    var header: String
    switch kind {
    case .connect: header = "0"
    case .disconnect: header = "1"
    case .event: header = binary ? "5" : "2"
    case .ack: header = binary ? "6" : "3"
    case .connectError: header = "4"
    }
    if binary { header += "\(writer.attachments.count)-" }
    if namespace != "/" && !namespace.isEmpty { header += namespace + "," }
    if let ackID { header += String(ackID) }
    var bytes = Array(header.utf8)
    bytes.append(contentsOf: writer.bytes)
    return (String(decoding: bytes, as: UTF8.self), binary ? writer.attachments : [])
  }

  /// The Engine.IO WebSocket frames that carry this packet: one text frame, then one binary
  /// frame per attachment.
  public var frames: [EngineIOFrame] {
    let (text, attachments) = encode()
    return [.text("4" + text)] + attachments.map { .binary($0) }
  }
}

/// Reassembles Socket.IO packets from Engine.IO messages, enforcing ``SocketIOLimits``.
///
/// A packet with binary attachments arrives as one text message followed by its
/// attachments as binary messages; ``decode(_:)`` returns nil until the last one is in.
/// After an error the decoder is ready for the next packet.
public struct SocketIOPacketDecoder: Sendable {
  private struct Pending: Sendable {
    var packet: SocketIOPacket
    var expected: Int
    var attachments: [[UInt8]]
    var totalBytes: Int
  }

  /// The limits enforced.
  public var limits: SocketIOLimits
  private var pending: Pending?

  /// Creates a decoder.
  public init(limits: SocketIOLimits = .default) {
    self.limits = limits
  }

  /// Whether a binary packet is waiting for more attachments.
  public var isAwaitingAttachments: Bool { pending != nil }

  /// Feeds one Engine.IO message (``EngineIOPacket/message(_:)`` or
  /// ``EngineIOPacket/binaryMessage(_:)``); returns the packet once it is complete. Other
  /// Engine.IO packets are not messages and return nil.
  public mutating func decode(_ message: EngineIOPacket) throws(SocketIOError) -> SocketIOPacket? {
    switch message {
    case .message(let text): return try decode(text: text)
    case .binaryMessage(let bytes): return try decode(attachment: bytes)
    default: return nil
    }
  }

  /// Feeds a text message: a whole packet, or the head of a binary packet (then returns nil).
  public mutating func decode(text: String) throws(SocketIOError) -> SocketIOPacket? {
    try withUTF8Bytes(of: text) { (bytes) throws(SocketIOError) -> SocketIOPacket? in
      try decode(utf8: bytes)
    }
  }

  /// Feeds a text message given as its UTF-8 bytes (a WebSocket frame's payload without the
  /// Engine.IO type byte), so a large message is parsed where it arrived, not copied into a
  /// `String` first. Invalid UTF-8 inside JSON strings is repaired, as `String` would.
  package mutating func decode(utf8 bytes: UnsafeBufferPointer<UInt8>) throws(SocketIOError)
    -> SocketIOPacket?
  {
    if pending != nil {
      pending = nil
      throw SocketIOError(
        .unexpectedFrame, "a text packet arrived while a binary packet awaited attachments")
    }
    let (packet, attachmentCount) = try SocketIOPacket.decodeHead(bytes, limits: limits)
    guard let attachmentCount else { return packet }
    if attachmentCount == 0 { return try Self.reconstruct(packet, attachments: []) }
    var attachments: [[UInt8]] = []
    attachments.reserveCapacity(attachmentCount)
    pending = Pending(
      packet: packet, expected: attachmentCount, attachments: attachments,
      totalBytes: bytes.count)
    return nil
  }

  /// Feeds a binary message: the next attachment of the pending binary packet.
  public mutating func decode(attachment: [UInt8]) throws(SocketIOError) -> SocketIOPacket? {
    guard pending != nil else {
      throw SocketIOError(.unexpectedFrame, "a binary frame arrived with no binary packet pending")
    }
    // Mutated in place: a copy would make every append copy the attachment list.
    pending!.totalBytes += attachment.count
    guard pending!.totalBytes <= limits.maximumPayloadBytes else {
      pending = nil
      throw SocketIOError(
        .payloadTooLarge,
        "packet with attachments exceeds \(limits.maximumPayloadBytes) bytes")
    }
    pending!.attachments.append(attachment)
    guard let current = pending, current.attachments.count == current.expected else {
      return nil
    }
    pending = nil
    return try Self.reconstruct(current.packet, attachments: current.attachments)
  }

  private static func reconstruct(_ packet: SocketIOPacket, attachments: [[UInt8]])
    throws(SocketIOError) -> SocketIOPacket
  {
    var packet = packet
    if let payload = packet.payload {
      // Each attachment becomes one buffer, shared by every placeholder that names it: two
      // thousand placeholders of one 2 MiB attachment hold 2 MiB, not 4 GB.
      let shared = attachments.map { Data($0) }
      packet.payload = try replacingPlaceholders(in: payload, with: shared)
    }
    return packet
  }

  /// Replaces every `{"_placeholder": true, "num": N}` object, at any depth, by attachment N.
  /// Other keys of a placeholder object are ignored, as socket.io's own parser does.
  static func replacingPlaceholders(in value: JSONValue, with attachments: [Data])
    throws(SocketIOError) -> JSONValue
  {
    switch value {
    case .object(var members):
      if case .bool(true)? = members["_placeholder"] {
        guard let number = members["num"]?.intValue, attachments.indices.contains(number) else {
          throw SocketIOError(
            .invalidPlaceholder,
            "placeholder does not name one of the \(attachments.count) attachments")
        }
        return .binary(attachments[number])
      }
      for (key, member) in members {
        switch member {
        case .object, .array:
          members[key] = try replacingPlaceholders(in: member, with: attachments)
        default: continue
        }
      }
      return .object(members)
    case .array(var elements):
      for index in elements.indices {
        switch elements[index] {
        case .object, .array:
          elements[index] = try replacingPlaceholders(in: elements[index], with: attachments)
        default: continue
        }
      }
      return .array(elements)
    default:
      return value
    }
  }
}

extension SocketIOPacket {
  /// Parses a packet text (its UTF-8 bytes); returns the packet (placeholders not yet
  /// replaced) and, for a binary packet, the number of attachments that follow.
  static func decodeHead(_ bytes: UnsafeBufferPointer<UInt8>, limits: SocketIOLimits)
    throws(SocketIOError) -> (SocketIOPacket, Int?)
  {
    guard bytes.count <= limits.maximumPayloadBytes else {
      throw SocketIOError(.payloadTooLarge, "packet of \(bytes.count) bytes")
    }
    guard let typeByte = bytes.first else {
      throw SocketIOError(.malformedPacket, "empty Socket.IO packet", offset: 0)
    }
    let kind: Kind
    var isBinary = false
    switch typeByte {
    case UInt8(ascii: "0"): kind = .connect
    case UInt8(ascii: "1"): kind = .disconnect
    case UInt8(ascii: "2"): kind = .event
    case UInt8(ascii: "3"): kind = .ack
    case UInt8(ascii: "4"): kind = .connectError
    case UInt8(ascii: "5"):
      kind = .event
      isBinary = true
    case UInt8(ascii: "6"):
      kind = .ack
      isBinary = true
    default:
      throw SocketIOError(.malformedPacket, "unknown Socket.IO packet type", offset: 0)
    }
    var index = 1

    // Attachment count: digits then '-', only in binary packets. Digits are counted before
    // they are converted, so a huge count cannot overflow.
    var attachmentCount: Int?
    if isBinary {
      let maximumDigits = String(max(limits.maximumAttachments, 0)).utf8.count
      let start = index
      while index < bytes.count, isDigit(bytes[index]) {
        guard index - start < maximumDigits else {
          throw SocketIOError(
            .tooManyAttachments, "attachment count has more than \(maximumDigits) digits",
            offset: start)
        }
        index += 1
      }
      guard index > start, index < bytes.count, bytes[index] == UInt8(ascii: "-") else {
        throw SocketIOError(
          .malformedPacket, "binary packet without an attachment count and '-'", offset: index)
      }
      let count = digitsValue(bytes, start..<index)
      guard count <= limits.maximumAttachments else {
        throw SocketIOError(
          .tooManyAttachments,
          "\(count) attachments announced, at most \(limits.maximumAttachments) allowed",
          offset: start)
      }
      attachmentCount = count
      index += 1
    }

    // Namespace: '/' up to ',' or the end; a '?query' part is dropped.
    var namespace = "/"
    if index < bytes.count, bytes[index] == UInt8(ascii: "/") {
      let start = index
      var queryStart: Int?
      while index < bytes.count, bytes[index] != UInt8(ascii: ",") {
        if queryStart == nil, bytes[index] == UInt8(ascii: "?") { queryStart = index }
        index += 1
      }
      namespace = String(
        decoding: UnsafeBufferPointer(rebasing: bytes[start..<(queryStart ?? index)]),
        as: UTF8.self)
      if index < bytes.count { index += 1 }  // the ','
    }

    // Ack id: digits right before the JSON.
    var ackID: Int?
    let idStart = index
    while index < bytes.count, isDigit(bytes[index]) {
      guard index - idStart < min(limits.maximumAckIDDigits, 18) else {
        throw SocketIOError(
          .ackIDTooLong, "ack id longer than \(limits.maximumAckIDDigits) digits", offset: idStart)
      }
      index += 1
    }
    if index > idStart { ackID = digitsValue(bytes, idStart..<index) }

    var payload: JSONValue?
    if index < bytes.count {
      payload = try JSONReader.socketIODocument(
        bytes[index...], maximumDepth: limits.maximumNestingDepth, baseOffset: index,
        maximumValues: limits.maximumValues)
    }
    let packet = SocketIOPacket(kind: kind, namespace: namespace, ackID: ackID, payload: payload)
    try packet.validate(payloadOffset: index)
    return (packet, attachmentCount)
  }

  /// Checks the payload shape each kind requires, as socket.io's own parser does.
  private func validate(payloadOffset: Int) throws(SocketIOError) {
    func invalid(_ message: String) -> SocketIOError {
      SocketIOError(.invalidPayload, message, offset: payloadOffset)
    }
    switch kind {
    case .connect:
      if ackID != nil { throw invalid("CONNECT with an ack id") }
      if let payload, payload.objectValue == nil {
        throw invalid("CONNECT payload is not an object")
      }
    case .disconnect:
      if ackID != nil || payload != nil { throw invalid("DISCONNECT with a payload") }
    case .connectError:
      if ackID != nil { throw invalid("CONNECT_ERROR with an ack id") }
      switch payload {
      case .object?, .string?: break
      default: throw invalid("CONNECT_ERROR payload is not an object or a string")
      }
    case .event:
      guard let elements = payload?.arrayValue else {
        throw invalid("EVENT payload is not an array")
      }
      guard let first = elements.first else { throw invalid("EVENT payload is an empty array") }
      guard first.stringValue != nil else { throw invalid("EVENT name is not a string") }
    case .ack:
      guard ackID != nil else { throw invalid("ACK without an ack id") }
      guard payload?.arrayValue != nil else { throw invalid("ACK payload is not an array") }
    }
  }

  /// The human message of a CONNECT_ERROR (`{"message": ...}` or a bare string).
  public var connectErrorMessage: String? {
    guard kind == .connectError else { return nil }
    return payload?["message"]?.stringValue ?? payload?.stringValue
  }
}

private func isDigit(_ byte: UInt8) -> Bool {
  byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
}

private func digitsValue(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int {
  var value = 0
  for index in range { value = value * 10 + Int(bytes[index] - UInt8(ascii: "0")) }
  return value
}
