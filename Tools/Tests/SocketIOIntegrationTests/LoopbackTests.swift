import SocketIO
import SocketIOServer
import Testing

private func isConnected(_ status: SocketIOStatus) -> Bool {
  if case .connected = status { return true }
  return false
}

/// Swift client ↔ Swift server over loopback.
@Suite("Client and server over loopback", .timeLimit(.minutes(1)))
struct LoopbackTests {
  @Test("handshake, query, auth, events both ways with binary, acks both ways")
  func eventsAndAcks() async throws {
    // The server echoes: "echo" is acknowledged with its own arguments; "ping-me" is answered
    // with a "pong-you" event carrying the same arguments.
    let serverEvents = Recorder<String>()
    let loopback = try await LoopbackServer.start { socket in
      Task {
        for await event in socket.events {
          await serverEvents.append(event.name)
          switch event.name {
          case "echo": await event.ack(event.arguments)
          case "ping-me": socket.emit("pong-you", event.arguments)
          default: break
          }
        }
      }
    }
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    let events = Recorder<SocketIOEvent>()
    events.record(client.events)
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })

    let sockets = await loopback.sockets.wait { $0.count == 1 }
    #expect(sockets)
    let socket = try #require(await loopback.sockets.items.first)
    #expect(socket.query["user_id"] == "u 1")
    #expect(socket.query["agent_id"] == "a&2")
    #expect(socket.auth == ["token": "secret"])
    #expect(await client.status == .connected(sid: socket.id))

    // Client → server with an ack, binary at several depths.
    let arguments: [JSONValue] = [
      1, .binary([1, 2, 3]), ["nested": [.binary([]), .binary([4, 5])], "text": "a-b"],
    ]
    let answer = try await client.emitWithAck("echo", arguments, timeout: .seconds(5))
    #expect(answer == arguments)

    // Client → server event, server → client event with binary.
    try await client.emit("ping-me", [.binary(Array(0...255))])
    #expect(await events.wait { $0.contains { $0.name == "pong-you" } })
    let pong = await events.items.first { $0.name == "pong-you" }
    #expect(pong?.arguments == [.binary(Array(0...255))])

    #expect(await serverEvents.items == ["echo", "ping-me"])
    await client.disconnect()
    await loopback.stop()
  }

  @Test("the bytes received count everything read from the network, whole packets or not")
  func bytesReceived() async throws {
    let loopback = try await LoopbackServer.start()
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    let events = Recorder<SocketIOEvent>()
    events.record(client.events)
    #expect(client.bytesReceived == 0)
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })
    // The upgrade's answer, the open packet and the namespace CONNECT.
    let handshake = client.bytesReceived
    #expect(handshake > 100)
    #expect(await loopback.sockets.wait { $0.count == 1 })
    let socket = try #require(await loopback.sockets.items.first)
    socket.emit("big", [.binary(Array(repeating: 7, count: 1 << 20))])
    #expect(await events.wait { $0.contains { $0.name == "big" } })
    // The attachment and its frame headers, at least.
    #expect(client.bytesReceived >= handshake + (1 << 20))
    #expect(client.bytesReceived < handshake + (1 << 20) + 1000)
    await client.disconnect()
    await loopback.stop()
  }

  @Test("server asks, client acknowledges")
  func serverAck() async throws {
    let loopback = try await LoopbackServer.start()
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    Task {
      for await event in client.events where event.name == "question" {
        #expect(event.wantsAck)
        await event.ack(["answer", .binary([42])] + event.arguments)
      }
    }
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })
    #expect(await loopback.sockets.wait { $0.count == 1 })
    let socket = try #require(await loopback.sockets.items.first)
    let answer = try await socket.emitWithAck("question", [7], timeout: .seconds(5))
    #expect(answer == ["answer", .binary([42]), 7])
    await client.disconnect()
    #expect(await statuses.wait { $0.contains(.disconnected(.clientDisconnect)) })
    await loopback.stop()
  }

  @Test("events emitted before the CONNECT ack are delivered after connected, in order")
  func eventsBeforeConnectAck() async throws {
    let loopback = try await LoopbackServer.start { socket in
      socket.join("room-x")
      socket.emit("welcome", ["first"])
      socket.emit("welcome", ["second", .binary([9, 9])])
    }
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    let events = Recorder<SocketIOEvent>()
    events.record(client.events)
    await client.connect()
    #expect(await events.wait { $0.count >= 2 })
    let received = await events.items
    #expect(received.map(\.arguments) == [["first"], ["second", .binary([9, 9])]])
    #expect(isConnected(await client.status))
    // Kept until the CONNECT ack, they carry the sid it gave.
    guard case .connected(let sid) = await client.status else {
      Issue.record("not connected: \(await client.status)")
      return
    }
    #expect(received.allSatisfy { $0.sid == sid } && !sid.isEmpty)
    // The room joined in the connect handler works.
    loopback.server.emit("to-room", ["hi"], toRoom: "room-x")
    #expect(await events.wait { $0.contains { $0.name == "to-room" } })
    await client.disconnect()
    await loopback.stop()
  }

  @Test("a packet prepared once reaches several sockets, several times, in order with emits")
  func preparedPacket() async throws {
    let loopback = try await LoopbackServer.start()
    // Large enough to span many TCP reads (the client parses it in the frame's buffer).
    let big = String(repeating: "0123456789abcdef", count: 20_000)
    let packet = SocketIOServerPacket(
      .event("prepared", [["text": .string(big), "nested": [.binary([1, 2, 3]), .binary([4])]]]))
    var recorders: [Recorder<SocketIOEvent>] = []
    var clients: [SocketIOClient] = []
    for _ in 0..<2 {
      let client = SocketIOClient(configuration: testConfiguration(loopback.url))
      let events = Recorder<SocketIOEvent>()
      events.record(client.events)
      await client.connect()
      clients.append(client)
      recorders.append(events)
    }
    #expect(await loopback.sockets.wait { $0.count == 2 })
    for socket in await loopback.sockets.items {
      socket.send(packet)
      socket.emit("between", [1])
      socket.send(packet)
    }
    for events in recorders {
      #expect(await events.wait { $0.count >= 3 })
      let received = await events.items
      #expect(received.map(\.name) == ["prepared", "between", "prepared"])
      for event in [received[0], received[2]] {
        #expect(event.arguments.first?["text"]?.stringValue == big)
        #expect(event.arguments.first?["nested"] == [.binary([1, 2, 3]), .binary([4])])
      }
    }
    for client in clients { await client.disconnect() }
    await loopback.stop()
  }

  @Test("the client answers pings; the server keeps it")
  func pingPong() async throws {
    // The timeout is long on purpose: this test is about pongs being answered, and a loaded
    // machine can stall for seconds; a short one reads that stall as a dead peer.
    let loopback = try await LoopbackServer.start(
      SocketIOServerConfiguration(pingInterval: .milliseconds(50), pingTimeout: .seconds(30)))
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })
    #expect(await loopback.sockets.wait { $0.count == 1 })
    let socket = try #require(await loopback.sockets.items.first)
    #expect(await socket.waitForPongs(5))
    let seen = await statuses.items
    #expect(seen.filter { if case .disconnected = $0 { true } else { false } }.isEmpty, "\(seen)")
    #expect(isConnected(await client.status))
    await client.disconnect()
    await loopback.stop()
  }

  @Test(
    "no ping within pingInterval + pingTimeout: the client declares the server dead and reconnects")
  func pingTimeout() async throws {
    let loopback = try await LoopbackServer.start(
      SocketIOServerConfiguration(
        pingInterval: .milliseconds(50), pingTimeout: .milliseconds(50), sendsPings: false))
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(await statuses.wait { $0.contains(.disconnected(.pingTimeout)) })
    #expect(await statuses.wait { $0.contains(.reconnecting(attempt: 1, delay: .seconds(1))) })
    #expect(await statuses.wait { $0.filter(isConnected).count >= 2 })
    await client.disconnect()
    await loopback.stop()
  }

  @Test("a server-initiated disconnect is reported and not retried")
  func serverDisconnect() async throws {
    let loopback = try await LoopbackServer.start()
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })
    #expect(await loopback.sockets.wait { $0.count == 1 })
    await loopback.sockets.items.first?.disconnect()
    #expect(await statuses.wait { $0.contains(.disconnected(.serverDisconnect)) })
    #expect(await client.status == .disconnected(.serverDisconnect))
    do {
      try await client.emit("late")
      Issue.record("emit after the run loop ended must throw")
    } catch {
      #expect(error.code == .notConnected)
    }
    await loopback.stop()
  }

  @Test("a dropped transport is reconnected with the backoff schedule")
  func reconnectAfterDrop() async throws {
    let loopback = try await LoopbackServer.start()
    let slept = Recorder<Duration>()
    var configuration = testConfiguration(loopback.url)
    configuration.sleep = { duration in await slept.append(duration) }
    let client = SocketIOClient(configuration: configuration)
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    let events = Recorder<SocketIOEvent>()
    events.record(client.events)
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })
    #expect(await loopback.sockets.wait { $0.count == 1 })
    let first = try #require(await loopback.sockets.items.first)
    first.emit("before", ["drop"])
    #expect(await events.wait { $0.contains { $0.name == "before" } })
    first.closeTransport()
    #expect(await statuses.wait { $0.contains(.disconnected(.transportClose)) })
    #expect(await statuses.wait { $0.filter(isConnected).count == 2 })
    #expect(await slept.items == [.seconds(1)])
    // Emits buffered while reconnecting reach the new connection.
    #expect(await loopback.sockets.wait { $0.contains { $0.id != first.id } })
    let second = try #require(await loopback.sockets.items.first { $0.id != first.id })
    second.emit("after", ["reconnect"])
    #expect(await events.wait { $0.contains { $0.name == "after" } })
    // Each event names the connection it came on: the sid of its CONNECT ack.
    let sids = await statuses.items.compactMap { status -> String? in
      if case .connected(let sid) = status { sid } else { nil }
    }
    let received = await events.items
    #expect(sids.count == 2 && sids[0] != sids[1])
    #expect(received.first { $0.name == "before" }?.sid == sids.first)
    #expect(received.first { $0.name == "after" }?.sid == sids.last)
    await client.disconnect()
    await loopback.stop()
  }

  @Test("an unreachable server: 1, 2, 4, 8, 16, 30… s, then failed after 10 attempts")
  func reconnectSchedule() async throws {
    let slept = Recorder<Duration>()
    var configuration = testConfiguration("http://127.0.0.1:1")
    configuration.sleep = { duration in await slept.append(duration) }
    let client = SocketIOClient(configuration: configuration)
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(
      await statuses.wait {
        $0.contains {
          if case .failed(let error) = $0 { error.code == .reconnectFailed } else { false }
        }
      })
    #expect(
      await slept.items == [1, 2, 4, 8, 16, 30, 30, 30, 30].map { Duration.seconds($0) })
    let disconnects = await statuses.items.filter {
      if case .disconnected(.transportError) = $0 { true } else { false }
    }
    #expect(disconnects.count == 10)
  }

  @Test("disconnect() while waiting to reconnect stops at once")
  func disconnectDuringBackoff() async throws {
    var configuration = testConfiguration("http://127.0.0.1:1")
    configuration.sleep = { _ in try await Task.sleep(for: .seconds(3_600)) }
    let client = SocketIOClient(configuration: configuration)
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(
      await statuses.wait {
        $0.contains { if case .reconnecting = $0 { true } else { false } }
      })
    await client.disconnect()
    #expect(await client.status == .disconnected(.clientDisconnect))
    do {
      try await client.emit("late")
      Issue.record("emit after disconnect() must throw")
    } catch {
      #expect(error.code == .notConnected)
    }
  }

  @Test("acknowledgement timeout")
  func ackTimeout() async throws {
    let loopback = try await LoopbackServer.start()
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    await client.connect()
    do {
      _ = try await client.emitWithAck("never-acked", [], timeout: .milliseconds(100))
      Issue.record("expected a timeout")
    } catch {
      #expect((error as? SocketIOError)?.code == .ackTimeout)
    }
    await client.disconnect()
    await loopback.stop()
  }

  @Test("a refused namespace connection is reported and not retried")
  func connectRefused() async throws {
    let loopback = try await LoopbackServer.start { _ in
      throw SocketIOConnectionRefusal("not authorized")
    }
    let client = SocketIOClient(configuration: testConfiguration(loopback.url))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(await statuses.wait { $0.contains(.disconnected(.connectRefused("not authorized"))) })
    #expect(await client.status == .disconnected(.connectRefused("not authorized")))
    await loopback.stop()
  }
}

