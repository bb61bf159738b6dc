import Logging
import NIOCore
import WSClient

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
/// - The server is declared dead when no ping arrives within `pingInterval + pingTimeout`.
/// - Emits made while not connected are buffered and sent once connected.
/// - On a lost transport it reconnects following ``ReconnectionPolicy``; the
///   ``statusUpdates`` stream reports every step.
public actor SocketIOClient {
  private struct Connection {
    var writer: AsyncStream<[WebSocketFrame]>.Continuation
    var generation: Int
    var handshake: EngineIOHandshake?
    var namespaceConnected = false
    /// The namespace connection's socket id, once connected.
    var sid: String?
    var earlyEvents: [SocketIOEvent] = []
    var deadline: ContinuousClock.Instant
    var outcome: SocketIODisconnectReason?
  }

  /// The configuration.
  public nonisolated let configuration: SocketIOClientConfiguration
  /// The events the server emits, across reconnections. Iterate it from one task.
  public nonisolated let events: AsyncStream<SocketIOEvent>
  /// Every status change. Iterate it from one task.
  public nonisolated let statusUpdates: AsyncStream<SocketIOStatus>

  private let eventsContinuation: AsyncStream<SocketIOEvent>.Continuation
  private let statusContinuation: AsyncStream<SocketIOStatus>.Continuation
  private let logger: Logger
  /// The current status.
  public private(set) var status: SocketIOStatus = .idle
  /// How many server pings this client has answered, over all its connections: a liveness
  /// measure.
  public private(set) var pingsAnswered = 0
  private var runTask: Task<Void, Never>?
  private var connection: Connection?
  private var generation = 0
  private var stopRequested = false
  private var sendBuffer: [[WebSocketFrame]] = []
  private var pendingAcks: [Int: CheckedContinuation<[JSONValue], any Error>] = [:]
  private var nextAckID = 0

  /// Creates a client. Nothing happens until ``connect()``.
  /// - Parameter logger: where to log; by default nothing is logged.
  public init(
    configuration: SocketIOClientConfiguration,
    logger: Logger = Logger(label: "SocketIO", factory: { _ in SwiftLogNoOpLogHandler() })
  ) {
    self.configuration = configuration
    self.logger = logger
    (events, eventsContinuation) = AsyncStream.makeStream()
    (statusUpdates, statusContinuation) = AsyncStream.makeStream()
  }

  deinit {
    runTask?.cancel()
    eventsContinuation.finish()
    statusContinuation.finish()
  }

  /// Whether the client is connecting, connected or waiting to reconnect. False before
  /// ``connect()``, and again once it stopped: disconnected by the application or the server,
  /// refused, or given up after ``ReconnectionPolicy/failureLimit`` failures. A stopped client
  /// starts afresh on ``connect()``.
  public var isStarted: Bool { runTask != nil }

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
    if let connection, connection.handshake != nil {
      // Let the writer send the DISCONNECT, then end the session by finishing the writer.
      if connection.namespaceConnected {
        connection.writer.yield(
          SocketIOPacket.disconnect(namespace: configuration.namespace).frames)
      }
      self.connection?.outcome = .clientDisconnect
      connection.writer.finish()
    } else {
      connection?.outcome = .clientDisconnect
      task?.cancel()  // still connecting, or waiting to reconnect
    }
    await task?.value
    // A connect() made while this one waited started a new run: that one stays.
    if runTask == task { runTask = nil }
  }

  /// Emits an event. Sent at once when connected, else buffered until the next connection.
  /// - Throws: ``SocketIOError`` `notConnected` when the client was never started or was
  ///   disconnected by the application.
  public func emit(_ name: String, _ arguments: [JSONValue] = []) throws(SocketIOError) {
    try send(SocketIOPacket.event(name, arguments, namespace: configuration.namespace).frames)
  }

  /// Emits an event and waits for the server's acknowledgement, returning its arguments.
  /// - Throws: ``SocketIOError`` `ackTimeout` when no answer comes within `timeout`
  ///   (default ``SocketIOClientConfiguration/ackTimeout``), `notConnected` when the
  ///   connection ends first or the client is stopped.
  public func emitWithAck(_ name: String, _ arguments: [JSONValue] = [], timeout: Duration? = nil)
    async throws -> [JSONValue]
  {
    let id = nextAckID
    nextAckID = nextAckID == Int(Int32.max) ? 0 : nextAckID + 1
    let packet = SocketIOPacket.event(
      name, arguments, namespace: configuration.namespace, ackID: id)
    try send(packet.frames)
    let timeout = timeout ?? configuration.ackTimeout
    let timer = Task {
      try await Task.sleep(for: timeout)
      self.failAck(
        id, SocketIOError(.ackTimeout, "no acknowledgement for \"\(name)\" within \(timeout)"))
    }
    defer { timer.cancel() }
    return try await withCheckedThrowingContinuation { continuation in
      pendingAcks[id] = continuation
    }
  }

  private func failAck(_ id: Int, _ error: SocketIOError) {
    pendingAcks.removeValue(forKey: id)?.resume(throwing: error)
  }

  private func send(_ frames: [WebSocketFrame]) throws(SocketIOError) {
    guard runTask != nil, !stopRequested else {
      throw SocketIOError(.notConnected, "the client is not started")
    }
    if let connection, connection.namespaceConnected {
      connection.writer.yield(frames)
    } else {
      if sendBuffer.count >= configuration.maximumBufferedEmits { sendBuffer.removeFirst() }
      sendBuffer.append(frames)
    }
  }

  private func setStatus(_ newStatus: SocketIOStatus) {
    status = newStatus
    statusContinuation.yield(newStatus)
  }

  // MARK: Connection loop

  private func runLoop() async {
    var failures = 0
    let policy = configuration.reconnection
    while !stopRequested && !Task.isCancelled {
      setStatus(.connecting)
      let (reason, wasConnected) = await runConnection()
      for (_, continuation) in pendingAcks {
        continuation.resume(throwing: SocketIOError(.notConnected, "the connection ended"))
      }
      pendingAcks = [:]
      setStatus(.disconnected(reason))
      guard !stopRequested, reason.reconnects, policy.isEnabled, !Task.isCancelled else { break }
      failures = wasConnected ? 1 : failures + 1
      if failures >= policy.failureLimit && failures % policy.failureLimit == 0 {
        setStatus(
          .failed(
            SocketIOError(.reconnectFailed, "\(failures) consecutive connection failures")))
        if !policy.continuesAfterFailureLimit { break }
      }
      let delay = policy.delay(forAttempt: failures, random: configuration.random())
      setStatus(.reconnecting(attempt: failures, delay: delay))
      do {
        try await configuration.sleep(delay)
      } catch {
        break
      }
    }
    if stopRequested, status != .disconnected(.clientDisconnect) {
      setStatus(.disconnected(.clientDisconnect))  // stopped while waiting to reconnect
    }
    runTask = nil
  }

  /// Runs one transport connection to its end; returns why it ended and whether the
  /// namespace was connected.
  private func runConnection() async -> (SocketIODisconnectReason, Bool) {
    generation += 1
    let generation = generation
    let (frames, writer) = AsyncStream<[WebSocketFrame]>.makeStream()
    connection = Connection(
      writer: writer, generation: generation,
      deadline: .now + configuration.connectTimeout)
    var wsConfiguration = WebSocketClientConfiguration(
      maxFrameSize: configuration.limits.maximumPayloadBytes,
      closeTimeout: configuration.closeTimeout)
    // No separate UTF-8 validation pass: text frames become Strings by decoding, which
    // repairs invalid sequences, and the JSON reader checks every byte it uses.
    wsConfiguration.validateUTF8 = false
    var transportError: String?
    do {
      try await WebSocketClient.connect(
        url: configuration.engineURL, configuration: wsConfiguration, logger: logger
      ) { inbound, outbound, _ in
        try await self.session(inbound: inbound, outbound: outbound, frames: frames)
      }
    } catch {
      transportError = "\(error)"
    }
    let ended = connection
    connection = nil
    writer.finish()
    let wasConnected = ended?.namespaceConnected ?? false
    if let outcome = ended?.outcome { return (outcome, wasConnected) }
    if let transportError, !wasConnected { return (.transportError(transportError), false) }
    return (.transportClose, wasConnected)
  }

  private func session(
    inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter,
    frames: AsyncStream<[WebSocketFrame]>
  ) async throws {
    let limits = configuration.limits
    try await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask {
        for await batch in frames {
          for frame in batch {
            switch frame {
            case .text(let text): try await outbound.write(.text(text))
            case .binary(let bytes): try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
            }
          }
        }
      }
      let logger = logger
      group.addTask {
        // Frames are parsed and binary packets reassembled here, off the actor; the actor is
        // entered once per complete packet.
        var decoder = SocketIOPacketDecoder(limits: limits)
        var messages = WebSocketMessageAssembler(maximumBytes: limits.maximumPayloadBytes)
        for try await frame in inbound {
          let message: (isText: Bool, payload: ByteBuffer)?
          do {
            message = try messages.append(frame.opcode, frame.data, fin: frame.fin)
          } catch {
            // The frames no longer make messages: the connection cannot go on.
            logger.warning("Closing the connection: \(error)")
            throw error
          }
          guard let (isText, payload) = message else { continue }
          do {
            if isText, payload.readableBytesView.first == UInt8(ascii: "4") {
              // An Engine.IO message, by far the most frequent and the largest text: parsed
              // in the frame's buffer, with no String made of it first.
              let packet = try payload.withUnsafeReadableBytes { raw in
                try decoder.decode(
                  utf8: UnsafeBufferPointer(
                    rebasing: raw.assumingMemoryBound(to: UInt8.self).dropFirst()))
              }
              guard let packet else { continue }
              guard await self.handle(packet) else { return }
              continue
            }
            let frame: WebSocketFrame =
              isText ? .text(String(buffer: payload)) : .binary(Array(payload.readableBytesView))
            let packet = try EngineIOPacket(frame: frame, limits: limits)
            switch packet {
            case .message, .binaryMessage:
              guard let socketPacket = try decoder.decode(packet) else { continue }
              guard await self.handle(socketPacket) else { return }
            default:
              guard await self.receive(packet) else { return }
            }
          } catch {
            // A bad packet is dropped; the decoder is ready for the next one.
            logger.warning("Dropped a malformed Socket.IO packet: \(error)")
          }
        }
      }
      group.addTask { try await self.watchdog() }
      _ = try await group.next()
      group.cancelAll()
    }
  }

  /// Ends the session when the ping deadline (or, before the handshake, the connect
  /// deadline) passes.
  private func watchdog() async throws {
    while true {
      guard let deadline = connection?.deadline else { return }
      if ContinuousClock.now >= deadline {
        if connection?.outcome == nil { connection?.outcome = .pingTimeout }
        logger.debug("Socket.IO ping timeout")
        return
      }
      // Wake at least every 100 ms: the deadline moves (and shrinks after the handshake).
      try await Task.sleep(until: min(deadline, .now + .milliseconds(100)), clock: .continuous)
    }
  }

  /// Handles one Engine.IO control packet; returns false when the session should end.
  private func receive(_ packet: EngineIOPacket) -> Bool {
    guard connection != nil, connection?.outcome == nil else { return false }
    switch packet {
    case .open(let handshake):
      connection?.handshake = handshake
      extendDeadline()
      var connect = SocketIOPacket.connect(namespace: configuration.namespace)
      connect.payload = configuration.auth
      connection?.writer.yield(connect.frames)
    case .ping(let payload):
      extendDeadline()
      connection?.writer.yield([EngineIOPacket.pong(payload).frame])
      pingsAnswered += 1
    case .close:
      connection?.outcome = .transportClose
      return false
    case .message, .binaryMessage, .pong, .upgrade, .noop:
      break
    }
    return true
  }

  private func extendDeadline() {
    guard let handshake = connection?.handshake else { return }
    connection?.deadline =
      .now + .milliseconds(handshake.pingInterval) + .milliseconds(handshake.pingTimeout)
  }

  /// Handles one Socket.IO packet; returns false when the session should end.
  private func handle(_ packet: SocketIOPacket) -> Bool {
    guard let current = connection, current.outcome == nil else { return false }
    guard packet.namespace == configuration.namespace else { return true }
    switch packet.kind {
    case .connect:
      let sid = packet.payload?["sid"]?.stringValue ?? ""
      connection?.namespaceConnected = true
      connection?.sid = sid
      setStatus(.connected(sid: sid))
      for event in current.earlyEvents { eventsContinuation.yield(event.arrived(on: sid)) }
      connection?.earlyEvents = []
      for frames in sendBuffer { current.writer.yield(frames) }
      sendBuffer = []
    case .connectError:
      connection?.outcome = .connectRefused(packet.connectErrorMessage ?? "refused")
      return false
    case .disconnect:
      connection?.outcome = .serverDisconnect
      return false
    case .event:
      guard let name = packet.eventName else { return true }
      var responder: (@Sendable ([JSONValue]) async -> Void)?
      if let id = packet.ackID {
        let generation = current.generation
        let namespace = configuration.namespace
        responder = { arguments in
          await self.sendAck(
            SocketIOPacket.ack(id, arguments, namespace: namespace), generation: generation)
        }
      }
      let event = SocketIOEvent(
        name: name, arguments: packet.arguments, namespace: packet.namespace, sid: current.sid,
        responder: responder)
      if current.namespaceConnected {
        eventsContinuation.yield(event)
      } else if current.earlyEvents.count < configuration.maximumBufferedEmits {
        connection?.earlyEvents.append(event)
      }
    case .ack:
      if let id = packet.ackID {
        pendingAcks.removeValue(forKey: id)?.resume(returning: packet.arguments)
      }
    }
    return true
  }

  private func sendAck(_ packet: SocketIOPacket, generation: Int) {
    guard let connection, connection.generation == generation else { return }
    connection.writer.yield(packet.frames)
  }
}
