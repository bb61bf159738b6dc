/// Every decision of a Socket.IO client, as a value: packets, emits and the time in, actions
/// out. No clock, no socket, no tasks: time comes in as an argument (any origin, the same for
/// every call), and the owner (``SocketIOClient``) carries out the actions in order.
///
/// It holds what outlives one transport (emits buffered while not connected, the
/// acknowledgements awaited and their deadlines) and what one transport decides: the Engine.IO
/// handshake, the deadline for the next ping (before the handshake, for the handshake), the
/// namespace CONNECT, the events that came before it, and how the transport ended. The
/// reconnection delays are ``ReconnectionPolicy``'s.
public struct SocketIOSession: Sendable {
  /// What the session is told at creation.
  public struct Settings: Sendable {
    /// The namespace, e.g. `/`.
    public var namespace: String
    /// The CONNECT packet's payload.
    public var auth: JSONValue?
    /// How long a transport may take to hand over its Engine.IO handshake.
    public var connectTimeout: Duration
    /// How many emits wait for a connection, and how many events may come before the
    /// namespace CONNECT (older ones are dropped first; later events are dropped).
    public var maximumBufferedEmits: Int

    /// Settings from a client's configuration.
    public init(_ configuration: SocketIOClientConfiguration) {
      namespace = configuration.namespace
      auth = configuration.auth
      connectTimeout = configuration.connectTimeout
      maximumBufferedEmits = configuration.maximumBufferedEmits
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
  }

  /// What the owner must do, in order.
  public enum Action: Sendable {
    /// Write these frames on the current transport.
    case send([WebSocketFrame])
    /// Hand this event to the application.
    case deliver(Delivery)
    /// The status changed.
    case status(SocketIOStatus)
    /// The server answered acknowledgement `id` with these arguments.
    case completeAck(Int, [JSONValue])
    /// Acknowledgement `id` will not come.
    case failAck(Int, SocketIOError)
    /// End the current transport: the session is over for this reason.
    case endTransport(SocketIODisconnectReason)
  }

  private struct Transport {
    var id: Int
    var handshake: EngineIOHandshake?
    var namespaceConnected = false
    var sid: String?
    var early: [Delivery] = []
    var deadline: Duration
    var outcome: SocketIODisconnectReason?
  }

  /// The settings.
  public let settings: Settings
  private var transport: Transport?
  private var transports = 0
  private var buffered: [[WebSocketFrame]] = []
  private var ackDeadlines: [Int: (name: String, deadline: Duration)] = [:]
  private var nextAckID = 0
  /// How many server pings were answered, over every transport (a liveness measure).
  public private(set) var pingsAnswered = 0

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
    let transportDeadline = transport?.outcome == nil ? transport?.deadline : nil
    return ([transportDeadline] + ackDeadlines.values.map { Optional($0.deadline) })
      .compactMap { $0 }.min()
  }

  // MARK: Transport

  /// A transport opened at `now`: the handshake is due within the connect timeout. Returns
  /// its number.
  public mutating func transportOpened(now: Duration) -> Int {
    transports += 1
    transport = Transport(id: transports, deadline: now + settings.connectTimeout)
    return transports
  }

