import Foundation
import LIVAProtocol
import SocketIO
import SocketIOServer
import Testing

private func isConnected(_ status: SocketIOStatus) -> Bool {
  if case .connected = status { return true }
  return false
}

/// Swift client ↔ python-socketio AsyncServer (the production backend's library).
@Suite("Interop: Swift client with python-socketio server", .serialized, .timeLimit(.minutes(2)))
struct SwiftClientPythonServerTests {
  private func configuration(port: Int, auth: JSONValue = ["token": "secret"])
    -> SocketIOClientConfiguration
  {
    let query = LIVAConnectionQuery(userID: "u 1", agentID: "a2", userResolution: "512")
    var configuration = SocketIOClientConfiguration(
      url: "http://127.0.0.1:\(port)", query: query.items, auth: auth)
    configuration.sleep = { _ in }
    return configuration
  }

  @Test(
    "python-socketio (aiohttp) answers the WebSocket ping after each emit: confirmed, nothing sent twice"
  )
  func emitsAreConfirmed() async throws {
    let (peer, port) = try await PythonPeer.startServer()
    defer { peer.stop() }
    var configuration = configuration(port: port)
    // Generous: the subject is that pongs come, and a loaded machine stalls for seconds.
    configuration.livenessTimeout = .seconds(30)
    let client = SocketIOClient(configuration: configuration)
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    let events = Recorder<SocketIOEvent>()
    events.record(client.events)
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })
    for round in 1...3 {
      try await client.emit("ping-me", [.number(Double(round))])
      #expect(await client.waitUntilConfirmed(), "round \(round)")
    }
    #expect(await events.wait { $0.filter { $0.name == "pong-you" }.count == 3 })
    #expect(await client.emitsResent == 0)
    let seen = await statuses.items
    #expect(seen.filter(isConnected).count == 1, "\(seen)")
    await client.disconnect()
  }

  @Test("handshake, early events, acks, binary, LIVA events, pings, server disconnect")
  func scenarios() async throws {
    let (peer, port) = try await PythonPeer.startServer(pingInterval: 0.1, pingTimeout: 30)
    defer { peer.stop() }
    let client = SocketIOClient(configuration: configuration(port: port))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    let events = Recorder<SocketIOEvent>()
    let (forwarded, forward) = AsyncStream<SocketIOEvent>.makeStream()
    events.record(forwarded)
    Task {
      for await event in client.events {
        if event.name == "question" {
          await event.ack(["answer", .binary([42])] + event.arguments)
        }
        forward.yield(event)
      }
    }
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })

    // python-socketio sends these before its CONNECT ack; none may be lost.
    #expect(await events.wait { $0.filter { $0.name == "welcome" }.count == 2 })
    #expect(
      await events.items.filter { $0.name == "welcome" }.map(\.arguments)
        == [["first"], ["second", .binary([9, 9])]])

    let who = try await client.emitWithAck("whoami", timeout: .seconds(10))
    #expect(
      who == [
        [
          "query": [
            "user_id": "u 1", "agent_id": "a2", "instance_id": "default", "userResolution": "512",
          ],
          "auth": ["token": "secret"],
        ]
      ])

    let arguments: [JSONValue] = [
      1, .binary([1, 2, 3]), ["nested": [.binary([]), .binary([4, 5])], "text": "a-b"],
    ]
    #expect(try await client.emitWithAck("echo", arguments, timeout: .seconds(10)) == arguments)

    try await client.emit("ping-me", [.binary(Array(0...255))])
    #expect(await events.wait { $0.contains { $0.name == "pong-you" } })
    #expect(
      await events.items.first { $0.name == "pong-you" }?.arguments == [.binary(Array(0...255))])

    try await client.emit("ask-me")
    #expect(await events.wait { $0.contains { $0.name == "answer-was" } })
    #expect(
      await events.items.first { $0.name == "answer-was" }?.arguments
        == ["answer", .binary([42]), 7])

    // LIVA events, images as base64 and as binary attachments, decoded by LIVAProtocol.
    for mode in ["base64", "binary"] {
      let before = await events.items.count
      try await client.emit("send-liva", [.string(mode)])
      #expect(await events.wait { $0.count >= before + 4 })
      let liva = await events.items.dropFirst(before).prefix(4)
      #expect(
        liva.map(\.name) == [
          "receive_audio", "receive_frame_images_batch", "chunk_images_ready", "audio_end",
        ])
      var decoded: [ServerEvent] = []
      for event in liva {
        if let value = try ServerEvent.decode(
          name: event.name, arguments: event.arguments)
        {
          decoded.append(value)
        }
      }
      guard decoded.count == 4, case .audioChunk(let chunk) = decoded[0],
        case .frameImagesBatch(let batch) = decoded[1]
      else {
        Issue.record("\(mode): unexpected events \(decoded)")
        continue
      }
      #expect(chunk.chunkIndex == 0 && chunk.audio.prefix(2) == Data([0xFF, 0xFB]), "\(mode)")
      #expect(chunk.animations.first?.sections.first?.count == 3)
      #expect(
        batch.frames.map { $0.image.map { Array($0.data) } } == (0..<3).map { peerImageBytes($0) },
        "\(mode)")
      #expect(
        batch.frames.map(\.overlayId)
          == (0..<3).map { "talking_1_s_talking_1_e/\($0)/J1_X2_M\($0).webp" })
      #expect(decoded[2] == .chunkImagesReady(chunkIndex: 0, totalImagesSent: 3))
      #expect(decoded[3] == .audioEnd)
    }

    // A client event with binary audio, built by LIVAProtocol.
    let audio = ClientEvent.userFullAudio(
      audio: Data([0xFF, 0xFB] + [UInt8](repeating: 0, count: 100)), encoding: .binary,
      userID: "u 1",
      agentID: "a2", appName: "interop", userResolution: "512", timestamp: "2025-01-01 00:00:00.000"
    )
    let audioAnswer = try await client.emitWithAck(
      audio.name, [audio.payload], timeout: .seconds(10))
    #expect(audioAnswer == [["bytes": 102, "user_id": "u 1"]])

    // Pings every 100 ms are answered and the connection stays up.
    #expect(await client.waitForPings(3))
    #expect(await statuses.items.filter(isConnected).count == 1)

    try await client.emit("kick-me")
    #expect(await statuses.wait { $0.contains(.disconnected(.serverDisconnect)) })
    #expect(await client.status == .disconnected(.serverDisconnect))
  }

  @Test("a refused connection is reported with the server's message")
  func refused() async throws {
    let (peer, port) = try await PythonPeer.startServer()
    defer { peer.stop() }
    let client = SocketIOClient(configuration: configuration(port: port, auth: ["token": "bad"]))
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    let refused = await statuses.wait {
      $0.contains(.disconnected(.connectRefused("not authorized")))
    }
    let seen = await statuses.items
    #expect(refused, "\(seen)")
  }

  @Test("a transport dropped by the server is reconnected")
  func reconnect() async throws {
    let (peer, port) = try await PythonPeer.startServer()
    defer { peer.stop() }
    let slept = Recorder<Duration>()
    var configuration = configuration(port: port)
    configuration.sleep = { await slept.append($0) }
    configuration.random = { 0.5 }
    let client = SocketIOClient(configuration: configuration)
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(await statuses.wait { $0.contains(where: isConnected) })
    try await client.emit("drop-transport")
    #expect(await statuses.wait { $0.filter(isConnected).count == 2 })
    #expect(await slept.items == [.seconds(1)])
    #expect(try await client.emitWithAck("echo", ["again"], timeout: .seconds(10)) == ["again"])
    await client.disconnect()
  }
}

