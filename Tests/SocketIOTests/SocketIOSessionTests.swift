import Testing

@testable import SocketIO

/// The client's decisions on injected time, without a socket: handshake, deadlines, the
/// namespace CONNECT, early events, the send buffer, acknowledgements both ways, and how a
/// transport ends.
@Suite("Socket.IO session: the client's decisions on injected time")
struct SocketIOSessionTests {
  func session(buffer: Int = 1_000, auth: JSONValue? = nil) -> SocketIOSession {
    SocketIOSession(
      settings: .init(
        SocketIOClientConfiguration(
          url: "http://backend", auth: auth, connectTimeout: .seconds(20),
          maximumBufferedEmits: buffer)))
  }

  /// The actions in a comparable form.
  func describe(_ actions: [SocketIOSession.Action]) -> [String] {
    actions.map { action in
      switch action {
      case .send(let frames):
        return "send "
          + frames.map {
            if case .text(let text) = $0 { text } else { "<binary>" }
          }.joined(separator: " ")
      case .deliver(let d):
        return "deliver \(d.name) sid=\(d.sid ?? "-") ack=\(d.ackID.map(String.init) ?? "-")"
      case .status(let status): return "status \(status)"
      case .completeAck(let id, let arguments): return "ack \(id) \(arguments.count)"
      case .failAck(let id, let error): return "fail \(id) \(error.code)"
      case .endTransport(let reason): return "end \(reason)"
      case .probe: return "probe"
      case .refuseEmit(let error): return "refuse \(error.code)"
      case .resend(let count): return "resend \(count)"
      case .dropEarly(let name): return "drop \(name)"
      }
    }
  }

  let handshake = EngineIOPacket.open(
    EngineIOHandshake(sid: "eio", pingInterval: 25_000, pingTimeout: 20_000))

  func serverConnect(_ sid: String) -> SocketIOPacket {
    SocketIOPacket.connect(payload: ["sid": .string(sid)])
  }

  /// A session whose namespace is connected as `sid` at `now`.
  func connected(_ s: inout SocketIOSession, sid: String = "a", now: Duration = .zero) {
    _ = s.transportOpened(now: now)
    _ = s.receive(handshake, now: now)
    _ = s.receive(serverConnect(sid))
  }

  @Test func theHandshakeSendsTheConnectWithAuthAndTheServersConnectConnects() {
    var s = session(auth: ["token": "t"])
    #expect(s.transportOpened(now: .seconds(1)) == 1)
    #expect(!s.isConnected && !s.hasHandshake)
    #expect(describe(s.receive(handshake, now: .seconds(1))) == [#"send 40{"token":"t"}"#])
    #expect(describe(s.receive(serverConnect("abc"))) == ["status connected(sid: \"abc\")"])
    #expect(s.isConnected)
  }

  @Test func noHandshakeWithinTheConnectTimeoutEndsTheTransport() {
    var s = session()
    _ = s.transportOpened(now: .seconds(5))
    #expect(s.nextDeadline == .seconds(25))
    #expect(s.tick(now: .seconds(24.999)).isEmpty)
    #expect(describe(s.tick(now: .seconds(25))) == ["end pingTimeout"])
    #expect(!s.isOpen)
    let ended = s.transportEnded()
    #expect(ended.reason == .pingTimeout && !ended.wasConnected && ended.reason.reconnects)
  }

  @Test func eachPingMovesTheDeadlineToIntervalPlusTimeoutAndIsAnswered() {
    var s = session()
    connected(&s, now: .seconds(1))
    #expect(s.nextDeadline == .seconds(46))  // 1 + 25 + 20
    #expect(describe(s.receive(.ping("p"), now: .seconds(40))) == ["send 3p"])
    #expect(s.pingsAnswered == 1)
    #expect(s.tick(now: .seconds(84.9)).isEmpty)
    #expect(describe(s.tick(now: .seconds(85))) == ["end pingTimeout"])
    // Nothing more happens on an ended transport.
    #expect(s.receive(.ping("q"), now: .seconds(86)).isEmpty)
    #expect(s.tick(now: .seconds(200)).isEmpty)
  }

