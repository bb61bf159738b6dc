import Testing

@testable import SocketIO

/// The client's inbound events are bounded in bytes: the reader waits for room, the
/// application's taking makes it; while the reader waits, no deadline judges the link.
@Suite("Inbound events: a byte budget, and a paused reader is not a dead link")
struct SocketIOEventQueueTests {
  func event(_ name: String) -> SocketIOEvent { SocketIOEvent(name: name, arguments: []) }

  @Test("events beyond the budget stop the reader until the application takes enough of them")
  func budgetStopsTheReader() async {
    let queue = SocketIOEventQueue(budget: 100)
    for name in ["a", "b", "c"] { queue.put(event(name), bytes: 60) }
    #expect(queue.bytes == 180 && !queue.hasRoom)
    let reader = Task {
      await queue.waitForRoom()
      return queue.bytes
    }
    #expect(await queue.take()?.name == "a")
    #expect(queue.bytes == 120 && !queue.hasRoom)  // still over: the reader still waits
    #expect(await queue.take()?.name == "b")
    #expect(queue.hasRoom)
    // The reader went on only once the bytes were under the budget.
    #expect(await reader.value == 60)
    #expect(await queue.take()?.name == "c")
    #expect(queue.bytes == 0)
  }

  @Test("a taker waits for the next event; finishing ends it and frees a waiting reader")
  func finishEndsBoth() async {
    let queue = SocketIOEventQueue(budget: 10)
    let taker = Task { await queue.take()?.name }
    queue.put(event("late"), bytes: 5)
    #expect(await taker.value == "late")
    queue.put(event("big"), bytes: 50)
    let reader = Task { await queue.waitForRoom() }
    queue.finish()
    await reader.value
    // What was held is still taken, then nothing.
    #expect(await queue.take()?.name == "big")
    #expect(await queue.take() == nil)
    queue.put(event("dropped"), bytes: 1)
    #expect(await queue.take() == nil)
  }

  @Test("a cancelled reader or taker stops waiting")
  func cancellation() async {
    let queue = SocketIOEventQueue(budget: 10)
    let taker = Task { await queue.take() }
    taker.cancel()
    #expect(await taker.value == nil)
    queue.put(event("full"), bytes: 50)
    let reader = Task { await queue.waitForRoom() }
    reader.cancel()
    await reader.value
    #expect(await queue.take()?.name == "full")
  }

  @Test(
    "a reader paused by the application is not a dead link: the probe and the heartbeat are due as much later as the pause lasted"
  )
  func pausedReadingSuspendsDeadlines() {
    let liveness = SocketIOSessionLivenessTests()
    var s = liveness.session()
    liveness.connect(&s, at: .zero)
    _ = s.emit(liveness.message("hello"), now: .seconds(1))
    #expect(s.nextDeadline == .seconds(6))
    s.readingPaused(true, now: .seconds(2))
    // Long past the probe's 6 s and the heartbeat's 85 s: nothing ends while paused.
    #expect(SocketIOSessionTests().describe(s.tick(now: .seconds(200))) == [])
    s.readingPaused(false, now: .seconds(200))
    // The probe had 4 s left when reading stopped: due at 204 s.
    #expect(s.nextDeadline == .seconds(204))
    #expect(SocketIOSessionTests().describe(s.tick(now: .milliseconds(203_999))) == [])
    #expect(SocketIOSessionTests().describe(s.tick(now: .seconds(204))) == ["end pingTimeout"])
    // Unpaused at once, the deadlines are as they were.
    var t = liveness.session()
    liveness.connect(&t, at: .zero)
    _ = t.emit(liveness.message("hello"), now: .seconds(1))
    t.readingPaused(true, now: .seconds(2))
    t.readingPaused(false, now: .seconds(2))
    #expect(SocketIOSessionTests().describe(t.tick(now: .seconds(6))) == ["end pingTimeout"])
  }

  @Test(
    "events before the namespace CONNECT are held up to the byte budget (the reader cannot pause then); later ones are dropped and said"
  )
  func earlyEventsBoundedInBytes() {
    var configuration = SocketIOClientConfiguration(url: "http://backend")
    configuration.maximumQueuedEventBytes = 1_000
    var s = SocketIOSession(settings: .init(configuration))
    _ = s.transportOpened(now: .zero)
    _ = s.receive(SocketIOSessionTests().handshake, now: .zero)
    var dropped: [String] = []
    for index in 0..<5 {
      let actions = s.receive(SocketIOPacket.event("e\(index)"), bytes: 300, now: .zero)
      dropped += SocketIOSessionTests().describe(actions)
    }
    #expect(dropped == ["drop e3", "drop e4"])
    #expect(s.earlyDropped == 2)
    let delivered = SocketIOSessionTests().describe(
      s.receive(SocketIOSessionTests().serverConnect("a"), now: .zero))
    #expect(delivered.filter { $0.hasPrefix("deliver") }.count == 3)
    // Once connected the budget is the queue's: the session delivers whatever comes.
    #expect(
      SocketIOSessionTests().describe(s.receive(SocketIOPacket.event("late"), bytes: 5_000))
        == ["deliver late sid=a ack=-"])
  }

  @Test(
    "a pong behind a backlog of the server's data: every packet read proves the link alive and moves the probe's deadline"
  )
  func trafficKeepsTheProbeAlive() {
    let liveness = SocketIOSessionLivenessTests()
    var s = liveness.session()
    liveness.connect(&s, at: .zero)
    _ = s.emit(liveness.message("hello"), now: .seconds(1))
    // The server's events keep coming (megabytes queued ahead of the pong).
    for second in 2...20 {
      _ = s.receive(SocketIOPacket.event("chunk"), bytes: 1 << 20, now: .seconds(Double(second)))
      #expect(SocketIOSessionTests().describe(s.tick(now: .seconds(Double(second)))) == [])
    }
    #expect(s.unconfirmedEmits == 1)  // traffic is not a confirmation
    // Then nothing: dead a liveness timeout after the last packet.
    #expect(SocketIOSessionTests().describe(s.tick(now: .milliseconds(24_999))) == [])
    #expect(SocketIOSessionTests().describe(s.tick(now: .seconds(25))) == ["end pingTimeout"])
  }
}
