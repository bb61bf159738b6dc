import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import LIVAServer
import SocketIO
import Testing

@testable import LIVA

/// The client against the reference backend over real loopback Socket.IO. The network runs in
/// real time; the display runs on a virtual clock that only moves once what was sent has
/// arrived and been decoded, so playback is deterministic.
@Suite("End to end: LIVAClient ↔ reference backend", .serialized)
struct EndToEndTests {
  final class Frames: @unchecked Sendable {
    // @unchecked: the virtual display link presents on the test's task only.
    var all: [RenderedFrame] = []
  }

  struct Rig {
    let backend: ReferenceBackend
    let server: Task<Void, any Error>
    let client: LIVAClient
    let link: VirtualDisplayLink
    let audio: HeadlessAudioOutput
    let frames: Frames
    var now = 0.0

    var player: LIVAPlayer { client.player }

    mutating func run(for seconds: Double) {
      link.run(from: now, to: now + seconds)
      now += seconds
    }

    func stop() async {
      await client.disconnect()
      server.cancel()
      _ = await server.result
    }
  }

  static let packRoot = FileManager.default.temporaryDirectory.appendingPathComponent(
    "liva-e2e-packs")

  static func pack() throws -> AvatarPack {
    try SampleAvatar(configuration: .init(width: 96, height: 96)).cachedPack(in: packRoot)
  }

  func makeRig(
    faults: BackendFaults = .init(), encoding: BinaryEncoding = .base64, skew: Double = 0,
    greets: Bool = false, legacy: Bool = false, http: Bool = false
  ) async throws -> Rig {
    var configuration = BackendConfiguration()
    configuration.legacyPerImage = legacy
    configuration.greets = greets
    configuration.encoding = encoding
    configuration.faults = faults
    let synthesizer = SpeechSynthesizer(
      configuration: .init(allowsSynthesis: false), library: try UtteranceLibrary.bundled())
    let backend = ReferenceBackend(
      pack: try Self.pack(), synthesizer: synthesizer, configuration: configuration)
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    let server = Task { try await backend.run(port: 0) { continuation.yield($0) } }
    var iterator = ports.makeAsyncIterator()
    let port = try #require(await iterator.next())
    var clientConfiguration = LIVAConfiguration(
      serverURL: "http://127.0.0.1:\(port)", userID: "user", agentID: "sample",
      cacheRoot: FileManager.default.temporaryDirectory.appendingPathComponent(
        "liva-e2e-\(UUID().uuidString)"))
    clientConfiguration.resolution = 96
    // Decoding keeps up with virtual time.
    clientConfiguration.decodeScheduler = InlineDecodeScheduler()
    clientConfiguration.sendMessagesOverHTTP = http
    clientConfiguration.reconnection.initialDelay = .milliseconds(50)
    let link = VirtualDisplayLink()
    let audio = HeadlessAudioOutput(clockSkew: skew)
    let frames = Frames()
    let client = try LIVAClient(
      configuration: clientConfiguration, displayLink: link, audio: audio,
      surface: CallbackSurface { frames.all.append($0) })
    await client.connect()
    let ready = await eventually {
      client.state == .ready && client.pendingDownloads == 0
        && client.player.readyAnimations.count >= 6 && client.player.isPreloadIdle
    }
    try #require(ready, "the client never became ready: \(client.state)")
    link.tick(at: 0)
    return Rig(
      backend: backend, server: server, client: client, link: link, audio: audio, frames: frames)
  }

  /// Sends a message and waits until all of it has arrived and been decoded.
  func say(_ text: String, in rig: Rig, expectedEnds: Int) async throws {
    try await rig.client.sendMessage(text)
    let delivered = await eventually {
      rig.player.metrics.audioEndsReceived >= expectedEnds && rig.player.isIngestIdle
    }
    try #require(delivered, "the message did not arrive")
  }

  func checkClean(_ rig: Rig, sourceLocation: SourceLocation = #_sourceLocation) {
    let metrics = rig.player.metrics
    #expect(metrics.engine.desyncs == 0, sourceLocation: sourceLocation)
    #expect(metrics.engine.pops == 0, sourceLocation: sourceLocation)
    #expect(metrics.baseFrameMisses == 0, sourceLocation: sourceLocation)
    #expect(rig.player.mode == .idle, sourceLocation: sourceLocation)
  }

