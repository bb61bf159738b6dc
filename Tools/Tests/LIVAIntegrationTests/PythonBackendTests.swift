import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import LIVAServer
import LIVATestSupport
import Testing

/// The client against a production-shaped backend that is not ours: python-socketio (the
/// production library) running `scripts/interop/liva_backend.py`, which streams LIVA speech with
/// the protocol's field types (int `sprite_index_folder`, no `overlay_id`, …). The network
/// runs in real time; the display on a virtual clock that moves only once what was sent has
/// arrived and been decoded.
@Suite("End to end: LIVAClient ↔ python-socketio backend", .serialized)
struct PythonBackendTests {
  typealias Rig = ClientRig<PythonProcess>

  func makeRig(
    scenario: String = "normal", mode: String = "base64", extra: [String] = [],
    auth: WireValue? = nil, http: Bool = false
  ) async throws -> Rig {
    let pack = try EndToEndTests.pack()
    let backend = try PythonProcess(
      script: "liva_backend.py",
      ["--pack", pack.root.path, "--mode", mode, "--scenario", scenario] + extra)
    guard let portText = await backend.waitForLine(startingWith: "PORT "), let port = Int(portText)
    else {
      backend.stop()
      throw PythonProcess.Failure(description: "the backend did not start: \(backend.lines)")
    }
    return try await connectRig(
      to: backend, port: port, cache: "liva-py",
      backendSaid: { "; the backend said \(backend.lines.suffix(10))" },
      stopBackend: { backend.stop() },
      configure: { configuration in
        configuration.auth = auth
        configuration.sendMessagesOverHTTP = http
      })
  }