  @Test func eventsBeforeTheConnectAreDeliveredAfterItWithItsSidAndAtMostTheLimit() {
    var s = session(buffer: 2)
    _ = s.transportOpened(now: .zero)
    _ = s.receive(handshake, now: .zero)
    for name in ["e1", "e2"] {
      #expect(s.receive(SocketIOPacket.event(name, [1])).isEmpty)
    }
    // Past the limit: dropped, and said.
    #expect(describe(s.receive(SocketIOPacket.event("e3", [1]))) == ["drop e3"])
    #expect(
      describe(s.receive(serverConnect("x"))) == [
        "status connected(sid: \"x\")", "deliver e1 sid=x ack=-", "deliver e2 sid=x ack=-",
      ])
    #expect(describe(s.receive(SocketIOPacket.event("e4"))) == ["deliver e4 sid=x ack=-"])
    // Another namespace's packets are not this client's.
    #expect(s.receive(SocketIOPacket.event("other", namespace: "/admin")).isEmpty)
  }

  @Test func emitsWhileNotConnectedWaitForTheNextConnectionLaterOnesRefusedPastTheLimit() {
    var s = session(buffer: 2)
    for name in ["m1", "m2"] {
      #expect(s.emit(SocketIOPacket.event(name).frames).isEmpty)
    }
    // Past the limit the new emit is refused, and none accepted is dropped (it was the oldest
    // that went, silently).
    #expect(describe(s.emit(SocketIOPacket.event("m3").frames)) == ["refuse outboundFull"])
    #expect(s.bufferedEmits == 2)
    _ = s.transportOpened(now: .zero)
    _ = s.receive(handshake, now: .zero)
    #expect(
      describe(s.receive(serverConnect("y"))) == [
        "status connected(sid: \"y\")", #"send 42["m1"]"#, #"send 42["m2"]"#,
      ])
    #expect(describe(s.emit(SocketIOPacket.event("m4").frames)) == [#"send 42["m4"]"#])
    #expect(s.bufferedEmits == 0)
  }

  /// The worst outbound case: emits faster than a link takes them (or into a dead one). The
  /// session holds at most ``SocketIOSession/Settings/maximumOutboundBytes``, buffered and
  /// unconfirmed together; a confirmation makes room again.
  @Test func emitsPastTheOutboundByteBoundAreRefusedUntilConfirmed() {
    var configuration = SocketIOClientConfiguration(url: "http://backend")
    configuration.maximumOutboundBytes = 100_000
    var s = SocketIOSession(settings: .init(configuration))
    let big = SocketIOPacket.event("voice", [.binary(Array(repeating: 7, count: 30_000))]).frames
    // Not connected: three wait (about 90 KB), the fourth would pass the bound.
    for _ in 0..<3 { #expect(s.emit(big, now: .zero).isEmpty) }
    #expect(describe(s.emit(big, now: .zero)) == ["refuse outboundFull"])
    #expect(s.outboundBytes > 90_000 && s.outboundBytes <= 100_000)
    connected(&s)
    // Written on connecting, unconfirmed: still held, still full.
    #expect(describe(s.emit(big, now: .seconds(1))) == ["refuse outboundFull"])
    // A small one fits.
    #expect(
      describe(s.emit(SocketIOPacket.event("hi").frames, now: .seconds(1))).first
        == #"send 42["hi"]"#)
    // The pong to the newest ping confirms everything written before it: room again.
    let probe = s.probeInFlight
    #expect(probe != nil)
    _ = s.receivePong(probe, now: .seconds(2))
    #expect(s.outboundBytes == 0)
    #expect(describe(s.emit(big, now: .seconds(2))).first?.hasPrefix("send 451-") == true)
  }

  @Test func acknowledgementsAreAnsweredTimedOutOrFailedWithTheTransport() {
    var s = session()
    connected(&s)
    let first = s.emitWithAck("q1", [], timeout: .seconds(5), now: .seconds(1))
    #expect(first.id == 0 && describe(first.actions) == [#"send 420["q1"]"#, "probe"])
    let second = s.emitWithAck("q2", [], timeout: .seconds(5), now: .seconds(2))
    let third = s.emitWithAck("q3", [], timeout: .seconds(60), now: .seconds(2))
    #expect(s.awaitedAcks == [0, 1, 2])
    #expect(s.nextDeadline == .seconds(6))
    #expect(describe(s.receive(SocketIOPacket.ack(first.id, ["ok"]))) == ["ack 0 1"])
    #expect(s.receive(SocketIOPacket.ack(first.id, ["again"])).isEmpty)  // answered once
    #expect(s.receive(SocketIOPacket.ack(99)).isEmpty)  // never asked
    // The server's pongs confirm the emits (a WebSocket ping follows each first one).
    #expect(describe(s.receivePong(s.probeInFlight, now: .seconds(2.5))) == ["probe"])
    #expect(describe(s.tick(now: .seconds(7))) == ["fail \(second.id) ackTimeout"])
    #expect(describe(s.receivePong(s.probeInFlight, now: .seconds(7.2))) == [])
    let ended = s.transportEnded()
    #expect(describe(ended.actions) == ["fail \(third.id) notConnected"])
    #expect(ended.reason == .transportClose && ended.wasConnected)
    #expect(s.awaitedAcks.isEmpty)
  }

  @Test func aServerEventAskingForAnAnswerIsAnsweredOnItsOwnTransportOnly() throws {
    var s = session()
    connected(&s, sid: "one")
    let actions = s.receive(SocketIOPacket.event("hello", [1], ackID: 7))
    #expect(describe(actions) == ["deliver hello sid=one ack=7"])
    guard case .deliver(let delivery)? = actions.first else { throw Failure() }
    #expect(
      describe(s.acknowledge(7, ["fine"], transport: delivery.transport)) == [
        #"send 437["fine"]"#
      ])
    _ = s.transportEnded()
    connected(&s, sid: "two")
    #expect(s.acknowledge(7, [], transport: delivery.transport).isEmpty)
  }

  struct Failure: Error {}

  @Test func howATransportEndsDecidesWhetherTheClientReconnects() {
    var s = session()
    connected(&s)
    #expect(describe(s.receive(SocketIOPacket.disconnect())) == ["end serverDisconnect"])
    #expect(s.transportEnded().reason == .serverDisconnect)
    #expect(!SocketIODisconnectReason.serverDisconnect.reconnects)

    _ = s.transportOpened(now: .zero)
    _ = s.receive(handshake, now: .zero)
    #expect(
      describe(s.receive(SocketIOPacket.connectError("nope"))) == [
        "end connectRefused(\"nope\")"
      ])
    #expect(s.transportEnded().reason == .connectRefused("nope"))

    connected(&s)
    #expect(describe(s.receive(.close, now: .seconds(1))) == ["end transportClose"])
    #expect(s.transportEnded().reason == .transportClose)

    _ = s.transportOpened(now: .zero)
    #expect(s.transportEnded(error: "refused").reason == .transportError("refused"))

    connected(&s)
    #expect(describe(s.disconnect()) == ["send 41", "end clientDisconnect"])
    #expect(s.disconnect().isEmpty)  // once
    #expect(s.transportEnded().reason == .clientDisconnect)
  }
}
