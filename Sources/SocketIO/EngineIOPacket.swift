/// One WebSocket message as Engine.IO sees it: a text frame or a binary frame.
public enum EngineIOFrame: Sendable, Hashable {
  /// A text frame.
  case text(String)
  /// A binary frame.
  case binary([UInt8])

  /// The frame's payload size in bytes.
  public var byteCount: Int {
    switch self {
    case .text(let text): text.utf8.count
    case .binary(let bytes): bytes.count
    }
  }
}

/// The handshake an Engine.IO 4 server sends in its OPEN packet.
public struct EngineIOHandshake: Sendable, Hashable {
  /// The session id.
  public var sid: String
  /// The transports the connection may upgrade to (empty over WebSocket).
  public var upgrades: [String]
  /// How often the server sends a ping, in milliseconds.
  public var pingInterval: Int
  /// How long the server waits for the pong, in milliseconds. A client declares the
  /// server dead when no ping arrives within `pingInterval + pingTimeout`.
  public var pingTimeout: Int
  /// The largest message the server accepts, in bytes.
  public var maxPayload: Int

  /// Creates a handshake; the defaults are python-socketio's production values.
  public init(
    sid: String, upgrades: [String] = [], pingInterval: Int = 25_000, pingTimeout: Int = 60_000,
    maxPayload: Int = 1_000_000
  ) {
    self.sid = sid
    self.upgrades = upgrades
    self.pingInterval = pingInterval
    self.pingTimeout = pingTimeout
    self.maxPayload = maxPayload
  }

  /// The handshake as the JSON object of an OPEN packet.
  public var jsonValue: JSONValue {
    .object([
      "sid": .string(sid), "upgrades": .array(upgrades.map { .string($0) }),
      "pingInterval": .number(Double(pingInterval)), "pingTimeout": .number(Double(pingTimeout)),
      "maxPayload": .number(Double(maxPayload)),
    ])
  }

  /// Reads a handshake from the JSON object of an OPEN packet.
  public init(jsonValue: JSONValue) throws(SocketIOError) {
    guard let sid = jsonValue["sid"]?.stringValue, !sid.isEmpty,
      // python-engineio truncates sub-second intervals to 0; accept it.
      let pingInterval = jsonValue["pingInterval"]?.intValue, pingInterval >= 0,
      let pingTimeout = jsonValue["pingTimeout"]?.intValue, pingTimeout > 0
    else {
      throw SocketIOError(.malformedPacket, "OPEN packet without sid, pingInterval or pingTimeout")
    }
    let upgrades = jsonValue["upgrades"]?.arrayValue?.compactMap(\.stringValue) ?? []
    let maxPayload = jsonValue["maxPayload"]?.intValue ?? 1_000_000
    self.init(
      sid: sid, upgrades: upgrades, pingInterval: pingInterval, pingTimeout: pingTimeout,
      maxPayload: maxPayload)
  }
}

/// An Engine.IO 4 packet, as carried by one WebSocket frame.
///
/// Over WebSocket every text frame is one packet whose first character is its type
/// (`0` open, `1` close, `2` ping, `3` pong, `4` message, `5` upgrade, `6` noop) and every
/// binary frame is a binary message with no type prefix.
public enum EngineIOPacket: Sendable, Hashable {
  /// `0{...}`: the server's handshake.
  case open(EngineIOHandshake)
  /// `1`: close the session.
  case close
  /// `2`: a ping (in Engine.IO 4 the server pings), with an optional payload such as `probe`.
  case ping(String)
  /// `3`: the answer to a ping, echoing its payload.
  case pong(String)
  /// `4...`: a text message (a Socket.IO packet).
  case message(String)
  /// A binary message (a Socket.IO attachment).
  case binaryMessage([UInt8])
  /// `5`: upgrade the transport.
  case upgrade
  /// `6`: nothing.
  case noop

  /// Decodes the packet a WebSocket frame carries.
  ///
  /// - Throws: ``SocketIOError`` with code `malformedPacket` for an empty text frame, an
  ///   unknown type, or an OPEN packet without a valid handshake; `payloadTooLarge` when the
  ///   frame is larger than `limits.maximumPayloadBytes`.
  public init(frame: EngineIOFrame, limits: SocketIOLimits = .default) throws(SocketIOError) {
    switch frame {
    case .binary(let bytes):
      guard bytes.count <= limits.maximumPayloadBytes else {
        throw SocketIOError(.payloadTooLarge, "binary frame of \(bytes.count) bytes")
      }
      self = .binaryMessage(bytes)
    case .text(let text):
      guard text.utf8.count <= limits.maximumPayloadBytes else {
        throw SocketIOError(.payloadTooLarge, "text frame of \(text.utf8.count) bytes")
      }
      guard let type = text.utf8.first else {
        throw SocketIOError(.malformedPacket, "empty Engine.IO packet", offset: 0)
      }
      guard (UInt8(ascii: "0")...UInt8(ascii: "6")).contains(type) else {
        throw SocketIOError(.malformedPacket, "unknown Engine.IO packet type", offset: 0)
      }
      // The type is one ASCII byte, so dropping it stays on a character boundary.
      let rest = String(text.utf8.dropFirst()) ?? ""
      switch type {
      case UInt8(ascii: "0"):
        let json = try JSONValue(parsing: rest, maximumNestingDepth: limits.maximumNestingDepth)
        self = .open(try EngineIOHandshake(jsonValue: json))
      case UInt8(ascii: "1"): self = .close
      case UInt8(ascii: "2"): self = .ping(rest)
      case UInt8(ascii: "3"): self = .pong(rest)
      case UInt8(ascii: "4"): self = .message(rest)
      case UInt8(ascii: "5"): self = .upgrade
      default: self = .noop
      }
    }
  }

  /// The WebSocket frame that carries this packet.
  public var frame: EngineIOFrame {
    switch self {
    case .open(let handshake): return .text("0" + handshake.jsonValue.jsonText)
    case .close: return .text("1")
    case .ping(let payload): return .text("2" + payload)
    case .pong(let payload): return .text("3" + payload)
    case .message(let text): return .text("4" + text)
    case .binaryMessage(let bytes): return .binary(bytes)
    case .upgrade: return .text("5")
    case .noop: return .text("6")
    }
  }
}
