import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import LIVAServer
import LIVATestSupport
import NIOSSL
import SocketIO
import Testing

@testable import LIVA

/// A truthful connection state: `speaking` only while connected, `ready`
/// never over `speaking`. The decision is ``ClientStateMachine``, table-tested here; the client
/// tests run it against the reference backend (network in real time, bounded waits; the
/// display on a virtual clock).
@Suite("Client state", .serialized)
struct ClientStateTests {
  typealias Machine = ClientStateMachine

  @Test("the socket gets the configuration's server, query, reconnection, auth and TLS")
  func socketConfiguration() throws {
    var configuration = LIVAConfiguration(
      serverURL: "https://avatars.example:8443", userID: "u 1", agentID: "7",
      cacheRoot: FileManager.default.temporaryDirectory.appendingPathComponent(
        "liva-socket-configuration-\(UUID().uuidString)"))
    configuration.instanceID = "i"
    configuration.resolution = 512
    configuration.reconnection.failureLimit = 3
    configuration.auth = .object(["token": .string("t")])
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.minimumTLSVersion = .tlsv13
    tls.certificateVerification = .noHostnameVerification
    configuration.tlsConfiguration = tls
    let client = try LIVAClient(
      configuration: configuration, displayLink: VirtualDisplayLink(),
      audio: HeadlessAudioOutput(), surface: CallbackSurface(retaining: 0) { _ in })
    let socket = client.socketConfiguration
    #expect(socket.url == "https://avatars.example:8443")
    #expect(
      socket.query.map { "\($0.name)=\($0.value)" }
        == LIVAConnectionQuery(
          userID: "u 1", agentID: "7", instanceID: "i", userResolution: "512"
        ).items.map { "\($0.name)=\($0.value)" })
    #expect(socket.reconnection.failureLimit == 3)
    #expect(socket.auth == .object(["token": .string("t")]))
    #expect(socket.tlsConfiguration?.minimumTLSVersion == .tlsv13)
    #expect(socket.tlsConfiguration?.certificateVerification == .noHostnameVerification)
    // Without one, the platform's trust roots (the socket's own default).
    configuration.tlsConfiguration = nil
    let plain = try LIVAClient(
      configuration: configuration, displayLink: VirtualDisplayLink(),
      audio: HeadlessAudioOutput(), surface: CallbackSurface(retaining: 0) { _ in })
    #expect(plain.socketConfiguration.tlsConfiguration == nil)
  }
  static let refused = LIVAClientError(.connection, "the server refused the connection: no")
  static let closed = LIVAClientError(.connection, "the server closed the connection")
  static let gaveUp = LIVAClientError(
    .connection, "reconnection gave up: reconnectFailed: 10 consecutive connection failures")

  /// Inputs from a fresh machine, and the state after each.
  static let sequences: [(String, [Machine.Input], [LIVAState])] = [
    (
      "connect, connected, idle arrives, speaks, ends",
      [
        .connectRequested, .status(.connecting), .status(.connected(sid: "a")),
        .idleAvailable(true), .speakingStarted, .speakingEnded,
      ],
      [.connecting, .connecting, .connected, .ready, .speaking, .ready]
    ),
    (
      "speaking while connecting stays connecting; reconnected while speaking is speaking",
      [
        .connectRequested, .status(.connected(sid: "a")), .idleAvailable(true),
        .status(.disconnected(.transportClose)), .speakingStarted,
        .status(.reconnecting(attempt: 1, delay: .seconds(1))), .status(.connecting),
        .status(.connected(sid: "b")), .idleAvailable(true), .speakingEnded,
      ],
      [
        .connecting, .connected, .ready, .connecting, .connecting, .connecting, .connecting,
        .speaking, .speaking, .ready,
      ]
    ),
    (
      "speaking over an error stays the error; its end too",
      [
        .connectRequested, .status(.connected(sid: "a")), .idleAvailable(true),
        .status(.disconnected(.serverDisconnect)), .speakingStarted, .speakingEnded,
      ],
      [.connecting, .connected, .ready, .error(closed), .error(closed), .error(closed)]
    ),
    (
      "speaking before any connection stays idle",
      [.idleAvailable(true), .speakingStarted, .speakingEnded],
      [.idle, .idle, .idle]
    ),
    (
      "a speech that began while connected and goes on after disconnect() is idle",
      [
        .connectRequested, .status(.connected(sid: "a")), .idleAvailable(true),
        .speakingStarted, .disconnectRequested, .status(.disconnected(.clientDisconnect)),
        .speakingEnded,
      ],
      [.connecting, .connected, .ready, .speaking, .idle, .idle, .idle]
    ),
    (
      "refused, then a fresh connect",
      [
        .connectRequested, .status(.connecting), .status(.disconnected(.connectRefused("no"))),
        .connectRequested, .status(.connected(sid: "b")),
      ],
      [.connecting, .connecting, .error(refused), .connecting, .connected]
    ),
    (
      "given up after the failure limit",
      [
        .connectRequested, .status(.disconnected(.transportError("refused"))),
        .status(
          .failed(SocketIOError(.reconnectFailed, "10 consecutive connection failures"))),
      ],
      [.connecting, .connecting, .error(gaveUp)]
    ),
    (
      "a failure while speaking, then reconnected while still speaking",
      [
        .connectRequested, .status(.connected(sid: "a")), .speakingStarted,
        .status(
          .failed(SocketIOError(.reconnectFailed, "10 consecutive connection failures"))),
        .connectRequested, .status(.connected(sid: "b")), .speakingEnded,
      ],
      [.connecting, .connected, .speaking, .error(gaveUp), .connecting, .speaking, .connected]
    ),
    (
      "the idle animation arriving while speaking leaves speaking",
      [
        .connectRequested, .status(.connected(sid: "a")), .speakingStarted,
        .idleAvailable(true), .speakingEnded,
      ],
      [.connecting, .connected, .speaking, .speaking, .ready]
    ),
  ]

  @Test("state after each input", arguments: sequences.indices)
  func table(index: Int) {
    let (name, inputs, expected) = Self.sequences[index]
    var machine = Machine()
    var states: [LIVAState] = []
    for input in inputs {
      let before = machine.state
      let changed = machine.apply(input)
      states.append(machine.state)
      // The change is reported exactly when the state moved.
      #expect(changed == (machine.state == before ? nil : machine.state), "\(name): \(input)")
    }
    #expect(states == expected, "\(name)")
  }

  @Test("speaking only while connected: every reachable state over every input", arguments: 0..<64)
  func speakingOnlyConnected(seed: Int) {
    let inputs: [Machine.Input] = [
      .connectRequested, .disconnectRequested, .status(.connecting),
      .status(.connected(sid: "s")), .status(.disconnected(.transportClose)),
      .status(.disconnected(.serverDisconnect)), .status(.disconnected(.clientDisconnect)),
      .status(.failed(SocketIOError(.reconnectFailed, "x"))), .idleAvailable(true),
      .idleAvailable(false), .speakingStarted, .speakingEnded,
    ]
    var random = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 | 1
    var machine = Machine()
    for _ in 0..<200 {
      random ^= random << 13
      random ^= random >> 7
      random ^= random << 17
      _ = machine.apply(inputs[Int(random % UInt64(inputs.count))])
      switch machine.state {
      case .speaking: #expect(machine.link == .connected && machine.speaking)
      case .ready: #expect(machine.link == .connected && machine.idleAvailable)
      case .connected: #expect(machine.link == .connected)
      case .idle, .connecting, .error: #expect(machine.link != .connected)
      }
    }
  }

  // MARK: - The client

  /// Reconnecting after `delay` every time (no backoff, no jitter), giving up on an answer
  /// after `answerTimeout`.
  static func fixedDelay(_ delay: Duration, answerTimeout: Double = 30)
    -> (inout LIVAConfiguration) -> Void
  {
    { configuration in
      configuration.reconnection.initialDelay = delay
      configuration.reconnection.maximumDelay = delay
      configuration.reconnection.jitter = 0
      configuration.answerTimeout = answerTimeout
    }
  }

  /// Connects, waits until ready, sends a message and waits until all of it was received.
  func connectAndReceive(
    _ client: LIVAClient, link: VirtualDisplayLink, server: TestBackend
  ) async throws {
    await client.connect()
    try #require(
      await until(client.changes) {
        client.state == .ready && client.pendingDownloads == 0
          && client.player.readyAnimations.count >= 6 && client.player.isPreloadIdle
      })
    link.tick(at: 0)
    try await client.sendMessage("Hello there, nice to meet you.")
    try #require(
      await until(client.changes) {
        client.player.metrics.audioEndsReceived >= 1 && client.player.isIngestIdle
      })
  }

  @Test("speech that starts while the connection is down reads as connecting, not speaking")
  func speakingWhileConnecting() async throws {
    let server = try await TestBackend.start()
    // The socket waits an hour before reconnecting: the drop lasts the whole test.
    let link = VirtualDisplayLink()
    let client = try makeClient(
      port: server.port, cache: "liva-state", link: link,
      configure: Self.fixedDelay(.seconds(3_600)))
    let events = client.events
    try await connectAndReceive(client, link: link, server: server)
    server.backend.socketServer.connectedSockets.first?.closeTransport()
    try #require(await until(client.changes) { client.state == .connecting })

    var seen: [LIVAState] = []
    var now = 0.0
    while now < 8 {
      link.run(from: now, to: now + 0.1)
      now += 0.1
      seen.append(client.state)
    }
    #expect(client.player.metrics.engine.chunksStarted > 0)
    #expect(seen.allSatisfy { $0 == .connecting }, "\(Set(seen.map { "\($0)" }))")
    await client.disconnect()
    var sawStart = false
    for await event in events {
      if case .speakingStarted = event { sawStart = true }
      if case .stateChanged(.idle) = event { break }
    }
    #expect(sawStart)
    await server.stop()
  }

  @Test("reconnected while speaking: speaking, not ready, until the speech ends")
  func reconnectedWhileSpeaking() async throws {
    let server = try await TestBackend.start()
    let link = VirtualDisplayLink()
    let client = try makeClient(
      port: server.port, cache: "liva-state", link: link,
      configure: Self.fixedDelay(.milliseconds(1)))
    try await connectAndReceive(client, link: link, server: server)
    link.run(from: 0, to: 1.5)
    try #require(client.state == .speaking)
    let first = try #require(server.backend.socketServer.connectedSockets.first)
    first.closeTransport()
    // Reconnected, and the manifest of the new connection handled (nothing left to download).
    try #require(
      await until(client.changes) {
        server.backend.socketServer.connectedSockets.contains { $0.id != first.id }
          && client.pendingDownloads == 0 && client.state != .connecting
      })
    #expect(client.state == .speaking)
    link.run(from: 1.5, to: 10)
    #expect(client.player.mode == .idle)
    #expect(client.state == .ready)
    await client.disconnect()
    await server.stop()
  }

  // A message the backend never answered was matched to the next message's speech
  // (and every later one shifted by one), with nothing said.
  @Test(
    "a message never answered is given up after the answer timeout, and the next speech carries its own text"
  )
  func unansweredMessage() async throws {
    let server = try await TestBackend.start { $0.faults.unansweredMessages = 1 }
    let link = VirtualDisplayLink()
    let client = try makeClient(
      port: server.port, cache: "liva-state", link: link,
      configure: Self.fixedDelay(.seconds(3_600), answerTimeout: 5))
    let events = client.events
    await client.connect()
    try #require(
      await until(client.changes) {
        client.state == .ready && client.pendingDownloads == 0 && client.player.isPreloadIdle
      })
    link.tick(at: 0)
    // The backend's first message (the socket keeps order): never answered.
    try await client.sendMessage("lost")
    link.run(from: 0, to: 6)  // virtual time: past the 5 s the text waits
    try await client.sendMessage("Hello there, nice to meet you.")
    try #require(
      await until(client.changes) {
        client.player.metrics.audioEndsReceived >= 1 && client.player.isIngestIdle
      })
    link.run(from: 6, to: 20)
    await client.disconnect()
    var unanswered: [String] = []
    var spoken: [String?] = []
    for await event in events {
      if case .messageUnanswered(let text) = event { unanswered.append(text) }
      if case .speakingStarted(_, let text) = event { spoken.append(text) }
      if case .stateChanged(.idle) = event { break }
    }
    #expect(unanswered == ["lost"])
    #expect(spoken == ["Hello there, nice to meet you."])
    await server.stop()
  }
}
