import Testing

@testable import SocketIO

/// Every wait of the client's session ends, on injected time: a silent link after an emit, a
/// handshake or namespace CONNECT that never comes, a server's absurd heartbeat, an emit the
/// server would refuse for its size.
@Suite("Socket.IO session: every wait has an end, no emit lost to a dead link")
struct SocketIOSessionLivenessTests {
  let base = SocketIOSessionTests()

  func session(liveness: Duration = .seconds(5), buffer: Int = 1_000) -> SocketIOSession {
    SocketIOSession(
      settings: .init(
        SocketIOClientConfiguration(
          url: "http://backend", connectTimeout: .seconds(20), maximumBufferedEmits: buffer,
          livenessTimeout: liveness)))
  }

  /// Production's heartbeat: 25 s interval, 60 s timeout, 1 MB messages.
  let production = EngineIOPacket.open(
    EngineIOHandshake(sid: "eio", pingInterval: 25_000, pingTimeout: 60_000, maxPayload: 1_000_000))

  func connect(_ s: inout SocketIOSession, at now: Duration, handshake: EngineIOPacket? = nil) {
    _ = s.transportOpened(now: now)
    _ = s.receive(handshake ?? production, now: now)
    _ = s.receive(base.serverConnect("a"), now: now)
  }

  func message(_ text: String) -> [EngineIOFrame] {
    SocketIOPacket.event("message", [.string(text)]).frames
  }

