import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Locking
import Logging
import NIOCore
import SocketIO

/// A client's connection to one namespace, as the server sees it.
public final class SocketIOServerSocket: Sendable {
  /// The socket id (sent to the client in the CONNECT ack).
  public let id: String
  /// The namespace.
  public let namespace: String
  /// The auth payload of the client's CONNECT packet, if any.
  public let auth: JSONValue?
  /// The events the client emits. Iterate it from one task; it ends when the client leaves.
  public let events: AsyncStream<SocketIOEvent>
  private let eventsContinuation: AsyncStream<SocketIOEvent>.Continuation
  private let session: EngineSession
  private let roomSet = Locked<Set<String>>([])

  init(id: String, namespace: String, auth: JSONValue?, session: EngineSession) {
    self.id = id
    self.namespace = namespace
    self.auth = auth
    self.session = session
    (events, eventsContinuation) = AsyncStream.makeStream()
    roomSet.withLock { _ = $0.insert(id) }
  }

  /// The Engine.IO session id.
  public var engineID: String { session.id }
  /// The handshake query parameters (e.g. `user_id`).
  public var query: [String: String] { session.query }
  /// The rooms the socket is in (always including its own id).
  public var rooms: Set<String> { roomSet.withLock { $0 } }

  /// Puts the socket in `room`.
  public func join(_ room: String) { roomSet.withLock { _ = $0.insert(room) } }
  /// Takes the socket out of `room`.
  public func leave(_ room: String) { roomSet.withLock { _ = $0.remove(room) } }

  /// Emits an event to this client (binary values become attachments).
  public func emit(_ name: String, _ arguments: [JSONValue] = []) {
    session.send(SocketIOPacket.event(name, arguments, namespace: namespace).frames)
  }

  /// Writes frames of an already encoded packet of this socket's namespace (e.g.
  /// ``SocketIO/SocketIOPacket/frames``).
  public func send(_ frames: [EngineIOFrame]) {
    session.send(frames)
  }

  /// Writes a packet of this socket's namespace encoded once with
  /// ``SocketIOServerPacket/init(_:)``: one packet sent to many sockets, or many times, is
  /// neither encoded nor copied again.
  public func send(_ packet: SocketIOServerPacket) {
    session.send(packet)
  }

  /// Emits an event and waits for the client's acknowledgement.
  /// - Throws: ``SocketIOError`` `ackTimeout` or `notConnected`.
  public func emitWithAck(
    _ name: String, _ arguments: [JSONValue] = [], timeout: Duration = .seconds(30)
  ) async throws -> [JSONValue] {
    let session = session
    let namespace = namespace
    let idBox = Locked<Int?>(nil)
    let timer = Task {
      try await Task.sleep(for: timeout)
      if let id = idBox.withLock({ $0 }) {
        session.failAck(id, SocketIOError(.ackTimeout, "no acknowledgement for \"\(name)\""))
      }
    }
    defer { timer.cancel() }
    return try await withCheckedThrowingContinuation { continuation in
      guard let id = session.registerAck(continuation) else {
        continuation.resume(throwing: SocketIOError(.notConnected, "the client left"))
        return
      }
      idBox.withLock { $0 = id }
      session.send(SocketIOPacket.event(name, arguments, namespace: namespace, ackID: id).frames)
    }
  }

  /// How many pongs the client's transport has answered so far: a liveness measure.
  public var pongsReceived: Int { session.pongs }

  /// Waits until the client's transport has answered `count` pings in all: true then, false
  /// when the connection closes first (a client that stops answering is closed at the ping
  /// timeout, so the wait is bounded while the server sends pings).
  public func waitForPongs(_ count: Int) async -> Bool {
    await session.waitForPongs(count)
  }

  /// Drops the transport without a DISCONNECT packet, as a crash or a network failure
  /// would; a client reconnects after this.
  public func closeTransport() {
    session.finishWriting()
  }

  /// Disconnects the client from the namespace (a DISCONNECT packet, after everything queued
  /// before it). The client closes the transport when it reads the packet, as python-socketio's
  /// server expects; one that has not closed it after `grace` has it closed. Closing at once
  /// raced the packet: python-socketio's client handles messages in tasks of their own, so it
  /// could see the close first and report a transport error instead of the server's
  /// disconnect.
  public func disconnect(grace: Duration = .seconds(1)) {
    session.send(SocketIOPacket.disconnect(namespace: namespace).frames)
    let session = session
    Task {
      try? await Task.sleep(for: grace)
      session.finishWriting()
    }
  }

  func deliver(_ event: SocketIOEvent) { eventsContinuation.yield(event) }

  func finish() { eventsContinuation.finish() }
}
