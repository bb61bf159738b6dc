import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Locking
import Logging
import NIOCore
import SocketIO

/// How a ``SocketIOServer`` behaves.
public struct SocketIOServerConfiguration: Sendable {
  /// The Engine.IO path, `/socket.io/` by default.
  public var path: String
  /// How often the server pings each client.
  public var pingInterval: Duration
  /// How long the server waits for the pong before dropping the client.
  public var pingTimeout: Duration
  /// Limits on what clients may send; also the WebSocket frame limit.
  public var limits: SocketIOLimits
  /// The namespaces clients may join; others get a CONNECT_ERROR.
  public var namespaces: Set<String>
  /// Whether the server sends pings. Turn off only to test a client's ping timeout.
  public var sendsPings: Bool

  /// Creates a configuration; the defaults match python-socketio's.
  public init(
    path: String = "/socket.io/", pingInterval: Duration = .seconds(25),
    pingTimeout: Duration = .seconds(20), limits: SocketIOLimits = .default,
    namespaces: Set<String> = ["/"], sendsPings: Bool = true
  ) {
    self.path = path
    self.pingInterval = pingInterval
    self.pingTimeout = pingTimeout
    self.limits = limits
    self.namespaces = namespaces
    self.sendsPings = sendsPings
  }
}

/// Thrown from a connection handler to refuse a namespace connection; the client gets a
/// CONNECT_ERROR with ``message``.
public struct SocketIOConnectionRefusal: Error, Sendable, Hashable {
  /// The message sent to the client.
  public var message: String

  /// Creates a refusal.
  public init(_ message: String) { self.message = message }
}

/// A Socket.IO 5 / Engine.IO 4 server over Hummingbird's WebSocket upgrade (WebSocket
/// transport only).
///
/// ```swift
/// let server = SocketIOServer { socket in
///   socket.join("room-1")                 // runs before the CONNECT ack is sent
/// }
/// let app = Application(router: Router(), server: server.httpServerBuilder)
/// ```
/// Accepted sockets appear on ``connections``; each socket's events on its
/// ``SocketIOServerSocket/events``.
public final class SocketIOServer: Sendable {
  /// The configuration.
  public let configuration: SocketIOServerConfiguration
  /// Every socket after its namespace connection was accepted. Iterate it from one task.
  public let connections: AsyncStream<SocketIOServerSocket>
  private let connectionsContinuation: AsyncStream<SocketIOServerSocket>.Continuation
  private let onConnect: @Sendable (SocketIOServerSocket) async throws -> Void
  private let logger: Logger
  private let sockets = Locked<[String: SocketIOServerSocket]>([:])

  /// Creates a server.
  /// - Parameters:
  ///   - onConnect: runs when a client joins a namespace, before the CONNECT ack: events it
  ///     emits reach the client first (as with python-socketio). Throw
  ///     ``SocketIOConnectionRefusal`` to refuse.
  public init(
    configuration: SocketIOServerConfiguration = .init(),
    logger: Logger = Logger(label: "SocketIOServer", factory: { _ in SwiftLogNoOpLogHandler() }),
    onConnect: @escaping @Sendable (SocketIOServerSocket) async throws -> Void = { _ in }
  ) {
    self.configuration = configuration
    self.logger = logger
    self.onConnect = onConnect
    (connections, connectionsContinuation) = AsyncStream.makeStream()
  }

  deinit { connectionsContinuation.finish() }

  /// A Hummingbird server builder that upgrades Engine.IO WebSocket requests to this server.
  public var httpServerBuilder: HTTPServerBuilder {
    .http1WebSocketUpgrade(
      configuration: HTTP1WebSocketUpgradeChannel.Configuration(
        ws: WebSocketServerConfiguration(
          maxFrameSize: configuration.limits.maximumPayloadBytes, autoPing: .disabled,
          closeTimeout: .seconds(2)))
    ) { request, channel, _ in
      let result = self.upgrade(request)
      if case .upgrade = result {
        try channel.pipeline.syncOperations.addHandler(FlushCoalescingHandler(), position: .first)
      }
      return result
    }
  }

  /// Decides a WebSocket upgrade: Engine.IO 4 WebSocket requests on the configured path are
  /// upgraded and served, others are not.
  public func upgrade(_ request: HTTPRequest)
    -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>>
  {
    let target = request.path ?? ""
    let (path, query) = Self.split(target)
    guard path == configuration.path || path + "/" == configuration.path,
      query["EIO"] == "4", query["transport"] == "websocket"
    else { return .dontUpgrade }
    return .upgrade([:]) { inbound, outbound, _ in
      await self.serve(inbound: inbound, outbound: outbound, query: query)
    }
  }

  /// The connected sockets.
  public var connectedSockets: [SocketIOServerSocket] {
    sockets.withLock { Array($0.values) }
  }

  /// Emits an event to every socket in `room` on `namespace`.
  public func emit(
    _ name: String, _ arguments: [JSONValue] = [], toRoom room: String, namespace: String = "/"
  ) {
    let packet = SocketIOServerPacket(.event(name, arguments, namespace: namespace))
    for socket in connectedSockets
    where socket.namespace == namespace && socket.rooms.contains(room) {
      socket.send(packet)
    }
  }

  /// Emits an event to every socket on `namespace`.
  public func broadcast(_ name: String, _ arguments: [JSONValue] = [], namespace: String = "/") {
    let packet = SocketIOServerPacket(.event(name, arguments, namespace: namespace))
    for socket in connectedSockets where socket.namespace == namespace {
      socket.send(packet)
    }
  }

  // MARK: Serving one connection