  @Test(
    "a message sent 2 s after the link went silent: found dead 5 s later (was 85 s), sent again once"
  )
  func silentLinkAfterAnEmit() {
    var s = session()
    connect(&s, at: .zero)
    // The last server ping came at 10 s; the link dies silently at 11 s.
    _ = s.receive(.ping(""), now: .seconds(10))
    #expect(
      base.describe(s.emit(message("hello"), now: .seconds(13))) == [
        #"send 42["message","hello"]"#, "probe",
      ])
    #expect(s.nextDeadline == .seconds(18))
    #expect(base.describe(s.tick(now: .milliseconds(17_999))) == [])
    #expect(base.describe(s.tick(now: .seconds(18))) == ["end pingTimeout"])
    let (reason, wasConnected, actions) = s.transportEnded()
    #expect(reason == .pingTimeout && wasConnected)
    #expect(base.describe(actions) == ["resend 1"])
    // The next connection sends it first, once, with a new probe.
    _ = s.transportOpened(now: .seconds(19))
    _ = s.receive(production, now: .seconds(19))
    #expect(
      base.describe(s.receive(base.serverConnect("b"), now: .seconds(19))) == [
        #"status connected(sid: "b")"#, #"send 42["message","hello"]"#, "probe",
      ])
    _ = s.receivePong(s.probeInFlight, now: .seconds(19.1))
    #expect(s.unconfirmedEmits == 0)
    // Confirmed: a later end sends nothing again.
    _ = s.tick(now: .seconds(200))
    #expect(base.describe(s.transportEnded().actions) == [])
    #expect(s.emitsResent == 1)
  }

  @Test(
    "bytes still arriving keep a ping waiting, though no packet completes; the last byte starts the timeout"
  )
  func bytesArrivingAreALiveLink() {
    var s = session()
    connect(&s, at: .zero)
    _ = s.emit(message("hello"), now: .seconds(1))
    #expect(s.nextDeadline == .seconds(6))
    // A 200 KB event on a 20 KB/s link: 10 s of reads, one packet at the end.
    for second in 2...11 {
      s.bytesArrived(now: .seconds(second))
      #expect(base.describe(s.tick(now: .seconds(second) + .milliseconds(999))) == [])
    }
    #expect(s.nextDeadline == .seconds(16))
    // Then the link dies: found dead the timeout after its last byte, and the emit goes again.
    #expect(base.describe(s.tick(now: .milliseconds(15_999))) == [])
    #expect(base.describe(s.tick(now: .seconds(16))) == ["end pingTimeout"])
    #expect(base.describe(s.transportEnded().actions) == ["resend 1"])
    // Bytes with no transport, or no ping in flight, change nothing.
    s.bytesArrived(now: .seconds(17))
    #expect(s.nextDeadline == nil)
  }

  @Test("a pong confirms what was written before its ping; later emits get their own ping")
  func pongsConfirmInOrder() {
    var s = session()
    connect(&s, at: .zero)
    #expect(base.describe(s.emit(message("1"), now: .seconds(1))).last == "probe")
    #expect(base.describe(s.emit(message("2"), now: .seconds(2))) == [#"send 42["message","2"]"#])
    #expect(s.unconfirmedEmits == 2)
    #expect(base.describe(s.receivePong(s.probeInFlight, now: .seconds(3))) == ["probe"])
    #expect(s.unconfirmedEmits == 1)
    #expect(s.nextDeadline == .seconds(8))
    #expect(base.describe(s.receivePong(s.probeInFlight, now: .seconds(4))) == [])
    #expect(s.unconfirmedEmits == 0)
    // No emit in flight: only the heartbeat's deadline remains (0 + 25 + 60 s).
    #expect(s.nextDeadline == .seconds(85))
  }

  @Test(
    "the late pong of a ping an acknowledgement made needless does not confirm an emit written after the link died"
  )
  func latePongConfirmsNothingNewer() {
    var s = session()
    connect(&s, at: .zero)
    // Acknowledged at once: confirmed, though the ping that followed it is still on its way.
    let asked = s.emitWithAck("q", [], timeout: .seconds(30), now: .seconds(1))
    let first = s.probeInFlight
    _ = s.receive(SocketIOPacket.ack(asked.id, []), now: .seconds(1.01))
    // The link dies; a message goes into it with a ping of its own.
    _ = s.emit(message("hello"), now: .seconds(2))
    #expect(s.probeInFlight != nil && s.probeInFlight != first)
    // The first ping's pong was already in flight: it answers that ping, not this one.
    _ = s.receivePong(first, now: .seconds(2.01))
    // Nor does a pong that echoes no number of ours.
    _ = s.receivePong(nil, now: .seconds(2.02))
    #expect(s.unconfirmedEmits == 1)
    #expect(base.describe(s.tick(now: .seconds(7))) == ["end pingTimeout"])
    #expect(base.describe(s.transportEnded().actions) == ["resend 1"])
  }

  @Test("an acknowledgement confirms its emit and every one written before it")
  func ackConfirms() {
    var s = session()
    connect(&s, at: .zero)
    _ = s.emit(message("1"), now: .seconds(1))
    let asked = s.emitWithAck("q", [], timeout: .seconds(30), now: .seconds(1))
    _ = s.emit(message("3"), now: .seconds(1))
    #expect(s.unconfirmedEmits == 3)
    _ = s.receive(SocketIOPacket.ack(asked.id, []), now: .seconds(2))
    #expect(s.unconfirmedEmits == 1)
    // The ping's pong never came (due 5 s after the acknowledgement, the last packet read):
    // "3" is sent again.
    _ = s.tick(now: .seconds(7))
    #expect(base.describe(s.transportEnded().actions) == ["resend 1"])
  }

  @Test("a transport the server closed may have read the emits: not sent again")
  func closedTransportDoesNotResend() {
    var s = session()
    connect(&s, at: .zero)
    _ = s.emit(message("drop me"), now: .seconds(1))
    _ = s.receive(.close, now: .seconds(1.1))
    #expect(base.describe(s.transportEnded().actions) == [])
    var t = session()
    connect(&t, at: .zero)
    _ = t.emit(message("reset"), now: .seconds(1))
    #expect(base.describe(t.transportEnded(error: "connection reset").actions) == [])
    #expect(t.bufferedEmits == 0)
  }

  @Test("a ping's payload is echoed up to 64 bytes; a 16 MiB one gets an empty pong")
  func pingEchoBounded() {
    var s = session()
    connect(&s, at: .zero)
    #expect(base.describe(s.receive(.ping("probe"), now: .seconds(1))) == ["send 3probe"])
    let huge = String(repeating: "x", count: 16 << 20)
    #expect(base.describe(s.receive(.ping(huge), now: .seconds(2))) == ["send 3"])
  }

  @Test("the application's disconnect does not send the unconfirmed emits again")
  func disconnectDoesNotResend() {
    var s = session()
    connect(&s, at: .zero)
    _ = s.emit(message("bye"), now: .seconds(1))
    _ = s.disconnect()
    #expect(base.describe(s.transportEnded().actions) == [])
    #expect(s.bufferedEmits == 0)
  }

  @Test(
    "a server that pings but never acknowledges the namespace CONNECT: ended at the connect timeout"
  )
  func namespaceConnectNeverComes() {
    var s = session()
    _ = s.transportOpened(now: .zero)
    _ = s.receive(production, now: .zero)
    for second in stride(from: 1, through: 19, by: 1) {
      _ = s.receive(.ping(""), now: .seconds(second))
      #expect(base.describe(s.tick(now: .seconds(second))) == [])
    }
    #expect(base.describe(s.tick(now: .seconds(20))) == ["end pingTimeout"])
  }

  @Test(
    "an absurd heartbeat is clamped to 5 minutes each",
    arguments: [Int.max / 2, 1 << 53, 86_400_000])
  func heartbeatClamped(milliseconds: Int) {
    var s = session()
    let handshake = EngineIOPacket.open(
      EngineIOHandshake(sid: "x", pingInterval: milliseconds, pingTimeout: milliseconds))
    connect(&s, at: .zero, handshake: handshake)
    #expect(s.nextDeadline == .seconds(600))
    #expect(base.describe(s.tick(now: .seconds(600))) == ["end pingTimeout"])
  }

  @Test("an emit larger than the server's maxPayload is refused, not sent (the server would close)")
  func oversizeEmitRefused() {
    var s = session()
    connect(&s, at: .zero)
    let voice = SocketIOPacket.event("voice", [.binary(.init(repeating: 1, count: 2_000_000))])
    #expect(base.describe(s.emit(voice.frames, now: .seconds(1))) == ["refuse payloadTooLarge"])
    #expect(s.isOpen && s.unconfirmedEmits == 0)
    // Buffered before the server said its limit: refused when the connection flushes it.
    var t = session()
    _ = t.emit(voice.frames, now: .zero)
    _ = t.transportOpened(now: .zero)
    _ = t.receive(production, now: .zero)
    #expect(
      base.describe(t.receive(base.serverConnect("a"), now: .zero)) == [
        #"status connected(sid: "a")"#, "refuse payloadTooLarge",
      ])
  }
}
