import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import LIVAServer
import LIVATestSupport
import SocketIO
import Testing

@testable import LIVA

/// Reconnecting after the connection ended for good: the reference backend
/// over real loopback Socket.IO; every wait is bounded.
@Suite("Reconnect after giving up", .serialized)
struct ReconnectTests {
  /// The product's policy (10 failures, then an error), with waits short enough for a test.
  static func shortWaits(_ configuration: inout LIVAConfiguration) {
    configuration.reconnection.initialDelay = .milliseconds(1)
    configuration.reconnection.maximumDelay = .milliseconds(2)
  }

  @Test("after a server DISCONNECT (an error), connect() connects again")
  func afterServerDisconnect() async throws {
    let server = try await TestBackend.start()
    let client = try makeClient(
      port: server.port, cache: "liva-reconnect", configure: Self.shortWaits)
    await client.connect()
    try #require(
      await until(client.changes) { client.state == .ready && client.pendingDownloads == 0 })
    let first = try #require(server.backend.socketServer.connectedSockets.first)
    first.disconnect()
    try #require(await until(client.changes) { client.state.isError })

    await client.connect()
    try #require(await until(client.changes) { client.state == .ready })
    // The server adds a socket before it acknowledges the namespace: ready means it is there.
    #expect(server.backend.socketServer.connectedSockets.contains { $0.id != first.id })
    // The new connection carries messages: the backend counted one and answers it with speech.
    try await client.sendMessage("Hello there")
    #expect(await until(client.changes) { client.metrics.chunksReceived > 0 })
    #expect(server.backend.messageCount == 1)
    await client.disconnect()
    #expect(client.state == .idle)
    await server.stop()
  }

  @Test("after 10 failures in a row (an error), connect() starts afresh and connects")
  func afterGivingUp() async throws {
    // A port nobody listens on (yet): the backend's, once stopped.
    let probe = try await TestBackend.start()
    let port = probe.port
    await probe.stop()
    let client = try makeClient(port: port, cache: "liva-reconnect", configure: Self.shortWaits)
    let states = client.states
    let recorded = Task {
      var seen: [LIVAState] = []
      for await state in states {
        seen.append(state)
        if state.isError { break }
      }
      return seen
    }
    await client.connect()
    try #require(await until(client.changes) { client.state.isError })
    let seen = await recorded.value
    #expect(seen.first == .idle)
    #expect(seen.dropFirst().dropLast().allSatisfy { $0 == .connecting })
    if case .error(let error) = seen.last {
      #expect(error.message.contains("10 consecutive"), "\(error)")
    } else {
      Issue.record("the last state is not an error: \(String(describing: seen.last))")
    }

    let server = try await TestBackend.start(port: port)
    await client.connect()
    try #require(await until(client.changes) { client.state == .ready })
    #expect(server.backend.socketServer.connectedSockets.count == 1)
    await client.disconnect()
    await server.stop()
  }

  @Test("connect() while connected does nothing: one socket")
  func connectTwice() async throws {
    let server = try await TestBackend.start()
    let client = try makeClient(
      port: server.port, cache: "liva-reconnect", configure: Self.shortWaits)
    await client.connect()
    try #require(await until(client.changes) { client.state == .ready })
    let socket = try #require(client.protectedState.withLock { $0.socket })
    await client.connect()
    // connect() makes its socket before it returns: the same one means no second connection.
    #expect(client.protectedState.withLock { $0.socket } === socket)
    #expect(server.backend.socketServer.connectedSockets.count == 1)
    await client.disconnect()
    await server.stop()
  }
}