  private func serve(
    inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, query: [String: String]
  ) async {
    let (frames, writer) = AsyncStream<SocketIOServerPacket>.makeStream()
    let session = EngineSession(id: Self.makeID(), writer: writer, query: query)
    let handshake = EngineIOHandshake(
      sid: session.id, upgrades: [], pingInterval: Self.milliseconds(configuration.pingInterval),
      pingTimeout: Self.milliseconds(configuration.pingTimeout),
      maxPayload: configuration.limits.maximumPayloadBytes)
    writer.yield(SocketIOServerPacket(frames: [EngineIOPacket.open(handshake).frame]))
    let configuration = configuration
    await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask {
        for await packet in frames {
          for frame in packet.frames { try await outbound.write(frame) }
        }
      }
      if configuration.sendsPings {
        group.addTask {
          try await Self.pingLoop(
            session, interval: configuration.pingInterval, timeout: configuration.pingTimeout)
        }
      }
      group.addTask {
        var decoder = SocketIOPacketDecoder(limits: configuration.limits)
        for try await message in inbound.messages(maxSize: configuration.limits.maximumPayloadBytes)
        {
          let frame: EngineIOFrame
          switch message {
          case .text(let text): frame = .text(text)
          case .binary(let buffer): frame = .binary(Array(buffer.readableBytesView))
          }
          guard await self.receive(frame, session: session, decoder: &decoder) else { return }
        }
      }
      _ = try? await group.next()
      group.cancelAll()
    }
    for socket in session.close() {
      sockets.withLock { _ = $0.removeValue(forKey: socket.id) }
    }
  }

  private static func pingLoop(_ session: EngineSession, interval: Duration, timeout: Duration)
    async throws
  {
    let clock = ContinuousClock()
    while true {
      try await Task.sleep(for: interval)
      let sent = clock.now
      session.send([EngineIOPacket.ping("").frame])
      while session.lastPong < sent {
        let remaining = sent.advanced(by: timeout) - clock.now
        if remaining <= .zero { return }  // no pong: the session ends
        try await Task.sleep(for: min(remaining, .milliseconds(5)))
      }
    }
  }

  /// Handles one frame; returns false when the connection should end.
  private func receive(
    _ frame: EngineIOFrame, session: EngineSession, decoder: inout SocketIOPacketDecoder
  ) async -> Bool {
    do {
      let packet = try EngineIOPacket(frame: frame, limits: configuration.limits)
      switch packet {
      case .pong: session.receivedPong()
      case .ping(let payload): session.send([EngineIOPacket.pong(payload).frame])
      case .close: return false
      case .message, .binaryMessage:
        if let socketPacket = try decoder.decode(packet) {
          await handle(socketPacket, session: session)
        }
      case .open, .upgrade, .noop: break
      }
    } catch {
      logger.debug("Dropped a malformed packet from \(session.id): \(error)")
    }
    return !session.isClosed
  }

  private func handle(_ packet: SocketIOPacket, session: EngineSession) async {
    let namespace = packet.namespace
    switch packet.kind {
    case .connect:
      guard configuration.namespaces.contains(namespace) else {
        session.send(SocketIOPacket.connectError("Invalid namespace", namespace: namespace).frames)
        return
      }
      guard session.socket(namespace) == nil else { return }
      let socket = SocketIOServerSocket(
        id: Self.makeID(), namespace: namespace, auth: packet.payload, session: session)
      do {
        try await onConnect(socket)
      } catch {
        let message = (error as? SocketIOConnectionRefusal)?.message ?? "\(error)"
        session.send(SocketIOPacket.connectError(message, namespace: namespace).frames)
        return
      }
      session.add(socket)
      sockets.withLock { $0[socket.id] = socket }
      session.send(
        SocketIOPacket.connect(namespace: namespace, payload: ["sid": .string(socket.id)]).frames)
      connectionsContinuation.yield(socket)
    case .disconnect:
      if let socket = session.remove(namespace) {
        sockets.withLock { _ = $0.removeValue(forKey: socket.id) }
      }
    case .event:
      guard let socket = session.socket(namespace), let name = packet.eventName else { return }
      var responder: (@Sendable ([JSONValue]) async -> Void)?
      if let id = packet.ackID {
        responder = { arguments in
          session.send(SocketIOPacket.ack(id, arguments, namespace: namespace).frames)
        }
      }
      socket.deliver(
        SocketIOEvent(
          name: name, arguments: packet.arguments, namespace: namespace, responder: responder))
    case .ack:
      if let id = packet.ackID { session.resolveAck(id, packet.arguments) }
    case .connectError:
      break
    }
  }

  static func split(_ target: String) -> (String, [String: String]) {
    guard let mark = target.firstIndex(of: "?") else { return (target, [:]) }
    var query: [String: String] = [:]
    for pair in target[target.index(after: mark)...].split(separator: "&") {
      let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      let key = percentDecoded(parts[0])
      query[key] = parts.count > 1 ? percentDecoded(parts[1]) : ""
    }
    return (String(target[..<mark]), query)
  }

  private static func percentDecoded(_ text: Substring) -> String {
    var bytes: [UInt8] = []
    var iterator = Array(text.utf8)[...]
    while let byte = iterator.popFirst() {
      if byte == UInt8(ascii: "%"), iterator.count >= 2,
        let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16)
      {
        bytes.append(value)
        iterator = iterator.dropFirst(2)
      } else if byte == UInt8(ascii: "+") {
        bytes.append(UInt8(ascii: " "))
      } else {
        bytes.append(byte)
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  static func makeID() -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    var generator = SystemRandomNumberGenerator()
    return String(
      decoding: (0..<20).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
  }

  private static func milliseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
  }
}
