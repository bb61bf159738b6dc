import Logging
import NIOCore
import NIOWebSocket

/// A Socket.IO 5 client over a WebSocket (Engine.IO 4), safe to use from any task.
///
/// ```swift
/// let client = SocketIOClient(configuration: .init(url: "https://backend", query: [("user_id", "42")]))
/// await client.connect()
/// for await event in client.events { ... }      // one consumer
/// try await client.emit("user_message", ["message": "Hi"])
/// ```
///
/// - Events the server sends before it acknowledges the namespace CONNECT (python-socketio
///   does that for events emitted in its `connect` handler) are kept and delivered right
///   after ``SocketIOStatus/connected(sid:)``.
/// - The server is declared dead when no ping arrives within `pingInterval + pingTimeout`
///   (each clamped to 5 minutes), or when the WebSocket ping that follows an emit has no pong
///   within ``SocketIOClientConfiguration/livenessTimeout``; emits it had not confirmed are
///   sent again, once, on the next connection.
/// - Opening (TCP, TLS, upgrade) and joining (handshake, namespace CONNECT) each have the
///   connect timeout; ``disconnect()`` returns within the close timeout in every state.
/// - Emits made while not connected are buffered and sent once connected.
/// - On a lost transport it reconnects following ``ReconnectionPolicy``; the
///   ``statusUpdates`` stream reports every step.
public actor SocketIOClient {
  /// The configuration.
  public nonisolated let configuration: SocketIOClientConfiguration
  /// The events the server emits, across reconnections, bounded in bytes
  /// (``SocketIOClientConfiguration/maximumQueuedEventBytes``). Iterate it from one task.
  public nonisolated let events: SocketIOEvents
  /// Every status change. Iterate it from one task.
  public nonisolated let statusUpdates: AsyncStream<SocketIOStatus>

  private nonisolated let eventQueue: SocketIOEventQueue
  private nonisolated let inboundMeter = InboundByteMeter()
  private let statusContinuation: AsyncStream<SocketIOStatus>.Continuation
  private let logger: Logger
  /// The current status.
  public private(set) var status: SocketIOStatus = .idle
  /// How many server pings this client has answered, over all its connections: a liveness
  /// measure.
  public var pingsAnswered: Int { session.pingsAnswered }
  /// How many emits were sent again because the link died before confirming them (see
  /// ``SocketIOClientConfiguration/livenessTimeout``).
  public var emitsResent: Int { session.emitsResent }
  /// Who waits for the emits written so far to be confirmed (``waitUntilConfirmed()``).
  private var confirmWaiters: [CheckedContinuation<Bool, Never>] = []
  /// Who waits for a number of answered pings (``waitForPings(_:)``).
  private var pingWaiters: [(count: Int, continuation: CheckedContinuation<Bool, Never>)] = []
  /// The decisions (``SocketIOSession``); this actor carries out its actions.
  private var session: SocketIOSession
  /// The session's time: the continuous clock from this origin.
  private let origin = ContinuousClock.now
  private var runTask: Task<Void, Never>?
  /// What the writer of a transport writes.
  private enum Outgoing: Sendable {
    case frames([EngineIOFrame])
    /// A WebSocket ping carrying its probe's number: the pong echoing it confirms what was
    /// written before it.
    case ping(UInt32)
  }
  /// The current transport's writer, while one is open.
  private var writer: AsyncStream<Outgoing>.Continuation?
  /// The session ended the transport on a timeout: the link is dead, close it at once.
  private var abortTransport = false
  private var stopRequested = false
  private var pendingAcks: [Int: CheckedContinuation<[JSONValue], any Error>] = [:]

  /// Creates a client. Nothing happens until ``connect()``.
  /// - Parameter logger: where to log; by default nothing is logged.
  public init(
    configuration: SocketIOClientConfiguration,
    logger: Logger = Logger(label: "SocketIO", factory: { _ in SwiftLogNoOpLogHandler() })
  ) {
    self.configuration = configuration
    self.logger = logger
    session = SocketIOSession(settings: .init(configuration))
    eventQueue = SocketIOEventQueue(budget: configuration.maximumQueuedEventBytes)
    events = SocketIOEvents(queue: eventQueue)
    (statusUpdates, statusContinuation) = AsyncStream.makeStream()
  }

  deinit {
    runTask?.cancel()
    eventQueue.finish()
    statusContinuation.finish()
  }

  private var now: Duration { .now - origin }

  /// Whether the client is connecting, connected or waiting to reconnect. False before
  /// ``connect()``, and again once it stopped: disconnected by the application or the server,
  /// refused, or given up after ``ReconnectionPolicy/failureLimit`` failures. A stopped client
  /// starts afresh on ``connect()``.
  public var isStarted: Bool { runTask != nil }

  /// Waits until the client stops on its own or by ``disconnect()`` (see ``isStarted``):
  /// disconnected by the server, refused, or given up. Returns at once when not started.
  public func waitUntilStopped() async {
    await runTask?.value
  }

  /// Starts connecting (and reconnecting) in the background. Does nothing when already started;
  /// after the client stopped (see ``isStarted``) it starts afresh, with a new failure count.
  public func connect() {
    guard runTask == nil else { return }
    stopRequested = false
    runTask = Task { await self.runLoop() }
  }

  /// Leaves the namespace, closes the transport and stops reconnecting. Pending
  /// acknowledgements fail with `notConnected`.
  public func disconnect() async {
    stopRequested = true
    let task = runTask
    let handshaken = session.hasHandshake && writer != nil
    // The writer sends the DISCONNECT (when the namespace is connected), then finishing it ends
    // the transport.
    perform(session.disconnect())
    if !handshaken { task?.cancel() }  // still connecting, or waiting to reconnect
    // A link that takes nothing (a full socket buffer, a server that never answers the close)
    // does not hold this up past the close timeout: the run is cancelled then.
    let bound = Task { [closeTimeout = configuration.closeTimeout] in
      try await Task.sleep(for: closeTimeout + .milliseconds(500))
      task?.cancel()
    }
    await task?.value
    bound.cancel()
    // A connect() made while this one waited started a new run: that one stays.
    if runTask == task { runTask = nil }
  }

  /// Emits an event. Sent at once when connected, else buffered until the next connection.
  /// - Throws: ``SocketIOError`` `notConnected` when the client was never started or was
  ///   disconnected by the application.
  ///   `payloadTooLarge` when the emit is larger than the server's announced `maxPayload`
  ///   (sent, the server would close the connection and the emit would be lost).
  public func emit(_ name: String, _ arguments: [JSONValue] = []) throws(SocketIOError) {
    try requireStarted()
    let actions = session.emit(
      SocketIOPacket.event(name, arguments, namespace: configuration.namespace).frames, now: now)
    perform(actions)
    if case .refuseEmit(let error)? = actions.first { throw error }
  }

  /// Emits an event and waits for the server's acknowledgement, returning its arguments.
  /// - Throws: ``SocketIOError`` `ackTimeout` when no answer comes within `timeout`
  ///   (default ``SocketIOClientConfiguration/ackTimeout``), `notConnected` when the
  ///   connection ends first or the client is stopped.
  public func emitWithAck(_ name: String, _ arguments: [JSONValue] = [], timeout: Duration? = nil)
    async throws -> [JSONValue]
  {
    try requireStarted()
    let timeout = timeout ?? configuration.ackTimeout
    let (id, actions) = session.emitWithAck(name, arguments, timeout: timeout, now: now)
    if case .refuseEmit(let error)? = actions.first {
      perform(actions)
      throw error
    }
    // The session fails the acknowledgement at its deadline; this wakes it then.
    let timer = Task {
      try await Task.sleep(for: timeout)
      self.perform(self.session.tick(now: self.now))
    }
    defer { timer.cancel() }
    return try await withCheckedThrowingContinuation { continuation in
      pendingAcks[id] = continuation
      perform(actions)
    }
  }

  private func requireStarted() throws(SocketIOError) {
    guard runTask != nil, !stopRequested else {
      throw SocketIOError(.notConnected, "the client is not started")
    }
  }

  /// Carries out the session's actions, in order.
  private func perform(_ actions: [SocketIOSession.Action]) {
    for action in actions {
      switch action {
      case .send(let frames):
        writer?.yield(.frames(frames))
      case .probe(let id):
        writer?.yield(.ping(id))
      case .dropEarly(let name):
        logger.warning(
          "an event before the namespace CONNECT dropped: past the early limits",
          metadata: ["event": "\(name)", "dropped": "\(session.earlyDropped)"])
      case .refuseEmit(let error):
        logger.warning("emit refused", metadata: ["error": "\(error)"])
      case .resend(let count):
        logger.warning(
          "the link died before confirming emits; sending them again on the next connection",
          metadata: ["emits": "\(count)"])
      case .deliver(let delivery):
        var responder: (@Sendable ([JSONValue]) async -> Void)?
        if let id = delivery.ackID {
          let transport = delivery.transport
          responder = { arguments in await self.acknowledge(id, arguments, transport: transport) }
        }
        eventQueue.put(
          SocketIOEvent(
            name: delivery.name, arguments: delivery.arguments, namespace: delivery.namespace,
            sid: delivery.sid, responder: responder), bytes: delivery.byteCount)
      case .status(let newStatus):
        setStatus(newStatus)
      case .completeAck(let id, let arguments):
        pendingAcks.removeValue(forKey: id)?.resume(returning: arguments)
      case .failAck(let id, let error):
        pendingAcks.removeValue(forKey: id)?.resume(throwing: error)
      case .endTransport(let reason):
        if reason == .pingTimeout {
          logger.warning("Socket.IO link timed out; closing it now")
          abortTransport = true
        }
        writer?.finish()
      }
    }
  }

  private func acknowledge(_ id: Int, _ arguments: [JSONValue], transport: Int) {
    perform(session.acknowledge(id, arguments, transport: transport))
  }

  private func setStatus(_ newStatus: SocketIOStatus) {
    status = newStatus
    statusContinuation.yield(newStatus)
  }

  // MARK: Connection loop

  private func runLoop() async {
    var schedule = ReconnectSchedule(policy: configuration.reconnection)
    while !stopRequested && !Task.isCancelled {
      setStatus(.connecting)
      let (reason, wasConnected) = await runConnection()
      setStatus(.disconnected(reason))
      let step = schedule.connectionEnded(
        reason: reason, wasConnected: wasConnected,
        stopRequested: stopRequested || Task.isCancelled, random: configuration.random())
      if let failed = step.failed { setStatus(.failed(failed)) }
      guard case .retry(let attempt, let delay, _) = step else { break }
      setStatus(.reconnecting(attempt: attempt, delay: delay))
      do { try await configuration.sleep(delay) } catch { break }
    }
    if stopRequested, status != .disconnected(.clientDisconnect) {
      setStatus(.disconnected(.clientDisconnect))  // stopped while waiting to reconnect
    }
    runTask = nil
    resumePingWaiters(stopped: true)
  }

  /// Runs one transport connection to its end; returns why it ended and whether the
  /// namespace was connected.
  private func runConnection() async -> (SocketIODisconnectReason, Bool) {
    let (frames, writer) = AsyncStream<Outgoing>.makeStream()
    self.writer = writer
    abortTransport = false
    _ = session.transportOpened(now: now)
    var transportError: String?
    do {
      let channel = try await WebSocketTransport.connect(
        url: configuration.engineURL, limits: configuration.limits,
        tls: configuration.tlsConfiguration, connectTimeout: configuration.connectTimeout,
        meter: inboundMeter, logger: logger)
      try await channel.executeThenClose { inbound, outbound in
        try await self.transport(inbound: inbound, outbound: outbound, frames: frames)
      }
    } catch {
      transportError = "\(error)"
    }
    self.writer = nil
    writer.finish()
    let (reason, wasConnected, actions) = session.transportEnded(error: transportError)
    resumeConfirmWaiters(ended: true)
    perform(actions)
    return (reason, wasConnected)
  }

  /// Runs the transport until the server closes it, or until the session ended it and the
  /// server answered the close (or `closeTimeout` passed). Packets arrive whole, decoded on
  /// the channel's event loop (``EngineIOChannelHandler``): the actor is entered once per
  /// packet.
  private func transport(
    inbound: NIOAsyncChannelInboundStream<TransportInbound>,
    outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>,
    frames: AsyncStream<Outgoing>
  ) async throws {
    let closeTimeout = configuration.closeTimeout
    try await withThrowingTaskGroup(of: Bool.self) { group in
      group.addTask {
        for await outgoing in frames {
          switch outgoing {
          case .frames(let batch):
            try await outbound.write(contentsOf: batch.map(Self.wire))  // one flush a batch
          case .ping(let id):
            var data = ByteBuffer()
            data.writeInteger(id)  // big-endian; the server's pong echoes it
            try await outbound.write(
              WebSocketFrame(
                fin: true, opcode: .ping, maskKey: .random(), data: data))
          }
        }
        // The session ended the transport: a normal close, then the server's answer ends
        // the inbound stream, or the time runs out.
        try await outbound.write(
          EngineIOChannelHandler.closeFrame(allocator: ByteBufferAllocator()))
        try await Task.sleep(for: closeTimeout)
        return true
      }
      group.addTask {
        var open = true
        for try await item in inbound where open {
          switch item {
          case .engine(let packet): open = await self.receive(packet)
          case .socket(let packet, let bytes):
            open = await self.receive(packet, bytes: bytes)
            if open, !self.eventQueue.hasRoom {
              // The application is behind: read nothing more until it takes some events.
              await self.readingPaused(true)
              await self.eventQueue.waitForRoom()
              await self.readingPaused(false)
            }
          case .pong(let id): open = await self.receivePong(id)
          }
        }
        return true
      }
      group.addTask {
        // True: a deadline passed and the link is dead, so everything ends now (cancelling a
        // write blocked on a full socket). False: the writer closes the WebSocket.
        try await self.watchdog()
      }
      while let ends = try await group.next() {
        if ends { break }
      }
      group.cancelAll()
    }
  }

  /// A frame as it goes out: masked, as every client frame must be.
  private static func wire(_ frame: EngineIOFrame) -> WebSocketFrame {
    switch frame {
    case .text(let text):
      WebSocketFrame(
        fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(string: text))
    case .binary(let bytes):
      WebSocketFrame(
        fin: true, opcode: .binary, maskKey: .random(), data: ByteBuffer(bytes: bytes))
    }
  }

  /// Wakes the session at its deadlines (the ping's, before the handshake the connect's) until
  /// the transport ends. Bytes read count as the link delivering
  /// (``SocketIOSession/bytesArrived(now:)``), checked before each tick: a packet still
  /// arriving keeps the ping in flight waiting.
  private func watchdog() async throws -> Bool {
    var bytesSeen = inboundMeter.total
    while session.isOpen {
      let bytes = inboundMeter.total
      if bytes != bytesSeen {
        bytesSeen = bytes
        session.bytesArrived(now: now)
      }
      perform(session.tick(now: now))
      guard session.isOpen else { return abortTransport }
      guard let deadline = session.nextDeadline else { return false }
      // Wake at least every 100 ms: the deadline moves (and shrinks after the handshake).
      try await Task.sleep(
        until: origin + min(deadline, now + .milliseconds(100)), clock: .continuous)
    }
    return abortTransport
  }

  /// The server's pong to a WebSocket ping (the probe number it echoes, if it is one of
  /// ours); false when the transport should end.
  private func receivePong(_ id: UInt32?) -> Bool {
    perform(session.receivePong(id, now: now))
    resumeConfirmWaiters()
    return session.isOpen
  }

  /// Waits until every emit written on the current connection is confirmed as received by the
  /// server (its pong to the WebSocket ping that followed, or an acknowledgement): true then;
  /// false when the connection ends first (the unconfirmed emits are then sent again on the
  /// next one) or when not connected.
  public func waitUntilConfirmed() async -> Bool {
    guard session.isOpen else { return false }
    if session.unconfirmedEmits == 0 { return true }
    return await withCheckedContinuation { confirmWaiters.append($0) }
  }

  private func resumeConfirmWaiters(ended: Bool = false) {
    guard !confirmWaiters.isEmpty, ended || session.unconfirmedEmits == 0 else { return }
    let waiters = confirmWaiters
    confirmWaiters = []
    for waiter in waiters { waiter.resume(returning: !ended) }
  }

  /// One Engine.IO control packet; false when the transport should end.
  private func receive(_ packet: EngineIOPacket) -> Bool {
    perform(session.receive(packet, now: now))
    if !pingWaiters.isEmpty { resumePingWaiters() }
    return session.isOpen
  }

  /// Waits until this client has answered `count` server pings over all its connections: true
  /// then; false when the client stops first (see ``isStarted``).
  public func waitForPings(_ count: Int) async -> Bool {
    if session.pingsAnswered >= count { return true }
    guard isStarted else { return false }
    return await withCheckedContinuation { pingWaiters.append((count, $0)) }
  }

  private func resumePingWaiters(stopped: Bool = false) {
    let answered = session.pingsAnswered
    let done = pingWaiters.filter { stopped || $0.count <= answered }
    pingWaiters.removeAll { stopped || $0.count <= answered }
    for waiter in done { waiter.continuation.resume(returning: waiter.count <= answered) }
  }

  /// The transport's reading stopped (the events queue is full) or goes on.
  private func readingPaused(_ paused: Bool) {
    session.readingPaused(paused, now: now)
  }

  /// Bytes of the events received and not taken by the application yet.
  public nonisolated var queuedEventBytes: Int { eventQueue.bytes }

  /// Bytes read from the network so far, over all connections, counted as they arrive (before
  /// a WebSocket message or a Socket.IO packet is whole). A player compares two readings to
  /// tell a slow link that is delivering from one that is not.
  public nonisolated var bytesReceived: Int { inboundMeter.total }

  /// One Socket.IO packet of `bytes` wire bytes; false when the transport should end.
  private func receive(_ packet: SocketIOPacket, bytes: Int) -> Bool {
    perform(session.receive(packet, bytes: bytes, now: now))
    if packet.kind == .ack { resumeConfirmWaiters() }
    return session.isOpen
  }
}