  /// The current transport ended (closed, failed, or ended by an action): why, and whether its
  /// namespace was connected. The acknowledgements awaited fail: their answers cannot come.
  public mutating func transportEnded(error: String? = nil) -> (
    reason: SocketIODisconnectReason, wasConnected: Bool, actions: [Action]
  ) {
    let ended = transport
    transport = nil
    let actions = ackDeadlines.keys.sorted().map {
      Action.failAck($0, SocketIOError(.notConnected, "the connection ended"))
    }
    ackDeadlines = [:]
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

  // MARK: Receiving

  /// One Engine.IO control packet at `now`.
  public mutating func receive(_ packet: EngineIOPacket, now: Duration) -> [Action] {
    guard transport != nil, transport?.outcome == nil else { return [] }
    switch packet {
    case .open(let handshake):
      transport?.handshake = handshake
      extendDeadline(now)
      var connect = SocketIOPacket.connect(namespace: settings.namespace)
      connect.payload = settings.auth
      return [.send(connect.frames)]
    case .ping(let payload):
      extendDeadline(now)
      pingsAnswered += 1
      return [.send([EngineIOPacket.pong(payload).frame])]
    case .close:
      return end(.transportClose)
    case .message, .binaryMessage, .pong, .upgrade, .noop:
      return []
    }
  }

  /// One Socket.IO packet.
  public mutating func receive(_ packet: SocketIOPacket) -> [Action] {
    guard let current = transport, current.outcome == nil else { return [] }
    guard packet.namespace == settings.namespace else { return [] }
    switch packet.kind {
    case .connect:
      let sid = packet.payload?["sid"]?.stringValue ?? ""
      transport?.namespaceConnected = true
      transport?.sid = sid
      transport?.early = []
      // Events that came before the CONNECT are the new connection's: delivered after it.
      let early = current.early.map { event -> Action in
        var event = event
        event.sid = sid
        return .deliver(event)
      }
      let flushed = buffered.map(Action.send)
      buffered = []
      return [.status(.connected(sid: sid))] + early + flushed
    case .connectError:
      return end(.connectRefused(packet.connectErrorMessage ?? "refused"))
    case .disconnect:
      return end(.serverDisconnect)
    case .event:
      guard let name = packet.eventName else { return [] }
      let event = Delivery(
        name: name, arguments: packet.arguments, namespace: packet.namespace, sid: current.sid,
        ackID: packet.ackID, transport: current.id)
      if current.namespaceConnected { return [.deliver(event)] }
      if current.early.count < settings.maximumBufferedEmits { transport?.early.append(event) }
      return []
    case .ack:
      guard let id = packet.ackID, ackDeadlines.removeValue(forKey: id) != nil else { return [] }
      return [.completeAck(id, packet.arguments)]
    }
  }

  // MARK: Sending

  /// Emits `frames` (an event packet): sent now when connected, else kept for the next
  /// connection (the oldest dropped past the limit).
  public mutating func emit(_ frames: [WebSocketFrame]) -> [Action] {
    if let transport, transport.namespaceConnected, transport.outcome == nil {
      return [.send(frames)]
    }
    if buffered.count >= settings.maximumBufferedEmits { buffered.removeFirst() }
    buffered.append(frames)
    return []
  }

  /// Emits event `name` asking for an acknowledgement within `timeout` of `now`: its id and
  /// what to do. ``tick(now:)`` fails it once the deadline passes.
  public mutating func emitWithAck(
    _ name: String, _ arguments: [JSONValue], timeout: Duration, now: Duration
  ) -> (id: Int, actions: [Action]) {
    let id = nextAckID
    nextAckID = nextAckID == Int(Int32.max) ? 0 : nextAckID + 1
    ackDeadlines[id] = (name, now + timeout)
    let packet = SocketIOPacket.event(name, arguments, namespace: settings.namespace, ackID: id)
    return (id, emit(packet.frames))
  }

  /// The frames acknowledging a server event of transport `transport`; none when that
  /// transport is gone (an answer on another connection would name an id the server forgot).
  public func acknowledge(_ id: Int, _ arguments: [JSONValue], transport: Int) -> [Action] {
    guard let current = self.transport, current.id == transport, current.outcome == nil else {
      return []
    }
    return [.send(SocketIOPacket.ack(id, arguments, namespace: settings.namespace).frames)]
  }

  // MARK: Time

  /// The time is `now`: a transport past its deadline ends (`pingTimeout`), acknowledgements
  /// past theirs fail (`ackTimeout`).
  public mutating func tick(now: Duration) -> [Action] {
    var actions: [Action] = []
    for (id, awaited) in ackDeadlines.sorted(by: { $0.key < $1.key }) where now >= awaited.deadline
    {
      ackDeadlines[id] = nil
      actions.append(
        .failAck(id, SocketIOError(.ackTimeout, "no acknowledgement for \"\(awaited.name)\"")))
    }
    if let current = transport, current.outcome == nil, now >= current.deadline {
      actions += end(.pingTimeout)
    }
    return actions
  }

  private mutating func extendDeadline(_ now: Duration) {
    guard let handshake = transport?.handshake else { return }
    transport?.deadline =
      now + .milliseconds(handshake.pingInterval) + .milliseconds(handshake.pingTimeout)
  }

  private mutating func end(_ reason: SocketIODisconnectReason) -> [Action] {
    transport?.outcome = reason
    return [.endTransport(reason)]
  }
}