@Suite("Reconnection policy")
struct ReconnectionPolicyTests {
  static let cases: [(Int, Double, Double)] = [
    (1, 0.5, 1), (2, 0.5, 2), (3, 0.5, 4), (4, 0.5, 8), (5, 0.5, 16), (6, 0.5, 30), (50, 0.5, 30),
    (1, 0, 0.8), (1, 1, 1.2), (5, 0, 12.8), (6, 0, 24), (6, 1, 30), (0, 0.5, 1),
  ]

  @Test("delays with jitter and cap", arguments: cases)
  func delay(attempt: Int, random: Double, seconds: Double) {
    let delay = ReconnectionPolicy().delay(forAttempt: attempt, random: random)
    let (whole, fraction) = delay.components
    let actual = Double(whole) + Double(fraction) / 1e18
    #expect(abs(actual - seconds) < 1e-6, "attempt \(attempt): \(actual)")
  }

  @Test("the engine URL carries EIO=4, the transport and the encoded query")
  func engineURL() {
    let configuration = SocketIOClientConfiguration(
      url: "https://liva.example/", query: [("user_id", "a b"), ("userResolution", "512")])
    #expect(
      configuration.engineURL
        == "wss://liva.example/socket.io/?EIO=4&transport=websocket&user_id=a%20b&userResolution=512"
    )
  }
}
