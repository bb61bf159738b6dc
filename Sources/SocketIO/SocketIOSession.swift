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

  private struct Transport {
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
  private var transport: Transport?
  private var transports = 0
  private var buffered: [[EngineIOFrame]] = []
  private var ackDeadlines: [Int: (name: String, deadline: Duration)] = [:]
  private var nextAckID = 0
  /// How many server pings were answered, over every transport (a liveness measure).
  public private(set) var pingsAnswered = 0
  /// How many emits were sent again after their transport died before confirming them.
  public private(set) var emitsResent = 0
  /// The largest message the server accepts, from its last handshake (nil before one).
  public private(set) var serverMaximumPayload: Int?

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

  // MARK: Receiving

  /// One Engine.IO control packet at `now`.
  public mutating func receive(_ packet: EngineIOPacket, now: Duration) -> [Action] {
    guard transport != nil, transport?.outcome == nil else { return [] }
    sawTraffic(now)
    switch packet {
    case .open(let handshake):
      transport?.handshake = handshake
      serverMaximumPayload = handshake.maxPayload > 0 ? handshake.maxPayload : nil
      extendDeadline(now)
      var connect = SocketIOPacket.connect(namespace: settings.namespace)
      connect.payload = settings.auth
      return [.send(connect.frames)]
    case .ping(let payload):
      extendDeadline(now)
      pingsAnswered += 1
      // Servers ping with nothing or "probe"; a large payload is not echoed (a server, or a
      // man in the middle, could otherwise make every ping cost its size again in writes).
      let echoed = payload.utf8.count <= Self.maximumEchoedPingBytes ? payload : ""
      return [.send([EngineIOPacket.pong(echoed).frame])]
    case .close:
      return end(.transportClose)
    case .message, .binaryMessage, .pong, .upgrade, .noop:
      return []
    }
  }

  /// One Socket.IO packet.
  ///
  /// With `now`, the emits flushed on a CONNECT are followed by a WebSocket ping, as
  /// ``emit(_:now:)`` does.
  public mutating func receive(_ packet: SocketIOPacket, bytes: Int = 0, now: Duration? = nil)
    -> [Action]
  {
    guard let current = transport, current.outcome == nil else { return [] }
    sawTraffic(now)
    guard packet.namespace == settings.namespace else { return [] }
    switch packet.kind {
    case .connect:
      let sid = packet.payload?["sid"]?.stringValue ?? ""
      transport?.namespaceConnected = true
      transport?.sid = sid
      transport?.early = []
      transport?.earlyBytes = 0
      // Events that came before the CONNECT are the new connection's: delivered after it.
      let early = current.early.map { event -> Action in
        var event = event
        event.sid = sid
        return .deliver(event)
      }
      let waiting = buffered
      buffered = []
      var flushed: [Action] = []
      for frames in waiting {
        if let refusal = oversize(frames) {
          flushed.append(.refuseEmit(refusal))
        } else {
          flushed += write(frames, now: now)
        }
      }
      return [.status(.connected(sid: sid))] + early + flushed
    case .connectError:
      return end(.connectRefused(packet.connectErrorMessage ?? "refused"))
    case .disconnect:
      return end(.serverDisconnect)
    case .event:
      guard let name = packet.eventName else { return [] }
      let event = Delivery(
        name: name, arguments: packet.arguments, namespace: packet.namespace, sid: current.sid,
        ackID: packet.ackID, transport: current.id, byteCount: bytes)
      if current.namespaceConnected { return [.deliver(event)] }
      guard current.early.count < settings.maximumBufferedEmits,
        current.earlyBytes + bytes <= settings.maximumEarlyEventBytes
      else {
        earlyDropped += 1
        return [.dropEarly(name)]
      }
      transport?.early.append(event)
      transport?.earlyBytes += bytes
      return []
    case .ack:
      guard let id = packet.ackID, ackDeadlines.removeValue(forKey: id) != nil else { return [] }
      confirm(through: id)
      return [.completeAck(id, packet.arguments)]
    }
  }

  // MARK: Sending

  /// Emits `frames` (an event packet): sent now when connected, else kept for the next
  /// connection. Refused (``Action/refuseEmit(_:)``, nothing kept) when larger than the
  /// server's `maxPayload`, past ``Settings/maximumBufferedEmits`` waiting, or past
  /// ``Settings/maximumOutboundBytes`` held: an emit accepted is never dropped later.
  ///
  /// With `now`, a WebSocket ping follows the emit (unless one is in flight) and its pong is
  /// due within ``Settings/livenessTimeout``; without it (tests of ordering only), none.
  public mutating func emit(_ frames: [EngineIOFrame], now: Duration? = nil) -> [Action] {
    emit(frames, ackID: nil, now: now)
  }

  private mutating func emit(_ frames: [EngineIOFrame], ackID: Int?, now: Duration?) -> [Action] {
    if let refusal = oversize(frames) { return [.refuseEmit(refusal)] }
    let bytes = frames.reduce(0) { $0 + $1.byteCount }
    if outboundBytes + bytes > settings.maximumOutboundBytes {
      return [
        .refuseEmit(
          SocketIOError(
            .outboundFull,
            "an emit of \(bytes) bytes would hold \(outboundBytes + bytes) bytes unsent or "
              + "unconfirmed, past the limit of \(settings.maximumOutboundBytes)"))
      ]
    }
    if let transport, transport.namespaceConnected, transport.outcome == nil {
      return write(frames, ackID: ackID, now: now)
    }
    guard buffered.count < settings.maximumBufferedEmits else {
      return [
        .refuseEmit(
          SocketIOError(
            .outboundFull,
            "\(buffered.count) emits already wait for a connection (the limit)"))
      ]
    }
    buffered.append(frames)
    return []
  }

  /// Bytes of emits held: waiting for a connection, and written but not confirmed.
  public var outboundBytes: Int {
    let waiting = buffered.reduce(0) { $0 + $1.reduce(0) { $0 + $1.byteCount } }
    let unconfirmed = (transport?.unconfirmed ?? []).reduce(0) {
      $0 + $1.frames.reduce(0) { $0 + $1.byteCount }
    }
    return waiting + unconfirmed
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
    return (id, emit(packet.frames, ackID: id, now: now))
  }

  /// Why an emit cannot be sent: one of its messages is larger than the server's last
  /// announced `maxPayload` (a server closes the connection on such a message).
  private func oversize(_ frames: [EngineIOFrame]) -> SocketIOError? {
    guard let limit = serverMaximumPayload, let largest = frames.map(\.byteCount).max(),
      largest > limit
    else { return nil }
    return SocketIOError(
      .payloadTooLarge,
      "an emit of \(largest) bytes exceeds the server's maxPayload of \(limit) bytes")
  }

  /// Writes an emit on the connected transport and keeps it until a pong confirms it.
  private mutating func write(_ frames: [EngineIOFrame], ackID: Int? = nil, now: Duration?)
    -> [Action]
  {
    guard transport != nil else { return [] }
    transport?.unconfirmed.append((frames, ackID))
    var actions: [Action] = [.send(frames)]
    if let now, transport?.probeDeadline == nil {
      actions += startProbe(now: now)
    }
    return actions
  }

  /// Bytes of the current transport were read at `now`, whether or not they completed a
  /// packet: the link is delivering, so the ping in flight has its whole
  /// ``Settings/livenessTimeout`` from here. A large event on a slow link is seconds of reads
  /// and one packet, and the pong queued behind it comes only after; without this, a link
  /// carrying 20 KB/s would be declared dead under any event longer than the timeout's worth
  /// of bytes. It confirms no emit (only the pong or an acknowledgement does), and a dead link
  /// reads nothing, so it is still found a timeout after its last byte.
  public mutating func bytesArrived(now: Duration) {
    guard transport?.outcome == nil else { return }
    sawTraffic(now)
  }

  /// A packet was read at `now`: the link carries data, so the ping in flight has its whole
  /// timeout from here (its pong may be queued behind megabytes of the server's events). This
  /// confirms no emit: only the pong or an acknowledgement does. A dead link reads nothing and
  /// is still found a timeout after its last packet.
  private mutating func sawTraffic(_ now: Duration?) {
    guard let now, let deadline = transport?.probeDeadline else { return }
    transport?.probeDeadline = max(deadline, now + settings.livenessTimeout)
  }

  private mutating func startProbe(now: Duration) -> [Action] {
    guard let current = transport, !current.unconfirmed.isEmpty else { return [] }
    let id = current.probeID &+ 1
    transport?.probeID = id
    transport?.probed = current.unconfirmed.count
    transport?.probeDeadline = now + settings.livenessTimeout
    return [.probe(id)]
  }

  /// The server answered a WebSocket ping at `now`, echoing probe number `id` (nil: not a
  /// number of ours). The pong of the newest ping confirms the emits written before it and a
  /// ping follows any written since; any other pong confirms nothing (the ping it answers may
  /// predate emits written into a link that died since).
  public mutating func receivePong(_ id: UInt32?, now: Duration) -> [Action] {
    guard let current = transport, current.outcome == nil, current.probeDeadline != nil,
      id == current.probeID
    else {
      return []
    }
    transport?.unconfirmed.removeFirst(min(current.probed, current.unconfirmed.count))
    transport?.probed = 0
    transport?.probeDeadline = nil
    return startProbe(now: now)
  }

  /// The server acknowledged emit `ackID`: it read it and everything written before it.
  private mutating func confirm(through ackID: Int) {
    guard let current = transport,
      let index = current.unconfirmed.firstIndex(where: { $0.ackID == ackID })
    else { return }
    transport?.unconfirmed.removeFirst(index + 1)
    transport?.probed = max(0, current.probed - (index + 1))
    if transport?.unconfirmed.isEmpty == true { transport?.probeDeadline = nil }
  }

  /// The number of the ping whose pong is awaited, if one is.
  public var probeInFlight: UInt32? {
    transport?.probeDeadline == nil ? nil : transport?.probeID
  }

  /// Events dropped because they came before the namespace CONNECT past the early limits
  /// (``Settings/maximumBufferedEmits`` events, ``Settings/maximumEarlyEventBytes`` bytes).
  public private(set) var earlyDropped = 0

  /// Emits written on this transport and not yet confirmed by a pong or an acknowledgement.
  public var unconfirmedEmits: Int { transport?.unconfirmed.count ?? 0 }

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
    if let current = transport, current.outcome == nil, current.pausedSince == nil,
      now >= current.effectiveDeadline
    {
      actions += end(.pingTimeout)
    }
    return actions
  }

  /// The owner stopped reading the transport at `now` (`paused`: its application has not
  /// taken the events received, and their bytes reached the budget), or reads again. While
  /// paused no deadline ends the transport: what is unread says nothing of the link. On
  /// reading again, the ping in flight and the heartbeat are due as much later as the pause
  /// lasted (the time left to them when reading stopped, counted from `now`).
  public mutating func readingPaused(_ paused: Bool, now: Duration) {
    guard let current = transport else { return }
    if paused {
      if current.pausedSince == nil { transport?.pausedSince = now }
      return
    }
    guard let since = current.pausedSince else { return }
    let paused = max(.zero, now - since)
    transport?.pausedSince = nil
    transport?.probeDeadline = current.probeDeadline.map { $0 + paused }
    transport?.deadline = current.deadline + paused
    transport?.connectDeadline = current.connectDeadline + paused
  }

  private mutating func extendDeadline(_ now: Duration) {
    guard let handshake = transport?.handshake else { return }
    transport?.deadline =
      now + Self.heartbeat(handshake.pingInterval) + Self.heartbeat(handshake.pingTimeout)
  }

  /// A heartbeat value of the handshake, in milliseconds, clamped to 0…``maximumHeartbeat``.
  static func heartbeat(_ milliseconds: Int) -> Duration {
    let limit = Int(maximumHeartbeat.components.seconds) * 1000
    return .milliseconds(min(max(0, milliseconds), limit))
  }

  private mutating func end(_ reason: SocketIODisconnectReason) -> [Action] {
    transport?.outcome = reason
    return [.endTransport(reason)]
  }
}
