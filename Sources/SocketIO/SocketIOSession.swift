/// Every decision of a Socket.IO client, as a value: packets, emits and the time in, actions
/// out. No clock, no socket, no tasks: time comes in as an argument (any origin, the same for
/// every call), and the owner (``SocketIOClient``) carries out the actions in order.
///
/// It holds what outlives one transport (emits buffered while not connected, the
/// acknowledgements awaited and their deadlines) and what one transport decides: the Engine.IO
/// handshake, the deadline for the next ping (before the handshake, for the handshake), the
/// namespace CONNECT, the events that came before it, and how the transport ended. The
/// reconnection delays are ``ReconnectionPolicy``'s.
///
/// Every wait has an end: the handshake and the namespace CONNECT must both come within the
/// connect timeout of the transport's opening; the server's heartbeat values are clamped to
/// ``maximumHeartbeat``; and an emit is followed by a WebSocket ping (``Action/probe``) whose
/// pong must come within ``Settings/livenessTimeout``. Emits not confirmed by a pong when the
/// transport times out are sent again, once, on the next connection: a message written into a
/// silently dead link is not lost. (A transport the server closes is not assumed to have lost
/// them.)
public struct SocketIOSession: Sendable {
  /// What the session is told at creation.
  public struct Settings: Sendable {
    /// The namespace, e.g. `/`.
    public var namespace: String
    /// The CONNECT packet's payload.
    public var auth: JSONValue?
    /// How long a transport may take to hand over its Engine.IO handshake.
    public var connectTimeout: Duration
    /// How many emits wait for a connection (later ones are refused), and how many events
    /// may come before the namespace CONNECT (later events are dropped).
    public var maximumBufferedEmits: Int
    /// Bytes of emits the session holds: waiting for a connection, or written and not yet
    /// confirmed (the writer's queue is part of these). An emit past it is refused
    /// (``SocketIOError/Code/outboundFull``): a link slower than the application's sends, or a
    /// dead one, holds at most this much.
    public var maximumOutboundBytes: Int
    /// How long after an emit the server's pong to the WebSocket ping that follows it may
    /// take before the link is declared dead.
    public var livenessTimeout: Duration
    /// Bytes of events kept before the namespace CONNECT (their packets' wire bytes); later
    /// events are dropped. The reader cannot pause then (the CONNECT is behind them), so this
    /// bounds what a server that never connects the namespace makes the client hold.
    public var maximumEarlyEventBytes: Int

    /// Settings from a client's configuration.
    public init(_ configuration: SocketIOClientConfiguration) {
      namespace = configuration.namespace
      auth = configuration.auth
      connectTimeout = configuration.connectTimeout
      maximumBufferedEmits = configuration.maximumBufferedEmits
      livenessTimeout = configuration.livenessTimeout
      maximumEarlyEventBytes = configuration.maximumQueuedEventBytes
      maximumOutboundBytes = configuration.maximumOutboundBytes
    }
  }

  /// An event for the application, with the acknowledgement id the server asked for.
  public struct Delivery: Sendable {
    /// The event name.
    public var name: String
    /// Its arguments.
    public var arguments: [JSONValue]
    /// The namespace it came on.
    public var namespace: String
    /// The socket id of the connection it came on.
    public var sid: String?
    /// The id to acknowledge it with, when the server asked (see ``acknowledge(_:_:transport:)``).
    public var ackID: Int?
    /// The transport it came on.
    public var transport: Int
    /// Bytes of the packet it came in, as on the wire (0 when not known).
    public var byteCount = 0
  }

  /// What the owner must do, in order.
  public enum Action: Sendable {
    /// Write these frames on the current transport.
    case send([EngineIOFrame])
    /// Hand this event to the application.
    case deliver(Delivery)
    /// The status changed.
    case status(SocketIOStatus)
    /// The server answered acknowledgement `id` with these arguments.
    case completeAck(Int, [JSONValue])
    /// Acknowledgement `id` will not come.
    case failAck(Int, SocketIOError)
    /// End the current transport: the session is over for this reason. When the reason is a
    /// timeout the link is dead: end it at once, whatever is queued.
    case endTransport(SocketIODisconnectReason)
    /// Write a WebSocket ping carrying this number (4 bytes, big-endian) on the current
    /// transport, after the frames sent before it; the pong echoing the number
    /// (``receivePong(_:now:)``) confirms them.
    case probe(UInt32)
    /// An emit was not sent: it is larger than the server's `maxPayload`, which would close
    /// the connection.
    case refuseEmit(SocketIOError)
    /// Emits written into a transport that died before they were confirmed are sent again on
    /// the next connection: how many.
    case resend(Int)
    /// An event that came before the namespace CONNECT was dropped (past the early limits):
    /// its name.
    case dropEarly(String)
  }

  /// The longest heartbeat interval and timeout taken from a server, 5 minutes each: a
  /// handshake announcing more (or an absurd value) cannot make a dead link look alive for
  /// longer.
  public static let maximumHeartbeat: Duration = .seconds(300)

  /// The longest ping payload echoed in the pong (bytes); a longer one is answered with an
  /// empty pong.
  public static let maximumEchoedPingBytes = 64

