import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import LIVAServer
import LIVATestSupport
import SocketIO
import Testing

@testable import LIVA

/// The client against the reference backend over real loopback Socket.IO. The network runs in
/// real time; the display runs on a virtual clock that only moves once what was sent has
/// arrived and been decoded, so playback is deterministic.
@Suite("End to end: LIVAClient ↔ reference backend", .serialized)
struct EndToEndTests {
  typealias Rig = ClientRig<ReferenceBackend>

  static let packRoot = FileManager.default.temporaryDirectory.appendingPathComponent(
    "liva-e2e-packs")

  static func pack() throws -> AvatarPack {
    try SampleAvatar(configuration: .init(width: 96, height: 96)).cachedPack(in: packRoot)
  }

  func makeRig(
    faults: BackendFaults = .init(), encoding: BinaryEncoding = .base64, skew: Double = 0,
    greets: Bool = false, legacy: Bool = false, http: Bool = false
  ) async throws -> Rig {
    let server = try await TestBackend.start { configuration in
      configuration.legacyPerImage = legacy
      configuration.greets = greets
      configuration.encoding = encoding
      configuration.faults = faults
    }
    return try await connectRig(
      to: server.backend, port: server.port, cache: "liva-e2e", skew: skew,
      stopBackend: { await server.stop() }, configure: { $0.sendMessagesOverHTTP = http })
  }

  /// Pops and desyncs judged on the presented frames alone, not on the engine's counters: two
  /// consecutive frames on screen are the same or neighbouring frames of one animation, or meet
  /// at a key pose (the first or last frame of one animation, then the first or last of another
  /// at that pose: an edge of the graph); every mouth on screen names the base frame under it
  /// (its overlay id is `{animation}/{frame}/{sheet}`).
  static func presentedProblems(_ frames: [RenderedFrame], counts: (AnimationName) -> Int?)
    -> [String]
  {
    func pose(_ frame: DrawnFrame) -> KeyPose? {
      if frame.index == 0 { return frame.animation.from }
      return frame.index == (counts(frame.animation) ?? -1) - 1 ? frame.animation.to : nil
    }
    var problems: [String] = []
    for (previous, next) in zip(frames, frames.dropFirst()) {
      let a = previous.content
      let b = next.content
      let neighbours = a.animation == b.animation && abs(a.index - b.index) <= 1
      if !neighbours && (pose(a) == nil || pose(a) != pose(b)) {
        problems.append(
          "pop at \(next.time): \(a.animation)#\(a.index) → \(b.animation)#\(b.index)")
      }
    }
    for frame in frames {
      for layer in frame.content.overlays
      where !layer.key.hasPrefix("\(frame.content.animation)/\(frame.content.index)/") {
        problems.append(
          "desync at \(frame.time): \(layer.key) on \(frame.content.animation)#\(frame.content.index)"
        )
      }
    }
    return problems
  }

