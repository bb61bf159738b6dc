import Hummingbird
import HummingbirdTLS
import NIOCore
import NIOEmbedded
import NIOSSL
import NIOWebSocket
import SocketIO
import SocketIOServer
import Testing

@testable import SocketIO

/// The client's WebSocket end: frames in, whole packets out, on the event loop.
@Suite("WebSocket transport: the channel handler")
struct EngineIOChannelHandlerTests {
  typealias Frame = NIOWebSocket.WebSocketFrame

  func channel(limits: SocketIOLimits = .default) throws -> EmbeddedChannel {
    let channel = EmbeddedChannel()
    try channel.pipeline.syncOperations.addHandler(
      EngineIOChannelHandler(limits: limits, logger: .init(label: "test")))
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    #expect(channel.isActive)
    return channel
  }

  func frame(_ text: String, opcode: WebSocketOpcode = .text, fin: Bool = true) -> Frame {
    Frame(fin: fin, opcode: opcode, data: ByteBuffer(string: text))
  }

  func frame(_ bytes: [UInt8], opcode: WebSocketOpcode = .binary, fin: Bool = true) -> Frame {
    Frame(fin: fin, opcode: opcode, data: ByteBuffer(bytes: bytes))
  }

  func packets(_ channel: EmbeddedChannel) throws -> [TransportInbound] {
    var packets: [TransportInbound] = []
    while let packet = try channel.readInbound(as: TransportInbound.self) { packets.append(packet) }
    return packets
  }