  struct Transport {
    var id: Int
    var handshake: EngineIOHandshake?
    var namespaceConnected = false
    var sid: String?
    var early: [Delivery] = []
    var earlyBytes = 0
    var deadline: Duration
    /// When the namespace CONNECT must have come: the connect timeout after opening.
    var connectDeadline: Duration
    var outcome: SocketIODisconnectReason?
    /// Emits written and not yet confirmed by a pong, oldest first; `probed` of them were
    /// written before the ping in flight.
    var unconfirmed: [(frames: [EngineIOFrame], ackID: Int?)] = []
    var probed = 0
    /// When the pong of the ping in flight is due.
    var probeDeadline: Duration?
    /// Since when the owner has not read the transport (its application is behind).
    var pausedSince: Duration?
    /// The number of the newest ping: only the pong echoing it confirms (an older ping's pong
    /// can arrive after the link died under a newer one).
    var probeID: UInt32 = 0

    /// The earliest deadline that ends this transport.
    var effectiveDeadline: Duration {
      var earliest = namespaceConnected ? deadline : min(deadline, connectDeadline)
      if let probeDeadline { earliest = min(earliest, probeDeadline) }
      return earliest
    }
  }

  /// The settings.
  public let settings: Settings
  var transport: Transport?
  var transports = 0
  var buffered: [[EngineIOFrame]] = []
  var ackDeadlines: [Int: (name: String, deadline: Duration)] = [:]
  var nextAckID = 0
  /// How many server pings were answered, over every transport (a liveness measure).
  public internal(set) var pingsAnswered = 0
  /// How many emits were sent again after their transport died before confirming them.
  public internal(set) var emitsResent = 0
  /// The largest message the server accepts, from its last handshake (nil before one).
  public internal(set) var serverMaximumPayload: Int?
  /// Events dropped because they came before the namespace CONNECT past the early limits
  /// (``Settings/maximumBufferedEmits`` events, ``Settings/maximumEarlyEventBytes`` bytes).
  public internal(set) var earlyDropped = 0

  /// A session with nothing open.
  public init(settings: Settings) { self.settings = settings }

  /// Whether the current transport's namespace is connected.
  public var isConnected: Bool { transport?.namespaceConnected ?? false }
  /// Whether the current transport handed over its Engine.IO handshake.
  public var hasHandshake: Bool { transport?.handshake != nil }
  /// Whether a transport is open and not ended.
  public var isOpen: Bool { transport != nil && transport?.outcome == nil }
  /// The current transport's number (each opened one gets the next).
  public var currentTransport: Int? { transport?.id }
  /// Emits waiting for a connection.
  public var bufferedEmits: Int { buffered.count }
  /// Acknowledgements awaited.
  public var awaitedAcks: Set<Int> { Set(ackDeadlines.keys) }

  /// The earliest time ``tick(now:)`` has something to do: the transport's deadline or an
  /// acknowledgement's.
  public var nextDeadline: Duration? {
    let transportDeadline = transport?.outcome == nil ? transport?.effectiveDeadline : nil
    return ([transportDeadline] + ackDeadlines.values.map { Optional($0.deadline) })
      .compactMap { $0 }.min()
  }

  // MARK: Transport

  /// A transport opened at `now`: the handshake is due within the connect timeout. Returns
  /// its number.
  public mutating func transportOpened(now: Duration) -> Int {
    transports += 1
    transport = Transport(
      id: transports, deadline: now + settings.connectTimeout,
      connectDeadline: now + settings.connectTimeout)
    return transports
  }

  /// The current transport ended (closed, failed, or ended by an action): why, and whether its
  /// namespace was connected. The acknowledgements awaited fail: their answers cannot come.
  public mutating func transportEnded(error: String? = nil) -> (
    reason: SocketIODisconnectReason, wasConnected: Bool, actions: [Action]
  ) {
    let ended = transport
    transport = nil
    var actions = ackDeadlines.keys.sorted().map {
      Action.failAck($0, SocketIOError(.notConnected, "the connection ended"))
    }
    ackDeadlines = [:]
    // Emits a silently dead transport never confirmed go first on the next connection, once.
    // Only after a timeout: a link that took nothing in that time most likely delivered
    // nothing. A transport the server closed (or reset) may have read them: sent again, a
    // message could be answered twice, so they are not.
    if let unconfirmed = ended?.unconfirmed, !unconfirmed.isEmpty,
      ended?.outcome == .pingTimeout
    {
      // Within the byte bound: they were counted as unconfirmed (the count may pass
      // maximumBufferedEmits; none accepted is dropped).
      buffered = unconfirmed.map(\.frames) + buffered
      emitsResent += unconfirmed.count
      actions.append(.resend(unconfirmed.count))
    }
    let wasConnected = ended?.namespaceConnected ?? false
    if let outcome = ended?.outcome { return (outcome, wasConnected, actions) }
    if let error, !wasConnected { return (.transportError(error), false, actions) }
    return (.transportClose, wasConnected, actions)
  }

  /// The application disconnects: a connected namespace is told (DISCONNECT), and the
  /// transport ends.
  public mutating func disconnect() -> [Action] {
    guard let current = transport, current.outcome == nil else { return [] }
    transport?.outcome = .clientDisconnect
    var actions: [Action] = []
    if current.namespaceConnected {
      actions.append(.send(SocketIOPacket.disconnect(namespace: settings.namespace).frames))
    }
    return actions + [.endTransport(.clientDisconnect)]
  }
}