/// python-socketio AsyncClient ↔ Swift server: the peer runs the same scenarios from the
/// client side and prints PASS/FAIL per scenario.
@Suite("Interop: python-socketio client with Swift server", .serialized, .timeLimit(.minutes(2)))
struct PythonClientSwiftServerTests {
  static let scenarios = [
    "connect", "events before the CONNECT ack", "query and auth", "ack with binary at depth",
    "server event with binary", "server asks, client acknowledges", "LIVA events (base64)",
    "LIVA events (binary)", "user_full_audio with binary audio", "answers pings",
    "server-initiated disconnect", "reconnects after a dropped transport", "refused connection",
  ]

  @Test("the python client's scenarios all pass against the Swift server")
  func scenarios() async throws {
    let audioSeen = Recorder<Int>()
    let loopback = try await LoopbackServer.start(
      SocketIOServerConfiguration(pingInterval: .milliseconds(50), pingTimeout: .seconds(30))
    ) { socket in
      if socket.auth?["token"] == "bad" { throw SocketIOConnectionRefusal("not authorized") }
      socket.emit("welcome", ["first"])
      socket.emit("welcome", ["second", .binary([9, 9])])
      Task { await Self.serve(socket, audioSeen: audioSeen) }
    }
    let peer = try PythonPeer(["client", loopback.url])
    defer { peer.stop() }
    let finished = await peer.waitForExit(seconds: 90)
    let lines = peer.lines
    #expect(finished, "the python client did not finish: \(lines.suffix(20))")
    for scenario in Self.scenarios {
      #expect(
        lines.contains("PASS \(scenario)"),
        "\(scenario): \(lines.filter { $0.contains(scenario) || $0.contains("Error") })")
    }
    #expect(!lines.contains { $0.hasPrefix("FAIL") }, "\(lines.filter { $0.hasPrefix("FAIL") })")
    #expect(finished && peer.exitStatus == 0, "\(lines.suffix(20))")
    #expect(await audioSeen.items == [102])
    await loopback.stop()
  }

  @Test("the python client declares a Swift server that stops pinging dead")
  func pingTimeout() async throws {
    let loopback = try await LoopbackServer.start(
      SocketIOServerConfiguration(
        // Long enough for the handshake on a loaded machine (200 ms failed the connect itself
        // while other suites ran), short enough to end in about a second.
        pingInterval: .milliseconds(400), pingTimeout: .milliseconds(400), sendsPings: false))
    let peer = try PythonPeer(["client-ping-timeout", loopback.url])
    defer { peer.stop() }
    let finished = await peer.waitForExit(seconds: 30)
    let lines = peer.lines
    #expect(finished && peer.exitStatus == 0, "\(lines.suffix(10))")
    #expect(lines.contains { $0.hasPrefix("PASS ping timeout") }, "\(lines.suffix(10))")
    await loopback.stop()
  }

  static func serve(_ socket: SocketIOServerSocket, audioSeen: Recorder<Int>) async {
    for await event in socket.events {
      switch event.name {
      case "whoami":
        let query = socket.query.filter { !["EIO", "transport", "t"].contains($0.key) }
        await event.ack([
          ["query": .object(query.mapValues { .string($0) }), "auth": socket.auth ?? .null]
        ])
      case "echo":
        await event.ack(event.arguments)
      case "ping-me":
        socket.emit("pong-you", event.arguments)
      case "ask-me":
        let answer = (try? await socket.emitWithAck("question", [7], timeout: .seconds(10))) ?? []
        socket.emit("answer-was", answer)
      case "send-liva":
        for (name, payload) in livaEvents(binary: event.arguments.first == "binary") {
          socket.emit(name, [payload])
        }
      case "user_full_audio":
        let payload = event.arguments.first ?? .null
        var count = -1
        if case .binary(let data)? = payload["audio_data"] { count = data.count }
        await audioSeen.append(count)
        await event.ack([
          ["bytes": .number(Double(count)), "user_id": payload["user_id"] ?? .null]
        ])
      case "wait-for-pongs":
        let ok = await socket.waitForPongs(3)
        socket.emit("pongs-ok", [.bool(ok)])
      case "kick-me":
        socket.disconnect()
      case "drop-me":
        socket.closeTransport()
      default:
        break
      }
    }
  }

  /// The same LIVA events as the peer's `liva_events(mode)`.
  static func livaEvents(binary: Bool) -> [(String, JSONValue)] {
    func encode(_ bytes: [UInt8]) -> JSONValue {
      binary ? .binary(bytes) : .string(Data(bytes).base64EncodedString())
    }
    let plan: [JSONValue] = (0..<3).map { index in
      [
        "animation_name": "talking_1_s_talking_1_e",
        "matched_sprite_frame_number": .number(Double(index)),
        "sheet_filename": .string("J1_X2_M\(index).webp"), "sequence_index": .number(Double(index)),
        "section_index": 0, "frame_index": .number(Double(index)),
      ]
    }
    let frames: [JSONValue] = plan.enumerated().map { index, frame in
      guard case .object(var members) = frame else { return frame }
      members["image_data"] = encode(peerImageBytes(index))
      members["image_mime"] = "image/webp"
      return .object(members)
    }
    let audio: JSONValue = [
      "audio_data": encode([0xFF, 0xFB, 0x90, 0x64] + [UInt8](repeating: 0, count: 60)),
      "chunk_index": 0, "master_chunk_index": 0, "total_frame_images": 3,
      "timestamp": "2025-01-01 00:00:00.000",
      "animationFramesChunk": [
        [
          "animation_name": "talking_1_s_talking_1_e", "zone_top_left": [10, 20],
          "master_frame_play_at": 0, "mode": "talking", "sections": [.array(plan)],
        ]
      ],
    ]
    let batch: JSONValue = [
      "frames": .array(frames), "chunk_index": 0, "batch_index": 0, "batch_start_index": 0,
      "batch_size": 3, "total_batches": 1, "emission_timestamp": 1_738_000_000_000,
    ]
    return [
      ("receive_audio", audio), ("receive_frame_images_batch", batch),
      ("chunk_images_ready", ["chunk_index": 0, "total_images_sent": 3]), ("audio_end", [:]),
    ]
  }
}