  @Test("a binary event and its attachments are one packet; control packets pass as they are")
  func binaryPacketIsOneElement() throws {
    let channel = try channel()
    try channel.writeInbound(frame("2"))  // Engine.IO ping
    try channel.writeInbound(frame(#"451-["batch",{"_placeholder":true,"num":0}]"#))
    #expect(try packets(channel).count == 1)  // the ping; the event waits for its attachment
    try channel.writeInbound(frame([1, 2, 3]))
    let out = try packets(channel)
    guard out.count == 1, case .socket(let packet, _) = out[0] else {
      Issue.record("expected one Socket.IO packet, got \(out)")
      return
    }
    #expect(packet.eventName == "batch")
    #expect(packet.arguments == [.binary([1, 2, 3])])
  }

  @Test("fragments are joined into one message before decoding")
  func fragments() throws {
    let channel = try channel()
    try channel.writeInbound(frame(#"42["a","#, fin: false))
    try channel.writeInbound(frame(#""b"]"#, opcode: .continuation))
    let out = try packets(channel)
    guard out.count == 1, case .socket(let packet, _) = out[0] else {
      Issue.record("expected one packet, got \(out)")
      return
    }
    #expect(packet.eventName == "a" && packet.arguments == ["b"])
  }

  @Test("a malformed packet is dropped and the next one decodes; the connection stays open")
  func malformedDropped() throws {
    let channel = try channel()
    try channel.writeInbound(frame(#"42["a",{"#))
    try channel.writeInbound(frame("9nonsense"))
    try channel.writeInbound(frame(#"42["b"]"#))
    let out = try packets(channel)
    #expect(out.count == 1)
    if case .socket(let packet, _)? = out.first {
      #expect(packet.eventName == "b")
    } else {
      Issue.record("no socket packet: \(out)")
    }
    #expect(channel.isActive)
  }

  @Test("a ping frame is answered with a masked pong carrying its data")
  func pingPong() throws {
    let channel = try channel()
    try channel.writeInbound(frame([7, 8], opcode: .ping))
    let pong = try #require(try channel.readOutbound(as: Frame.self))
    #expect(pong.opcode == .pong && pong.maskKey != nil)
    // Unmasked here: the frame encoder below masks it on the way out.
    #expect(Array(pong.data.readableBytesView) == [7, 8])
    #expect(try packets(channel).isEmpty)
  }

  @Test("the server's close is answered with its code, then the connection closes")
  func serverClose() throws {
    let channel = try channel()
    var code = ByteBuffer()
    code.writeInteger(UInt16(1001))
    try channel.writeInbound(Frame(fin: true, opcode: .connectionClose, data: code))
    let reply = try #require(try channel.readOutbound(as: Frame.self))
    var data = reply.data
    #expect(reply.opcode == .connectionClose && reply.maskKey != nil)
    #expect(data.readInteger(as: UInt16.self) == 1001)
    channel.embeddedEventLoop.run()
    #expect(!channel.isActive)
  }

  @Test(
    "after the client's own close, the server's answer ends the connection with no second close"
  )
  func answerToOurClose() throws {
    let channel = try channel()
    try channel.writeOutbound(
      EngineIOChannelHandler.closeFrame(allocator: channel.allocator))
    let ours = try #require(try channel.readOutbound(as: Frame.self))
    #expect(ours.opcode == .connectionClose)
    var code = ByteBuffer()
    code.writeInteger(UInt16(1000))
    try channel.writeInbound(Frame(fin: true, opcode: .connectionClose, data: code))
    #expect(try channel.readOutbound(as: Frame.self) == nil)  // a close is sent once
    channel.embeddedEventLoop.run()
    #expect(!channel.isActive)
  }

  @Test(
    "frames that no longer make messages, a message over the limit, a reserved opcode: the connection closes",
    arguments: [0, 1, 2, 3])
  func brokenFramesClose(_ variant: Int) throws {
    var limits = SocketIOLimits.default
    limits.maximumPayloadBytes = 16
    let channel = try channel(limits: limits)
    switch variant {
    case 0: try channel.writeInbound(frame("x", opcode: .continuation))
    case 1: try channel.writeInbound(frame(String(repeating: "4", count: 17)))
    case 2:
      try channel.writeInbound(frame("42", fin: false))
      try channel.writeInbound(frame("42"))  // a new message inside a fragmented one
    default:
      try channel.writeInbound(frame("x", opcode: WebSocketOpcode(encodedWebSocketOpcode: 3)!))
    }
    channel.embeddedEventLoop.run()
    #expect(!channel.isActive)
    #expect(try packets(channel).isEmpty)
  }
}

@Suite("WebSocket transport: endpoints and TLS", .timeLimit(.minutes(1)))
struct WebSocketTransportTests {
  typealias Endpoint = WebSocketTransport.Endpoint

  @Test("ws and wss URLs: host, port (default or given), request target, Host header")
  func endpoints() throws {
    let plain = try Endpoint(url: "ws://example.com/socket.io/?EIO=4&transport=websocket")
    #expect(!plain.secure && plain.host == "example.com" && plain.port == 80)
    #expect(
      plain.target == "/socket.io/?EIO=4&transport=websocket" && plain.hostHeader == "example.com")
    let secure = try Endpoint(url: "wss://api.example.com:8443?x=1")
    #expect(secure.secure && secure.port == 8443 && secure.target == "/?x=1")
    #expect(secure.hostHeader == "api.example.com:8443" && !secure.hostIsAddress)
    let v6 = try Endpoint(url: "ws://[::1]:5000/p")
    #expect(
      v6.host == "::1" && v6.port == 5000 && v6.hostHeader == "[::1]:5000" && v6.hostIsAddress)
    #expect(try Endpoint(url: "wss://127.0.0.1/").hostIsAddress)
    for bad in [
      "http://x/", "ws://", "ws://host:0/", "ws://host:99999/", "ws://host:x/", "ws://u@host/",
      "ws://[::1/",
    ] {
      #expect(throws: SocketIOError.self, "\(bad)") { try Endpoint(url: bad) }
    }
  }

  /// A self-signed certificate for localhost and 127.0.0.1 (test only; valid until 2126).
  static let certificate = """
    -----BEGIN CERTIFICATE-----
    MIIBmzCCAUGgAwIBAgIUdgk1aUnHFO2mvIiA2P9KbhhbsbkwCgYIKoZIzj0EAwIw
    FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNjIyNTAxOVoYDzIxMjYxMTAy
    MjI1MDE5WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
    PQMBBwNCAASE3lN4qNTiqF1x0dZb0Yy2cmPsTal2i05IiUIk4msJvvrldZjJRCEb
    1zdyb3rmgqhr3M74lNfyMw7RHZbA+2yVo28wbTAdBgNVHQ4EFgQUoa21+a6CVeqo
    Haj2Fn5KorwmOvkwHwYDVR0jBBgwFoAUoa21+a6CVeqoHaj2Fn5KorwmOvkwDwYD
    VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI
    zj0EAwIDSAAwRQIgHel4fGMVIiY02TxNj5+B+TRkM2mKBE/zTuJB3NSx8x4CIQDx
    4pchOpWye30b4fHsGAhrgqH3CgOgaHgiuLjcgHNHuA==
    -----END CERTIFICATE-----
    """
  static let privateKey = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg4Cgv6CL986m54qk3
    4/v+OCp0eDEz/rh3IJcmAeLSTvShRANCAASE3lN4qNTiqF1x0dZb0Yy2cmPsTal2
    i05IiUIk4msJvvrldZjJRCEb1zdyb3rmgqhr3M74lNfyMw7RHZbA+2yV
    -----END PRIVATE KEY-----
    """

  func tlsServer(
    onConnect: @escaping @Sendable (SocketIOServerSocket) async throws -> Void = { _ in }
  ) async throws -> LoopbackServer {
    let certificate = try NIOSSLCertificate(bytes: Array(Self.certificate.utf8), format: .pem)
    let key = try NIOSSLPrivateKey(bytes: Array(Self.privateKey.utf8), format: .pem)
    return try await LoopbackServer.start(
      tls: .makeServerConfiguration(
        certificateChain: [.certificate(certificate)], privateKey: .privateKey(key)),
      onConnect: onConnect)
  }

  @Test("wss: a client trusting the server's certificate connects and exchanges events")
  func secureRoundTrip() async throws {
    let loopback = try await tlsServer { socket in
      Task {
        for await event in socket.events where event.name == "echo" {
          await event.ack(event.arguments)
        }
      }
    }
    var configuration = testConfiguration("https://localhost:\(loopback.port)")
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .certificates([
      try NIOSSLCertificate(bytes: Array(Self.certificate.utf8), format: .pem)
    ])
    configuration.tlsConfiguration = tls
    let client = SocketIOClient(configuration: configuration)
    await client.connect()
    let answer = try await client.emitWithAck("echo", ["over TLS", .binary([1, 2, 3])])
    #expect(answer == ["over TLS", .binary([1, 2, 3])])
    await client.disconnect()
    await loopback.stop()
  }

  @Test("wss: a certificate the client does not trust is a transport error, never a connection")
  func untrustedCertificate() async throws {
    let loopback = try await tlsServer()
    var configuration = testConfiguration("https://localhost:\(loopback.port)")
    configuration.reconnection = ReconnectionPolicy(
      failureLimit: 1, continuesAfterFailureLimit: false)
    let client = SocketIOClient(configuration: configuration)
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(
      await statuses.wait {
        $0.contains { if case .failed = $0 { true } else { false } }
      })
    #expect(await !statuses.items.contains { if case .connected = $0 { true } else { false } })
    #expect(await loopback.sockets.items.isEmpty)
    await client.disconnect()
    await loopback.stop()
  }
}