  func checkClean(_ rig: Rig, sourceLocation: SourceLocation = #_sourceLocation) {
    let problems = Self.presentedProblems(rig.frames.all) { rig.backend.pack.frameCount(of: $0) }
    #expect(
      problems.isEmpty, "\(problems.count): \(problems.prefix(3))", sourceLocation: sourceLocation)
    #expect(!rig.frames.all.isEmpty, "nothing presented", sourceLocation: sourceLocation)
    let metrics = rig.player.metrics
    #expect(metrics.engine.desyncs == 0, sourceLocation: sourceLocation)
    #expect(metrics.engine.pops == 0, sourceLocation: sourceLocation)
    #expect(metrics.baseFrameMisses == 0, sourceLocation: sourceLocation)
    #expect(rig.player.mode == .idle, sourceLocation: sourceLocation)
  }

  /// What the backend planned, against what was presented and heard (not the client's own
  /// counters): every message streamed whole, every planned mouth of every chunk on screen
  /// (each chunk and frame with a mouth, once), and each chunk's audio started once.
  func expectPlanShown(
    _ rig: Rig, messages: Int = 1, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let spoken = rig.backend.spokenMessages
    #expect(spoken.count == messages, sourceLocation: sourceLocation)
    #expect(spoken.allSatisfy { $0.streamedWhole }, sourceLocation: sourceLocation)
    var shown: [ChunkID: Set<Int>] = [:]
    for frame in rig.frames.all where !frame.content.overlays.isEmpty {
      if let chunk = frame.content.chunk, let index = frame.content.overlayIndex {
        shown[chunk, default: []].insert(index)
      }
    }
    // Messages are numbered by the client in the order they opened.
    let planned = spoken.enumerated().flatMap { message, entry in
      entry.mouthsPerChunk.enumerated().map { chunk, mouths in
        (ChunkID(message: MessageID(message), index: chunk), mouths)
      }
    }
    for (chunk, mouths) in planned {
      #expect(
        shown[chunk] == Set(0..<mouths), "\(chunk): \(shown[chunk]?.count ?? 0) of \(mouths) shown",
        sourceLocation: sourceLocation)
    }
    #expect(shown.count == planned.count, sourceLocation: sourceLocation)
    #expect(
      rig.audio.segments.map(\.chunk) == planned.map(\.0), sourceLocation: sourceLocation)
  }

  @Test(
    "a message plays idle → transition → talking → return → idle; every mouth once, audio on its first frame",
    arguments: [BinaryEncoding.base64, .binary])
  func fullMessage(encoding: BinaryEncoding) async throws {
    var rig = try await makeRig(encoding: encoding)
    try await say("Hello there, nice to meet you.", in: rig, ends: 1)
    rig.run(for: 8)
    checkClean(rig)
    expectPlanShown(rig)
    let metrics = rig.player.metrics
    #expect(metrics.chunksReceived >= 2)
    #expect(metrics.chunkReports.count == metrics.chunksReceived)
    for report in metrics.chunkReports {
      #expect(report.drawn == report.frames, "\(report)")
    }
    let modes = rig.frames.all.map(\.content.mode)
    var sequence: [EngineMode] = []
    for mode in modes where sequence.last != mode { sequence.append(mode) }
    #expect(
      sequence == [.idle, .transition, .talking, .finishing, .returning, .idle]
        || sequence == [.idle, .transition, .talking, .returning, .idle]
        || sequence == [.idle, .talking, .finishing, .returning, .idle])
    // Every chunk's audio, once, in order, each starting on its chunk's first frame.
    #expect(rig.audio.segments.map(\.chunk.index) == Array(0..<metrics.chunksReceived))
    for segment in rig.audio.segments {
      let first = rig.frames.all.first { $0.content.chunk == segment.chunk }
      #expect(first?.time == segment.start)
      #expect(first?.content.overlayIndex == 0)
    }
    await rig.stop()
  }

  /// The utterance's chunks last over a second: at ±5 % the audio drifts more than a frame from
  /// the frame clock within each, so lips that ignored the audio clock would be off by more
  /// than a frame.
  @Test(
    "with the audio clock skewed by ±5 %, lips stay within one frame of the sound",
    arguments: [-0.05, 0.05])
  func skewedAudio(skew: Double) async throws {
    var rig = try await makeRig(skew: skew)
    try await say("The quick brown fox.", in: rig, ends: 1)
    rig.run(for: 8)
    checkClean(rig)
    let segments = rig.audio.segments
    #expect(segments.count >= 2)
    #expect(segments.allSatisfy { ($0.duration ?? 0) * abs(skew) > 1.0 / 30 }, "drift past a frame")
    let drawn = rig.player.metrics.engine.overlayFramesDrawn
    #expect(drawn == rig.player.metrics.chunkReports.map(\.frames).reduce(0, +))
    // Every mouth is measured against the audio but the last one or two of a chunk whose faster
    // audio has already ended.
    let sync = rig.player.metrics.lipSync
    #expect(
      sync.count >= drawn - 2 * segments.count && sync.count <= drawn, "\(sync.count) of \(drawn)")
    #expect(sync.maxAbsolute < 1.0 / 30)
    await rig.stop()
  }

  @Test("a second message in the middle of speech interrupts cleanly")
  func interruption() async throws {
    var rig = try await makeRig()
    try await say("Hello there, nice to meet you.", in: rig, ends: 1)
    rig.run(for: 1.5)
    let first = try #require(
      rig.frames.all.last { $0.content.chunk != nil }?.content.chunk?.message)
    try await say("Good morning.", in: rig, ends: 2)
    let cut = rig.now
    rig.run(for: 10)
    #expect(!rig.frames.all.contains { $0.time > cut && $0.content.chunk?.message == first })
    #expect(rig.frames.all.contains { $0.time > cut && $0.content.chunk != nil })
    #expect(rig.audio.segments.contains { $0.chunk.message == first && $0.stoppedAt != nil })
    #expect(rig.player.metrics.engine.interrupts == 1)
    checkClean(rig)
    await rig.stop()
  }

  static let faultCases: [(String, BackendFaults)] = {
    var jitter = BackendFaults()
    jitter.eventDelay = 0.002
    jitter.jitter = 0.02
    var reorder = BackendFaults()
    reorder.reorderBatches = true
    var dropReady = BackendFaults()
    dropReady.dropChunkImagesReady = true
    return [
      ("jitter", jitter), ("reordered batches", reorder), ("no chunk_images_ready", dropReady),
    ]
  }()

  @Test("faults degrade gracefully and end in idle", arguments: faultCases)
  func faults(name: String, faults: BackendFaults) async throws {
    var rig = try await makeRig(faults: faults)
    try await say("Hello there, nice to meet you.", in: rig, ends: 1)
    rig.run(for: 8)
    checkClean(rig)
    expectPlanShown(rig)
    await rig.stop()
  }

  @Test("the backend's greeting (play_base_animation) plays with transitions in and out")
  func greeting() async throws {
    var rig = try await makeRig(greets: true)
    // The greeting's animations are downloaded after the request: virtual time runs only once
    // all are on disk and windowed (a download finishing during the run would ask for the window
    // from the client's thread while the ticks draw, and the inline decode is then not the
    // tick's: a base-frame miss the real-time product does not have).
    #expect(
      await until(rig.player.changes) {
        !rig.player.pendingAnimationRequests.isEmpty && rig.client.pendingDownloads == 0
          && rig.player.isPreloadIdle
      })
    rig.run(for: 6)
    let hi = try AnimationName(parsing: "hi_1_s_hi_1_e")
    let count = try #require(rig.backend.pack.frameCount(of: hi), "the pack has no greeting")
    #expect(count > 1)
    let drawn = rig.frames.all.filter { $0.content.animation == hi }.map(\.content.index)
    #expect(drawn == Array(0..<count))
    checkClean(rig)
    await rig.stop()
  }

  @Test(
    "a disconnect in the middle of a chunk: the client reconnects and the avatar returns to idle")
  func disconnectMidChunk() async throws {
    var faults = BackendFaults()
    faults.disconnectAfterEvents = 2  // receive_audio and the first image batch, then the cut
    var rig = try await makeRig(faults: faults)
    let states = rig.client.states
    try await rig.client.sendMessage("Hello there, nice to meet you.")
    // The connection drops and comes back; what came before the cut is decoded.
    let reconnected = await within(.seconds(30)) {
      var sawDrop = false
      for await state in states {
        if state == .connecting || state.isError { sawDrop = true }
        if sawDrop && state == .ready { return true }
      }
      return false
    }
    try #require(reconnected == true, "the client did not drop and come back within 30 s")
    #expect(
      await until(rig.player.changes) {
        rig.player.metrics.chunksReceived == 1 && rig.player.overlays.statistics.count > 0
          && rig.player.isIngestIdle
      })
    rig.run(for: 8)
    #expect(rig.player.metrics.engine.overlayFramesDrawn > 0)
    // What was presented has no pop or desync (judged on the frames, not the counters).
    let problems = Self.presentedProblems(rig.frames.all) { rig.backend.pack.frameCount(of: $0) }
    #expect(problems.isEmpty, "\(problems.prefix(3))")
    #expect(rig.player.metrics.engine.desyncs == 0)
    #expect(rig.player.mode == .idle)
    await rig.stop()
  }

  @Test(
    "the backend's older per-image variant plays every mouth, with its audio",
    arguments: [BinaryEncoding.base64, .binary])
  func legacyPerImage(encoding: BinaryEncoding) async throws {
    var rig = try await makeRig(encoding: encoding, legacy: true)
    try await say("Hello there, nice to meet you.", in: rig, ends: 1)
    rig.run(for: 8)
    checkClean(rig)
    expectPlanShown(rig)
    let metrics = rig.player.metrics
    #expect(metrics.rejections.isEmpty, "\(metrics.rejections)")
    #expect(metrics.chunkReports.count >= 2)
    for report in metrics.chunkReports { #expect(report.drawn == report.frames, "\(report)") }
    #expect(metrics.engine.mouthlessFrames == 0)
    #expect(rig.audio.segments.count == metrics.chunkReports.count)
    await rig.stop()
  }

  @Test("a message sent with POST /messages plays like one sent on the socket")
  func httpMessage() async throws {
    var rig = try await makeRig(http: true)
    try await say("Hello there, nice to meet you.", in: rig, ends: 1)
    rig.run(for: 8)
    checkClean(rig)
    #expect(rig.backend.messageCount == 1)
    expectPlanShown(rig)
    await rig.stop()
  }

  @Test(
    "a reconnect in the middle of a base-animation download requests it again and completes")
  func reconnectDuringDownload() async throws {
    var faults = BackendFaults()
    faults.disconnectDuringDownloadAfterFrames = 2
    let rig = try await makeRig(faults: faults)
    let all = rig.backend.pack.animations.count
    #expect(
      await until(rig.client.changes) {
        rig.client.pendingDownloads == 0 && rig.player.readyAnimations.count == all
      },
      "\(rig.player.readyAnimations.count) of \(all) animations, \(rig.client.pendingDownloads) pending"
    )
    await rig.stop()
  }

  static let connectionCases: [(SocketIOStatus, LIVAState?)] = [
    (.connecting, .connecting),
    (.reconnecting(attempt: 3, delay: .seconds(4)), .connecting),
    (.connected(sid: "x"), .ready),
    (.disconnected(.transportClose), .connecting),
    (.disconnected(.pingTimeout), .connecting),
    (.disconnected(.transportError("reset")), .connecting),
    (.disconnected(.clientDisconnect), .idle),
    (
      .disconnected(.serverDisconnect),
      .error(LIVAClientError(.connection, "the server closed the connection"))
    ),
    (
      .disconnected(.connectRefused("not authorized")),
      .error(LIVAClientError(.connection, "the server refused the connection: not authorized"))
    ),
    (.idle, nil),
  ]

  @Test(
    "connection statuses → states: transient drops read as connecting, only final ones as errors",
    arguments: connectionCases)
  func connectionStates(status: SocketIOStatus, expected: LIVAState?) {
    #expect(LIVAClient.state(after: status, speaking: false, idleAvailable: true) == expected)
  }
}

extension LIVAState {
  var isError: Bool {
    if case .error = self { return true }
    return false
  }
}