  /// Pops and desyncs on the frames presented, judged without the engine's counters.
  func checkPresented(_ rig: Rig, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let pack = try EndToEndTests.pack()
    let problems = EndToEndTests.presentedProblems(rig.frames.all) { pack.frameCount(of: $0) }
    #expect(
      problems.isEmpty, "\(problems.count): \(problems.prefix(3))", sourceLocation: sourceLocation)
    #expect(!rig.frames.all.isEmpty, "nothing presented", sourceLocation: sourceLocation)
  }

  /// The chunk reports of message `message` (the engine's numbering).
  func reports(_ rig: Rig, message: Int) -> [ChunkReport] {
    rig.player.metrics.chunkReports.filter { $0.id.message == MessageID(message) }
  }

  static let modes = ["base64", "binary"]

  @Test(
    "production's types: every mouth drawn on its base frame, every chunk's audio started, back to idle",
    arguments: [
      ("normal", "base64"), ("normal", "binary"), ("reorder", "base64"),
      ("reorder", "binary"), ("floats", "base64"),
    ])
  func fullMessage(scenario: String, mode: String) async throws {
    var rig = try await makeRig(scenario: scenario, mode: mode)
    try await say("hello", in: rig, ends: 1)
    let plan = try await rig.plan(1)
    rig.run(for: 10)
    let metrics = rig.player.metrics
    #expect(metrics.rejections.isEmpty, "\(metrics.rejections)")
    #expect(metrics.rejectedEvents == 0)
    #expect(reports(rig, message: 0).map(\.frames) == plan)
    for report in reports(rig, message: 0) {
      #expect(report.drawn == report.frames, "\(report)")
    }
    #expect(metrics.engine.overlayFramesDrawn == plan.reduce(0, +))
    #expect(metrics.engine.mouthlessFrames == 0)
    #expect(rig.audio.segments.map(\.chunk.index) == Array(plan.indices))
    for segment in rig.audio.segments {
      let first = rig.frames.all.first { $0.content.chunk == segment.chunk }
      #expect(first?.time == segment.start)
    }
    #expect(metrics.engine.desyncs == 0 && metrics.engine.pops == 0)
    try checkPresented(rig)
    #expect(rig.player.mode == .idle)
    await rig.stop()
  }

  @Test("a backend that asks for acknowledgements gets one for every speech event")
  func acknowledgements() async throws {
    var rig = try await makeRig(extra: ["--acks"])
    try await say("hello", in: rig, ends: 1)
    // The last event of the message is answered, and every one before it.
    let last = await rig.backend.waitForLine(startingWith: "ACKED audio_end", seconds: 10)
    #expect(last != nil, "no acknowledgement of audio_end: \(rig.backend.lines.suffix(5))")
    let sent = rig.backend.lines.filter { $0.hasPrefix("SENT ") }.map { $0.dropFirst(5) }
    let acked = rig.backend.lines.filter { $0.hasPrefix("ACKED ") }.map { $0.dropFirst(6) }
    #expect(!sent.isEmpty && acked.sorted() == sent.sorted())
    // Answering costs playback nothing.
    let plan = try await rig.plan(1)
    rig.run(for: 10)
    #expect(rig.audio.segments.map(\.chunk.index) == Array(plan.indices))
    #expect(rig.player.metrics.engine.overlayFramesDrawn == plan.reduce(0, +))
    await rig.stop()
  }

  @Test("bad frames cost only their mouths; the chunk's audio and every other mouth play")
  func badFrames() async throws {
    var rig = try await makeRig(scenario: "bad-frames")
    try await say("hello", in: rig, ends: 1)
    let plan = try await rig.plan(1)
    let bad = rig.backend.lines.filter { $0.hasPrefix("BAD 0 ") }.count
    #expect(bad == 3)
    rig.run(for: 10)
    let metrics = rig.player.metrics
    #expect(metrics.rejectedEvents == 0)
    #expect(metrics.rejections["frame.outOfRange", default: 0] >= 1, "\(metrics.rejections)")
    #expect(metrics.rejections["frame.missingField", default: 0] >= 1, "\(metrics.rejections)")
    #expect(metrics.failedImages >= 1)
    #expect(rig.audio.segments.map(\.chunk.index) == Array(plan.indices))
    for report in reports(rig, message: 0) {
      #expect(report.drawn == report.frames, "\(report)")  // every slot at its time
    }
    #expect(metrics.engine.overlayFramesDrawn == plan.reduce(0, +) - bad)
    #expect(metrics.engine.mouthlessFrames == bad)
    #expect(metrics.engine.desyncs == 0 && metrics.engine.pops == 0)
    try checkPresented(rig)
    #expect(rig.player.mode == .idle)
    await rig.stop()
  }

  @Test(
    "the older per-image path (metadata, one image per event, audio-only receive_audio) plays with sound",
    arguments: modes)
  func legacy(mode: String) async throws {
    var rig = try await makeRig(scenario: "legacy", mode: mode)
    try await say("hello", in: rig, ends: 1)
    let plan = try await rig.plan(1)
    rig.run(for: 10)
    let metrics = rig.player.metrics
    #expect(metrics.rejections.isEmpty, "\(metrics.rejections)")
    #expect(rig.audio.segments.map(\.chunk.index) == Array(plan.indices))
    #expect(metrics.engine.overlayFramesDrawn == plan.reduce(0, +))
    #expect(metrics.engine.desyncs == 0 && metrics.engine.pops == 0)
    try checkPresented(rig)
    #expect(rig.player.mode == .idle)
    await rig.stop()
  }

  @Test(
    "a second message 0.3 s into the first, its batches before its audio: all of it plays, no later than from idle",
    arguments: modes)
  func interruption(mode: String) async throws {
    var second = try await makeRig(scenario: "reorder", mode: mode)
    try await say("hello", in: second, ends: 1)
    // The first message arrived at display time 0: its first mouth comes after the walk from idle.
    while !second.frames.all.contains(where: { $0.content.chunk != nil }) && second.now < 5 {
      second.run(for: 1.0 / 60)
    }
    let fromIdle = try #require(second.frames.all.first { $0.content.chunk != nil }?.time)
    second.run(for: 0.3)
    let cut = second.now
    try await say("goodbye", in: second, ends: 2)
    let plan = try await second.plan(2)
    second.run(for: 10)
    let metrics = second.player.metrics
    #expect(metrics.engine.interrupts == 1)
    #expect(reports(second, message: 1).map(\.frames) == plan)
    for report in reports(second, message: 1) {
      #expect(report.drawn == report.frames, "\(report)")
    }
    #expect(metrics.engine.mouthlessFrames == 0)
    #expect(
      second.audio.segments.filter { $0.chunk.message == MessageID(1) }.map(\.chunk.index)
        == Array(plan.indices))
    #expect(
      !second.frames.all.contains { $0.time > cut && $0.content.chunk?.message == MessageID(0) })
    let started = try #require(
      second.frames.all.first { $0.content.chunk?.message == MessageID(1) }?.time)
    #expect(
      started - cut <= fromIdle + 1e-9,
      "from idle \(fromIdle) s, after an interrupt \(started - cut) s")
    #expect(metrics.engine.desyncs == 0 && metrics.engine.pops == 0)
    try checkPresented(second)
    #expect(second.player.mode == .idle)
    await second.stop()
  }

  @Test(
    "a message cut by a dropped connection returns to idle once its audio ran out; no frozen mouth")
  func cut() async throws {
    var rig = try await makeRig(
      scenario: "cut", extra: ["--cut-how", "transport", "--scenario-limit", "1"])
    let states = rig.client.states
    try await rig.client.sendMessage("hello")
    #expect(await rig.backend.waitForLine(startingWith: "CUT ") != nil)
    #expect(
      await until(rig.player.changes) {
        rig.player.metrics.chunksReceived == 1 && rig.player.overlays.statistics.count > 0
          && rig.player.isIngestIdle
      })
    // The client has seen the drop (it reconnects at once) before the display moves.
    let dropped = await within(.seconds(30)) {
      for await state in states where state == .connecting { return true }
      return false
    }
    try #require(dropped == true, "the client did not see the connection drop within 30 s")
    // The chunk's first batch may still be read after the drop's status (events and statuses
    // come on two streams; under load it was, mid-run: its mouths in flight while virtual time
    // raced ahead). The reconnect's manifest comes after it on the event stream.
    let settled = await until(rig.client.changes) {
      rig.client.state != .connecting && rig.client.pendingDownloads == 0
        && rig.player.isIngestIdle
    }
    try #require(settled, "the client did not reconnect and settle within 30 s")
    rig.run(for: 8)
    let metrics = rig.player.metrics
    #expect(rig.audio.segments.map(\.chunk.index) == [0])
    #expect(metrics.engine.holds(.waitingForNextChunk) == 0)
    #expect(metrics.engine.overlayFramesDrawn > 0)
    // After the chunk's last slot, no mouth stays on screen.
    let lastSpeech = try #require(rig.frames.all.last { $0.content.chunk != nil })
    let segment = try #require(rig.audio.segments.first)
    #expect(lastSpeech.time <= segment.start + (segment.duration ?? 0) + 2.0 / 30)
    // Every mouth that came before the cut is drawn: none waited for, none lost.
    #expect(metrics.engine.holds(.overlayNotReady) == 0)
    #expect(metrics.engine.mouthlessFrames == 0)
    #expect(rig.player.mode == .idle)
    #expect(metrics.engine.desyncs == 0)
    await rig.stop()
  }

  @Test("the event stream: speaking started and ended with the message's text, chunks, states")
  func events() async throws {
    var rig = try await makeRig()
    let events = rig.client.events
    try await say("hello", in: rig, ends: 1)
    let plan = try await rig.plan(1)
    rig.run(for: 10)
    let ended = await within(.seconds(30)) { () -> [LIVAEvent]? in
      var seen: [LIVAEvent] = []
      for await event in events {
        seen.append(event)
        if case .speakingEnded = event { return seen }
      }
      return nil
    }
    let seen = try #require(ended, "no speakingEnded event within 30 s")
    #expect(seen.contains(.speakingStarted(MessageID(0), text: "hello")))
    #expect(seen.contains(.stateChanged(.speaking)))
    #expect(
      seen.compactMap { if case .chunkStarted(let id) = $0 { id.index } else { nil } }
        == Array(plan.indices))
    #expect(seen.last == .speakingEnded(MessageID(0), text: "hello", interrupted: false))
    #expect(!seen.contains { if case .rejected = $0 { true } else { false } })
    await rig.stop()
  }

  @Test("rejections reach the event stream with their scope, code and field path")
  func rejectionEvents() async throws {
    let rig = try await makeRig(scenario: "bad-frames")
    let events = rig.client.events
    try await say("hello", in: rig, ends: 1)
    let four = await within(.seconds(30)) { () -> [LIVAProtocolError]? in
      var rejected: [LIVAProtocolError] = []
      for await event in events {
        if case .rejected(let error) = event { rejected.append(error) }
        if rejected.count == 4 { return rejected }
      }
      return nil
    }
    let rejected = try #require(four, "fewer than 4 rejections within 30 s")
    #expect(rejected.allSatisfy { $0.scope == .frame })
    #expect(Set(rejected.map(\.code)) == [.outOfRange, .missingField])
    #expect(rejected.contains { $0.fieldPath?.hasSuffix("matched_sprite_frame_number") == true })
    await rig.stop()
  }

  @Test(
    "POST /messages: the python route reads our request as the protocol writes it, and the answer plays"
  )
  func httpMessage() async throws {
    var rig = try await makeRig(http: true)
    let ready = rig.player.readyAnimations.map(\.rawValue).sorted()
    #expect(!ready.isEmpty)
    try await say("hello over http", in: rig, ends: 1)
    // What the route read, field by field (its HTTP_REQUEST line), against docs/Protocol.md's
    // request: header X-User-ID, body {AgentID, message, instance_id, userResolution,
    // readyAnimations}, JSON.
    let line = try #require(
      await rig.backend.waitForLine(startingWith: "HTTP_REQUEST "),
      "the route did not answer within 30 s: \(rig.backend.lines.suffix(8))")
    let read = try #require(
      try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    #expect(read["content_type"] as? String == "application/json")
    #expect(read["X-User-ID"] as? String == "user")
    #expect(read["AgentID"] as? String == "sample")
    #expect(read["message"] as? String == "hello over http")
    #expect(read["instance_id"] as? String == "default")
    #expect(read["userResolution"] as? String == "96")
    #expect((read["readyAnimations"] as? [String])?.sorted() == ready)
    #expect(read["other_fields"] as? [String] == [])
    // It spoke to the room our socket joined, and that speech plays.
    let joined = try #require(await rig.backend.waitForLine(startingWith: "CONNECT "))
    #expect(read["room"] as? String == joined)
    let plan = try await rig.plan(1)
    #expect(!plan.isEmpty)
    rig.run(for: 10)
    #expect(rig.audio.segments.map(\.chunk.index) == Array(plan.indices))
    #expect(rig.player.metrics.engine.overlayFramesDrawn == plan.reduce(0, +))
    try checkPresented(rig)
    await rig.stop()
  }

  @Test("the auth payload, set_session_id and voice input reach the backend")
  func authSessionVoice() async throws {
    let rig = try await makeRig(auth: ["token": "t-123", "app": "tests"])
    #expect(
      await rig.backend.waitForLine(startingWith: "AUTH ") == #"{"app": "tests", "token": "t-123"}"#
    )
    try await rig.client.setSessionID("session-42")
    #expect(await rig.backend.waitForLine(startingWith: "SESSION ") == "session-42")
    try await rig.client.sendVoice(Data(repeating: 7, count: 3_000))
    #expect(await rig.backend.waitForLine(startingWith: "VOICE ") == "3000")
    await rig.stop()
  }
}
