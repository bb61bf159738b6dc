/// The one error type of the Socket.IO domain: malformed packets, limits exceeded, and
/// connection failures.
///
/// Follows the house rule for errors: an extensible ``Code``, a human message, and the
/// location of the offending input (a byte offset into the packet, when known).
public struct SocketIOError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What went wrong, as an extensible set of static values (new codes are not a breaking change).
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// The stable identifier of the code, e.g. `"malformedPacket"`.
    public let rawValue: String

    /// Creates a code from its identifier.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// An Engine.IO or Socket.IO packet that does not follow the grammar.
    public static let malformedPacket = Code("malformedPacket")
    /// The JSON part of a packet is not valid JSON, or nests deeper than allowed.
    public static let malformedJSON = Code("malformedJSON")
    /// The payload does not have the shape its packet type requires (e.g. an empty event array).
    public static let invalidPayload = Code("invalidPayload")
    /// More binary attachments than ``SocketIOLimits/maximumAttachments``.
    public static let tooManyAttachments = Code("tooManyAttachments")
    /// An ack id longer than ``SocketIOLimits/maximumAckIDDigits``.
    public static let ackIDTooLong = Code("ackIDTooLong")
    /// A packet (text plus attachments) larger than ``SocketIOLimits/maximumPayloadBytes``.
    public static let payloadTooLarge = Code("payloadTooLarge")
    /// A binary placeholder that names an attachment that does not exist.
    public static let invalidPlaceholder = Code("invalidPlaceholder")
    /// A binary frame arrived when no binary packet was waiting for attachments, or a text
    /// packet arrived while one was.
    public static let unexpectedFrame = Code("unexpectedFrame")
    /// The connection could not be established.
    public static let connectionFailed = Code("connectionFailed")
    /// The server refused the namespace connection (a CONNECT_ERROR packet).
    public static let connectRefused = Code("connectRefused")
    /// No ping came from the server within `pingInterval + pingTimeout`.
    public static let pingTimeout = Code("pingTimeout")
    /// No acknowledgement came within the requested time.
    public static let ackTimeout = Code("ackTimeout")
    /// The operation needs a connection and there is none (or it closed while waiting).
    public static let notConnected = Code("notConnected")
    /// An emit refused because the client holds too much unsent or unconfirmed already (see
    /// ``SocketIOClientConfiguration/maximumOutboundBytes``): the link is slower than the
    /// sends, or dead.
    public static let outboundFull = Code("outboundFull")
    /// Reconnection gave up after the configured number of consecutive failures.
    public static let reconnectFailed = Code("reconnectFailed")

    /// The identifier.
    public var description: String { rawValue }
  }

  /// What went wrong.
  public var code: Code
  /// A human-readable explanation.
  public var message: String
  /// The byte offset of the offending input inside the packet text, when known.
  public var offset: Int?

  /// Creates an error.
  public init(_ code: Code, _ message: String, offset: Int? = nil) {
    self.code = code
    self.message = message
    self.offset = offset
  }

  /// `code: message (at byte N)`.
  public var description: String {
    if let offset { return "\(code): \(message) (at byte \(offset))" }
    return "\(code): \(message)"
  }
}

/// Limits the decoder enforces on untrusted input. Every limit is checked before the
/// corresponding memory is allocated.
///
/// Memory budget of one packet, whatever its bytes: its text and attachments (at most
/// ``maximumPayloadBytes``, held once: every placeholder naming an attachment shares its one
/// buffer), plus the decoded JSON, which reserves nothing ahead and holds at most
/// ``maximumValues`` values. With the defaults, the worst packet measured (the tests build
/// each shape: a million empty objects, a quarter-million one-member objects, two thousand
/// placeholders of one attachment) holds under 64 MiB decoded.
public struct SocketIOLimits: Hashable, Sendable {
  /// The most binary attachments one packet may announce. The default, 256, leaves room for
  /// a batch of 50 images with one attachment each. (socket.io's JavaScript parser uses 10.)
  public var maximumAttachments: Int
  /// The most decimal digits an ack id may have. The default, 10, covers every 32-bit id.
  public var maximumAckIDDigits: Int
  /// The largest packet, in bytes: its text plus all of its binary attachments.
  /// The default is 16 MiB.
  public var maximumPayloadBytes: Int
  /// The deepest nesting of JSON arrays and objects. The default is 64.
  public var maximumNestingDepth: Int
  /// The most JSON values one packet's text may hold, counting every container, member and
  /// element. The default, 262,144, is 26 values for each of the 10,000 frames LIVA's largest
  /// event may carry; a packet with more is refused with `payloadTooLarge`.
  public var maximumValues: Int

  /// Creates limits; every argument has a default.
  public init(
    maximumAttachments: Int = 256, maximumAckIDDigits: Int = 10,
    maximumPayloadBytes: Int = 16 << 20, maximumNestingDepth: Int = 64,
    maximumValues: Int = 1 << 18
  ) {
    self.maximumAttachments = maximumAttachments
    self.maximumAckIDDigits = maximumAckIDDigits
    self.maximumPayloadBytes = maximumPayloadBytes
    self.maximumNestingDepth = maximumNestingDepth
    self.maximumValues = maximumValues
  }

  /// The default limits.
  public static let `default` = SocketIOLimits()
}
