import Foundation
import LIVA
import LIVAMedia
import LIVAServer
import LIVATestSupport
import Testing

/// The frames a client presented.
final class Frames: @unchecked Sendable {
  // @unchecked: the virtual display link presents on the test's task only.
  var all: [RenderedFrame] = []
}

/// The reference backend on loopback as these suites run it: the sample avatar at 96 px (its
/// pack cached under the temporary directory), the bundled utterances without synthesis, on
/// `port` (0: a free one; a port used before, to come back on it). `configure` sets the rest
/// of its configuration: greeting (off unless set), encoding, faults, the legacy protocol.
struct TestBackend {
  let backend: ReferenceBackend
  let task: Task<Void, any Error>
  /// The port it listens on.
  let port: Int

  static func start(
    port: Int = 0, _ configure: (inout BackendConfiguration) -> Void = { _ in }
  ) async throws -> TestBackend {
    var configuration = BackendConfiguration()
    configuration.greets = false
    configure(&configuration)
    let synthesizer = SpeechSynthesizer(
      configuration: .init(allowsSynthesis: false), library: try UtteranceLibrary.bundled())
    let backend = ReferenceBackend(
      pack: try EndToEndTests.pack(), synthesizer: synthesizer, configuration: configuration)
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    let task = Task { try await backend.run(port: port) { continuation.yield($0) } }
    var iterator = ports.makeAsyncIterator()
    let bound = try #require(await iterator.next())
    return TestBackend(backend: backend, task: task, port: bound)
  }

  /// Stops it and waits until it stopped.
  func stop() async {
    task.cancel()
    _ = await task.result
  }
}

/// A client of the backend on loopback `port` as these suites make one: user `user`, agent
/// `sample`, 96 px, a cache of its own under the temporary directory (`cache`: its folder's
/// prefix), decoding inline (so decoding keeps up with virtual time), on `link` and `audio`,
/// presenting into `frames` (if given). `configure` sets the rest: reconnection, auth,
/// messages over HTTP, the answer timeout.
func makeClient(
  port: Int, cache: String, link: VirtualDisplayLink = VirtualDisplayLink(),
  audio: HeadlessAudioOutput = HeadlessAudioOutput(), frames: Frames? = nil,
  configure: (inout LIVAConfiguration) -> Void = { _ in }
) throws -> LIVAClient {
  var configuration = LIVAConfiguration(
    serverURL: "http://127.0.0.1:\(port)", userID: "user", agentID: "sample",
    cacheRoot: FileManager.default.temporaryDirectory.appendingPathComponent(
      "\(cache)-\(UUID().uuidString)"))
  configuration.resolution = 96
  configuration.decodeScheduler = InlineDecodeScheduler()
  configure(&configuration)
  return try LIVAClient(
    configuration: configuration, displayLink: link, audio: audio,
    surface: CallbackSurface { frame in frames?.all.append(frame) })
}

/// A client ready to speak with a backend (the reference backend, python-socketio's), on a
/// virtual display clock the test moves (``run(for:)``) once what was sent has arrived.
struct ClientRig<Backend> {
  let backend: Backend
  let client: LIVAClient
  let link: VirtualDisplayLink
  let audio: HeadlessAudioOutput
  let frames: Frames
  /// What the backend said lately, for failure messages ("" when it says nothing).
  let backendSaid: () -> String
  /// Stops the backend (after the client disconnected).
  let stopBackend: () async -> Void
  var now = 0.0

  var player: LIVAPlayer { client.player }

  mutating func run(for seconds: Double) {
    link.run(from: now, to: now + seconds)
    now += seconds
  }

  func stop() async {
    await client.disconnect()
    await stopBackend()
  }
}

/// Connects a client of `backend` (listening on `port`; `makeClient`'s `cache` and
/// `configure`, reconnecting after 50 ms, its audio clock `skew` off the display's) and waits
/// until it is ready to speak: connected, nothing left to download, the six animations in,
/// the preload idle; then the display's first tick, at 0. A client not ready within 30 s is
/// disconnected, the backend stopped, and the test fails saying where the client was and
/// what the backend said.
func connectRig<Backend>(
  to backend: Backend, port: Int, cache: String, skew: Double = 0,
  backendSaid: @escaping () -> String = { "" }, stopBackend: @escaping () async -> Void,
  configure: (inout LIVAConfiguration) -> Void = { _ in }
) async throws -> ClientRig<Backend> {
  let link = VirtualDisplayLink()
  let audio = HeadlessAudioOutput(clockSkew: skew)
  let frames = Frames()
  let client = try makeClient(
    port: port, cache: cache, link: link, audio: audio, frames: frames
  ) { configuration in
    configuration.reconnection.initialDelay = .milliseconds(50)
    configure(&configuration)
  }
  await client.connect()
  let ready = await until(client.changes) {
    client.state == .ready && client.pendingDownloads == 0
      && client.player.readyAnimations.count >= 6 && client.player.isPreloadIdle
  }
  if !ready {
    await client.disconnect()
    await stopBackend()
  }
  try #require(
    ready,
    "the client was not ready within 30 s: \(client.state), \(client.pendingDownloads) downloads pending, \(client.player.readyAnimations.count) animations ready\(backendSaid())"
  )
  link.tick(at: 0)
  return ClientRig(
    backend: backend, client: client, link: link, audio: audio, frames: frames,
    backendSaid: backendSaid, stopBackend: stopBackend)
}

/// Sends `text` and waits (30 s at most) until `ends` audio_end have arrived in all and all
/// that was received has been decoded.
func say<Backend>(_ text: String, in rig: ClientRig<Backend>, ends: Int) async throws {
  try await rig.client.sendMessage(text)
  let delivered = await until(rig.player.changes) {
    rig.player.metrics.audioEndsReceived >= ends && rig.player.isIngestIdle
  }
  try #require(
    delivered,
    "the message did not arrive within 30 s: \(rig.player.metrics.audioEndsReceived) of \(ends) audio_end, ingest idle: \(rig.player.isIngestIdle)\(rig.backendSaid())"
  )
}

extension ClientRig where Backend == PythonProcess {
  /// The mouths per chunk the backend planned for `message` (its `PLAN` line); a backend that
  /// printed no plan, or an empty one, fails the test rather than compare empty with empty.
  func plan(_ message: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws
    -> [Int]
  {
    let line = try #require(
      await backend.waitForLine(startingWith: "PLAN \(message) "),
      "the backend printed no plan for message \(message)", sourceLocation: sourceLocation)
    let plan = line.split(separator: " ").last.map {
      $0.split(separator: ",").compactMap { Int($0) }
    }
    return try #require(
      plan.flatMap { $0.isEmpty ? nil : $0 }, "an empty plan: \(line)",
      sourceLocation: sourceLocation)
  }
}
