import Hummingbird
import Logging
import SocketIO
import SocketIOServer
import Testing

private func isConnected(_ status: SocketIOStatus) -> Bool {
  if case .connected = status { return true }
  return false
}

private func isFailed(_ status: SocketIOStatus) -> Bool {
  if case .failed = status { return true }
  return false
}

private actor Flag {
  private(set) var value: Bool
  init(_ value: Bool) { self.value = value }
  func set(_ newValue: Bool) { value = newValue }
}

/// A client that stopped for good (refused, disconnected by the server, given up) starts
/// afresh on `connect()`. Real loopback server; every wait is bounded.
@Suite("Socket.IO client: connect again after stopping")
struct RestartTests {
  @Test("refused (CONNECT_ERROR), then connect() again: connected")
  func afterRefusal() async throws {
    let refusing = Flag(true)
    let loopback = try await LoopbackServer.start { _ in
      if await refusing.value { throw SocketIOConnectionRefusal("not yet") }
    }
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(await statuses.wait { $0.contains(.disconnected(.connectRefused("not yet"))) })
    await client.waitUntilStopped()
    #expect(await !client.isStarted)

    await refusing.set(false)
    await client.connect()
    #expect(await client.isStarted)
    #expect(await statuses.wait { $0.contains(where: isConnected) })
    await client.disconnect()
    #expect(await !client.isStarted)
    await loopback.stop()
  }

  @Test("disconnected by the server, then connect() again: connected, events and emits flow")
  func afterServerDisconnect() async throws {
    let loopback = try await LoopbackServer.start()
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    let events = Recorder<SocketIOEvent>()
    events.record(client.events)
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })
    #expect(await loopback.sockets.wait { $0.count == 1 })
    let first = try #require(await loopback.sockets.items.first)
    first.disconnect()
    #expect(await statuses.wait { $0.contains(.disconnected(.serverDisconnect)) })
    await client.waitUntilStopped()
    #expect(await !client.isStarted)

    await client.connect()
    #expect(await statuses.wait { $0.filter(isConnected).count == 2 })
    #expect(await loopback.sockets.wait { $0.contains { $0.id != first.id } })
    let second = try #require(await loopback.sockets.items.first { $0.id != first.id })
    second.emit("again", ["hello"])
    #expect(await events.wait { $0.contains { $0.name == "again" } })
    try await client.emit("from-client")
    await client.disconnect()
    await loopback.stop()
  }

  @Test("given up after the failure limit, then connect() again: a new failure count, connected")
  func afterGivingUp() async throws {
    // A port nobody listens on: a loopback server's, once stopped.
    let probe = try await LoopbackServer.start()
    let port = probe.port
    await probe.stop()
    let slept = Recorder<Duration>()
    var configuration = testConfiguration("http://127.0.0.1:\(port)")
    configuration.reconnection.failureLimit = 3
    configuration.sleep = { duration in await slept.append(duration) }
    let client = SocketIOClient(configuration: configuration)
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isFailed) })
    await client.waitUntilStopped()
    #expect(await !client.isStarted)
    #expect(await slept.items == [.seconds(1), .seconds(2)])

    // Nothing listens yet: the new run counts its failures from one again.
    await client.connect()
    #expect(await statuses.wait { $0.filter(isFailed).count == 2 })
    #expect(await slept.items == [.seconds(1), .seconds(2), .seconds(1), .seconds(2)])
    await client.waitUntilStopped()
    #expect(await !client.isStarted)

    let server = try await LoopbackServer.start(port: port)
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })
    await client.disconnect()
    await server.stop()
  }
}
