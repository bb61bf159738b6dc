import Foundation
import LIVA
import LIVAMedia
import LIVAProtocol
import LIVARecording
import LIVAServer
import LIVATestSupport
import Locking
import Testing

@testable import liva

/// `liva record`: its options parsed into the session it records (in this process), and one
/// recording made by the executable against a reference backend in this process.
@Suite("liva record: options and output")
struct RecordTests {
  static let required = ["--server", "http://127.0.0.1:5000", "--user", "u", "--agent", "a"]

  @Test("every option reaches the session: connection, messages, size, output, budgets, forms")
  func options() throws {
    let record = try Record.parse([
      "--server", "http://10.0.0.7:5001", "--user", "user-1", "--agent", "agent/x", "--instance",
      "i-7", "--message", "one", "--message", "two", "--output", "takes/first", "--size", "320",
      "--frame-budget", "3", "--overlay-budget", "256", "--images-only", "--log-level", "debug",
    ])
    let options = try record.sessionOptions()
    #expect(options.messages == ["one", "two"])
    #expect(!options.greet)
    #expect(options.videoName == "recording.mp4")
    let workingFolder = FileManager.default.currentDirectoryPath
    #expect(options.output.standardizedFileURL.path == workingFolder + "/takes/first")
    #expect(options.logger.logLevel == .debug)

    let configuration = liva.configuration(options)
    #expect(configuration.serverURL == "http://10.0.0.7:5001")
    #expect(configuration.userID == "user-1")
    #expect(configuration.agentID == "agent/x")
    #expect(configuration.instanceID == "i-7")
    #expect(configuration.resolution == 320)
    #expect(configuration.decodedFrameByteLimit == 3 * 1_048_576)
    #expect(configuration.player.overlayByteLimit == 256 * 1024)
    #expect(configuration.player.playedOverlayByteLimit == 64 * 1024)  // a quarter
    #expect(!configuration.playbackForms)
    // Its own cache folder per agent (letters, digits, - and _ of its name) and size.
    #expect(
      configuration.cacheRoot.path
        == defaultCacheRoot().appendingPathComponent("record-agentx-320").path)
  }

  @Test("without the optional options, the SDK's defaults")
  func defaults() throws {
    let options = try Record.parse(Self.required + ["--message", "m"]).sessionOptions()
    let configuration = liva.configuration(options)
    let sdk = LIVAConfiguration(
      serverURL: "http://127.0.0.1:5000", userID: "u", agentID: "a",
      cacheRoot: URL(fileURLWithPath: "/"))
    #expect(configuration.instanceID == "default")
    #expect(configuration.resolution == 512)
    #expect(configuration.decodedFrameByteLimit == sdk.decodedFrameByteLimit)
    #expect(configuration.player.overlayByteLimit == sdk.player.overlayByteLimit)
    #expect(configuration.player.playedOverlayByteLimit == sdk.player.playedOverlayByteLimit)
    #expect(configuration.playbackForms)
    #expect(options.output.lastPathComponent == "liva-recording")
    #expect(options.logger.logLevel == .warning)
  }

  @Test("no message, or an unknown log level, is refused")
  func refused() throws {
    #expect(throws: (any Error).self) { try Record.parse(Self.required).sessionOptions() }
    #expect(throws: (any Error).self) {
      try Record.parse(Self.required + ["--message", "m", "--log-level", "loud"]).sessionOptions()
    }
  }

  /// The message recorded: its best match is `lovely-day` (2.0 s of speech in two chunks).
  static let text = "It's a lovely day"

  @Test(
    "a recording: connected as told, the message said, frames, audio, script and report in --output, the cache named by agent and size, no playback forms with --images-only",
    .enabled(if: livaBinary != nil || requireAllTools, "the liva executable is not built"))
  func recording() async throws {
    let pack = try await Cache.preparedPack()
    var configuration = BackendConfiguration()
    configuration.greets = false
    let backend = ReferenceBackend(
      pack: pack,
      synthesizer: SpeechSynthesizer(
        configuration: .init(allowsSynthesis: false), library: try UtteranceLibrary.bundled()),
      configuration: configuration)
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    let server = Task { try await backend.run(port: 0) { continuation.yield($0) } }
    defer { server.cancel() }
    var iterator = ports.makeAsyncIterator()
    let port = try #require(await iterator.next())
    // The connections' queries, read while the recorder is connected (for seconds): each poll
    // reads the server's sockets, the loop ends with the recorder.
    let queries = Locked<Set<[String: String]>>([])
    let spy = Task {
      while !Task.isCancelled {
        let seen = backend.socketServer.connectedSockets.map(\.query)
        queries.withLock { $0.formUnion(seen) }
        try await Task.sleep(for: .milliseconds(10))
      }
    }
    let output = Cache.root.appendingPathComponent("recording-\(UUID().uuidString)")
    let run = try await runLiva([
      "record", "--server", "http://127.0.0.1:\(port)", "--user", "rec-user", "--agent",
      "rec.agent", "--instance", "take-2", "--message", Self.text, "--output", output.path,
      "--size", "64", "--images-only",
    ])
    spy.cancel()
    #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")

    let connected = queries.withLock { $0 }
    #expect(!connected.isEmpty)
    for query in connected {
      #expect(query["user_id"] == "rec-user")
      #expect(query["agent_id"] == "rec.agent")
      #expect(query["instance_id"] == "take-2")
      #expect(query["userResolution"] == "64")
    }
    let spoken = backend.spokenMessages
    #expect(spoken.map(\.text) == [Self.text])
    #expect(spoken.allSatisfy { $0.streamedWhole })

    let report = try JSONDecoder().decode(
      SessionReport.self, from: Data(contentsOf: output.appendingPathComponent("report.json")))
    // Every chunk of the message was heard, its mouths shown.
    #expect(report.audioSegments.count == spoken.first?.mouthsPerChunk.count)
    #expect(report.overlayFramesDrawn > 0)
    // No ffmpeg on its PATH: the frames stay, numbered from 0, at the avatar's size, with the
    // audio chunks and the script that makes recording.mp4 of them.
    #expect(report.videoFrames > 0)
    let frames = Set(
      try FileManager.default.contentsOfDirectory(
        atPath: output.appendingPathComponent("frames").path))
    #expect(frames == Set((0..<report.videoFrames).map { String(format: "frame_%05d.png", $0) }))
    for name in ["frame_00000.png", String(format: "frame_%05d.png", report.videoFrames - 1)] {
      let image = try SystemImageCodec().decode(
        Data(contentsOf: output.appendingPathComponent("frames/" + name)))
      #expect(image.width == Cache.width && image.height == Cache.height)
    }
    let audio = try FileManager.default.contentsOfDirectory(
      atPath: output.appendingPathComponent("audio").path)
    #expect(audio.count == report.audioSegments.count)
    #expect(audio.allSatisfy { $0.hasSuffix(".mp3") })
    let script = try String(
      contentsOf: output.appendingPathComponent("make-mp4.sh"), encoding: .utf8)
    #expect(script.contains("'recording.mp4'"))

    // The client's cache: under the agent's name (letters and digits) and the size, with the
    // base frames and, with --images-only, no playback form.
    let cache = Cache.root.appendingPathComponent("record-recagent-64")
    let cached = try await offThePool { AvatarGenerateTests.files(under: cache) }
    #expect(
      cached.filter { $0.hasSuffix(".png") }.count
        == pack.animations.values.map(\.frames).reduce(0, +))
    #expect(!cached.contains { $0.hasSuffix(".h264v") })
  }
}
