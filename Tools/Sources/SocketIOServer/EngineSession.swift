import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Locking
import Logging
import NIOCore
import SocketIO

/// One Engine.IO connection: its writer, its namespace sockets, its pending acks.
final class EngineSession: Sendable {
  private struct State {
    var sockets: [String: SocketIOServerSocket] = [:]
    var pendingAcks: [Int: CheckedContinuation<[JSONValue], any Error>] = [:]
    var nextAckID = 0
    var lastPong: ContinuousClock.Instant = .now
    var pongs = 0
    /// Waiters for a number of pongs, resumed with true when it is reached, false on close.
    var pongWaiters: [(count: Int, continuation: CheckedContinuation<Bool, Never>)] = []
    var closed = false
  }

  let id: String
  let query: [String: String]
  private let writer: AsyncStream<SocketIOServerPacket>.Continuation
  private let state = Locked(State())

  init(id: String, writer: AsyncStream<SocketIOServerPacket>.Continuation, query: [String: String])
  {
    self.id = id
    self.writer = writer
    self.query = query
  }

  var lastPong: ContinuousClock.Instant { state.withLock { $0.lastPong } }

  var pongs: Int { state.withLock { $0.pongs } }

  func receivedPong() {
    let reached = state.withLock { state in
      state.lastPong = .now
      state.pongs += 1
      let pongs = state.pongs
      defer { state.pongWaiters.removeAll { $0.count <= pongs } }
      return state.pongWaiters.filter { $0.count <= pongs }.map(\.continuation)
    }
    for waiter in reached { waiter.resume(returning: true) }
  }

  /// Waits until the client answered `count` pings in all; false if the connection closes first.
  func waitForPongs(_ count: Int) async -> Bool {
    await withCheckedContinuation { continuation in
      let answer = state.withLock { state -> Bool? in
        if state.pongs >= count { return true }
        if state.closed { return false }
        state.pongWaiters.append((count, continuation))
        return nil
      }
      if let answer { continuation.resume(returning: answer) }
    }
  }

  var isClosed: Bool { state.withLock { $0.closed } }

  /// Queues frames; they are written in order, never interleaved with another packet's.
  func send(_ frames: [EngineIOFrame]) {
    writer.yield(SocketIOServerPacket(frames: frames))
  }

  /// Queues an encoded packet; its frames are written in order, never interleaved with
  /// another packet's.
  func send(_ packet: SocketIOServerPacket) {
    writer.yield(packet)
  }

  /// Writes what is queued, then ends the connection.
  func finishWriting() {
    writer.finish()
  }

  func socket(_ namespace: String) -> SocketIOServerSocket? {
    state.withLock { $0.sockets[namespace] }
  }

  func add(_ socket: SocketIOServerSocket) {
    state.withLock { $0.sockets[socket.namespace] = socket }
  }

  func remove(_ namespace: String) -> SocketIOServerSocket? {
    let socket = state.withLock { $0.sockets.removeValue(forKey: namespace) }
    socket?.finish()
    return socket
  }

  func registerAck(_ continuation: CheckedContinuation<[JSONValue], any Error>) -> Int? {
    state.withLock { state in
      guard !state.closed else { return nil }
      let id = state.nextAckID
      state.nextAckID += 1
      state.pendingAcks[id] = continuation
      return id
    }
  }

  func resolveAck(_ id: Int, _ arguments: [JSONValue]) {
    state.withLock { $0.pendingAcks.removeValue(forKey: id) }?.resume(returning: arguments)
  }

  func failAck(_ id: Int, _ error: SocketIOError) {
    state.withLock { $0.pendingAcks.removeValue(forKey: id) }?.resume(throwing: error)
  }

  /// Marks the session closed; fails pending acks; returns the sockets it had.
  func close() -> [SocketIOServerSocket] {
    let (sockets, acks, pongWaiters) = state.withLock { state in
      state.closed = true
      defer {
        state.sockets = [:]
        state.pendingAcks = [:]
        state.pongWaiters = []
      }
      return (
        Array(state.sockets.values), Array(state.pendingAcks.values),
        state.pongWaiters.map(\.continuation)
      )
    }
    writer.finish()
    for ack in acks { ack.resume(throwing: SocketIOError(.notConnected, "the client left")) }
    for waiter in pongWaiters { waiter.resume(returning: false) }
    for socket in sockets { socket.finish() }
    return sockets
  }
}
