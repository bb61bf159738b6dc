/// An event received from the peer: its name, its arguments, and a way to answer it when the
/// sender asked for an acknowledgement.
public struct SocketIOEvent: Sendable {
  /// The event name.
  public let name: String
  /// The arguments after the name (binary attachments in place).
  public let arguments: [JSONValue]
  /// The namespace it arrived on.
  public let namespace: String
  /// The socket id of the namespace connection it arrived on (each reconnection has its own),
  /// when known. Events and statuses travel on two streams, so a consumer can read an event of
  /// a connection that is gone after the status of the next one: this tells them apart.
  public let sid: String?
  private let responder: (@Sendable ([JSONValue]) async -> Void)?

  /// Creates an event; `responder` sends the acknowledgement when the sender wants one.
  public init(
    name: String, arguments: [JSONValue], namespace: String = "/", sid: String? = nil,
    responder: (@Sendable ([JSONValue]) async -> Void)? = nil
  ) {
    self.name = name
    self.arguments = arguments
    self.namespace = namespace
    self.sid = sid
    self.responder = responder
  }

  /// The same event, from the connection with socket id `sid`.
  func arrived(on sid: String) -> SocketIOEvent {
    SocketIOEvent(
      name: name, arguments: arguments, namespace: namespace, sid: sid, responder: responder)
  }

  /// Whether the sender asked for an acknowledgement.
  public var wantsAck: Bool { responder != nil }

  /// Sends the acknowledgement with `arguments` (binary values allowed). Does nothing when
  /// the sender asked for none or the connection is gone.
  public func ack(_ arguments: [JSONValue] = []) async {
    await responder?(arguments)
  }
}

/// Why a Socket.IO connection ended.
public enum SocketIODisconnectReason: Sendable, Hashable {
  /// The application asked for it. No reconnection.
  case clientDisconnect
  /// The server disconnected the namespace (a DISCONNECT packet). No reconnection.
  case serverDisconnect
  /// The server refused the namespace (a CONNECT_ERROR packet), with its message.
  /// No reconnection.
  case connectRefused(String)
  /// The transport closed (WebSocket closed, Engine.IO CLOSE). Reconnects.
  case transportClose
  /// The transport could not be opened or failed, with a description. Reconnects.
  case transportError(String)
  /// No ping from the server within `pingInterval + pingTimeout`, or no handshake within the
  /// connect timeout. Reconnects.
  case pingTimeout

  /// Whether the client reconnects after this reason (when reconnection is enabled).
  public var reconnects: Bool {
    switch self {
    case .clientDisconnect, .serverDisconnect, .connectRefused: return false
    case .transportClose, .transportError, .pingTimeout: return true
    }
  }
}

/// The state of a client's connection, as reported on ``SocketIOClient/statusUpdates``.
public enum SocketIOStatus: Sendable, Hashable {
  /// Not started yet.
  case idle
  /// Opening the transport and joining the namespace.
  case connecting
  /// The namespace is connected, with its socket id.
  case connected(sid: String)
  /// The connection ended.
  case disconnected(SocketIODisconnectReason)
  /// Waiting `delay` before reconnection attempt `attempt` (1-based, counts consecutive
  /// failures).
  case reconnecting(attempt: Int, delay: Duration)
  /// Reconnection failed ``ReconnectionPolicy/failureLimit`` times in a row. The client stops
  /// unless ``ReconnectionPolicy/continuesAfterFailureLimit`` is set.
  case failed(SocketIOError)
}

/// When and how often a client reconnects: exponential backoff with jitter and a cap.
///
/// The defaults follow the LIVA product promise: waits of 1, 2, 4, 8, 16 s, then 30 s, each
/// with ±20 % jitter; after 10 consecutive failures the error is surfaced and the client stops
/// (set ``continuesAfterFailureLimit`` to keep trying).
public struct ReconnectionPolicy: Sendable, Hashable {
  /// Whether to reconnect at all.
  public var isEnabled: Bool
  /// The wait before the first attempt.
  public var initialDelay: Duration
  /// The longest wait.
  public var maximumDelay: Duration
  /// The factor between consecutive waits.
  public var multiplier: Double
  /// The jitter as a fraction of the wait: 0.2 means ±20 %.
  public var jitter: Double
  /// The consecutive failures after which the client reports ``SocketIOStatus/failed(_:)``.
  public var failureLimit: Int
  /// Whether to keep trying after reporting the failure limit.
  public var continuesAfterFailureLimit: Bool

  /// Creates a policy; every argument has the product's default.
  public init(
    isEnabled: Bool = true, initialDelay: Duration = .seconds(1),
    maximumDelay: Duration = .seconds(30), multiplier: Double = 2, jitter: Double = 0.2,
    failureLimit: Int = 10, continuesAfterFailureLimit: Bool = false
  ) {
    self.isEnabled = isEnabled
    self.initialDelay = initialDelay
    self.maximumDelay = maximumDelay
    self.multiplier = multiplier
    self.jitter = jitter
    self.failureLimit = failureLimit
    self.continuesAfterFailureLimit = continuesAfterFailureLimit
  }

  /// The wait before attempt `attempt` (1-based), given a uniform random number in `0..<1`.
  /// A pure function, so the schedule can be tested without waiting.
  public func delay(forAttempt attempt: Int, random: Double) -> Duration {
    let initial = Self.seconds(initialDelay)
    let maximum = Self.seconds(maximumDelay)
    let exponent = Double(max(attempt, 1) - 1)
    let base = min(initial * pow(multiplier, exponent), maximum)
    let factor = 1 + jitter * (2 * min(max(random, 0), 1) - 1)
    let seconds = min(max(base * factor, 0), maximum)
    return .nanoseconds(Int64(seconds * 1e9))
  }

  private static func seconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) + Double(attoseconds) / 1e18
  }

  private func pow(_ base: Double, _ exponent: Double) -> Double {
    var result = 1.0
    var remaining = Int(min(exponent, 64))
    while remaining > 0 {
      result *= base
      remaining -= 1
    }
    return result
  }
}