  @Test(
    "a message plays idle → transition → talking → return → idle; every mouth once, audio on its first frame",
    arguments: [BinaryEncoding.base64, .binary])
  func fullMessage(encoding: BinaryEncoding) async throws {
    var rig = try await makeRig(encoding: encoding)
    try await say("Hello there, nice to meet you.", in: rig, expectedEnds: 1)
    rig.run(for: 8)
    checkClean(rig)
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
    for segment in rig.audio.segments {
      let first = rig.frames.all.first { $0.content.chunk == segment.chunk }
      #expect(first?.time == segment.start)
      #expect(first?.content.overlayIndex == 0)
    }
    await rig.stop()
  }

  @Test(
    "with the audio clock skewed by ±1 %, lips stay within one frame of the sound",
    arguments: [-0.01, 0.01])
  func skewedAudio(skew: Double) async throws {
    var rig = try await makeRig(skew: skew)
    try await say("The quick brown fox.", in: rig, expectedEnds: 1)
    rig.run(for: 8)
    checkClean(rig)
    let sync = rig.player.metrics.lipSync
    #expect(sync.count > 40)
    #expect(sync.maxAbsolute <= 1.0 / 30 + 1e-9)
    await rig.stop()
  }

  @Test("a second message in the middle of speech interrupts cleanly")
  func interruption() async throws {
    var rig = try await makeRig()
    try await say("Hello there, nice to meet you.", in: rig, expectedEnds: 1)
    rig.run(for: 1.5)
    let first = try #require(
      rig.frames.all.last { $0.content.chunk != nil }?.content.chunk?.message)
    try await say("Good morning.", in: rig, expectedEnds: 2)
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
    try await say("Hello there, nice to meet you.", in: rig, expectedEnds: 1)
    rig.run(for: 8)
    checkClean(rig)
    #expect(rig.player.metrics.engine.overlayFramesDrawn > 40, "\(name)")
    await rig.stop()
  }

  @Test("the backend's greeting (play_base_animation) plays with transitions in and out")
  func greeting() async throws {
    var rig = try await makeRig(greets: true)
    #expect(
      await eventually { !rig.player.pendingAnimationRequests.isEmpty && rig.player.isPreloadIdle })
    rig.run(for: 6)
    let hi = try AnimationName(parsing: "hi_1_s_hi_1_e")
    let drawn = rig.frames.all.filter { $0.content.animation == hi }.map(\.content.index)
    #expect(drawn == Array(0..<(rig.backend.pack.frameCount(of: hi) ?? 0)))
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
    var sawDrop = false
    for await state in states {
      if state == .connecting || state.isError { sawDrop = true }
      if sawDrop && state == .ready { break }
    }
    #expect(
      await eventually {
        rig.player.metrics.chunksReceived == 1 && rig.player.overlays.statistics.count > 0
          && rig.player.isIngestIdle
      })
    rig.run(for: 8)
    #expect(rig.player.metrics.engine.overlayFramesDrawn > 0)
    #expect(rig.player.metrics.engine.desyncs == 0)
    #expect(rig.player.mode == .idle)
    await rig.stop()
  }

  @Test(
    "the backend's older per-image variant plays every mouth, with its audio",
    arguments: [BinaryEncoding.base64, .binary])
  func legacyPerImage(encoding: BinaryEncoding) async throws {
    var rig = try await makeRig(encoding: encoding, legacy: true)
    try await say("Hello there, nice to meet you.", in: rig, expectedEnds: 1)
    rig.run(for: 8)
    checkClean(rig)
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
    try await say("Hello there, nice to meet you.", in: rig, expectedEnds: 1)
    rig.run(for: 8)
    checkClean(rig)
    #expect(rig.backend.messageCount == 1)
    #expect(rig.player.metrics.engine.overlayFramesDrawn > 40)
    await rig.stop()
  }

  @Test(
    "B5: a reconnect in the middle of a base-animation download requests it again and completes")
  func reconnectDuringDownload() async throws {
    var faults = BackendFaults()
    faults.disconnectDuringDownloadAfterFrames = 2
    let rig = try await makeRig(faults: faults)
    let all = rig.backend.pack.animations.count
    #expect(
      await eventually {
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
    "B8: connection statuses → states: transient drops read as connecting, only final ones as errors",
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
