import ArgumentParser
import CLIVAAllocator
import Foundation
import LIVA
import LIVAMedia
import LIVAProtocol
import LIVAServer
import Locking
import Logging

@main
struct Liva: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "liva",
    abstract: "LIVA talking avatars: a demo, a reference backend, a recorder.",
    subcommands: [
      Demo.self, Serve.self, Record.self, Avatar.self, BenchSession.self, BenchSocketIO.self,
      BenchBudgets.self,
    ])

  static func main() async {
    // bench-socketio measures the Socket.IO client as an app runs it: with the allocator's
    // defaults (a fixed mmap threshold maps and unmaps every base64 event's ~400 KB).
    // bench-budgets keeps them too, as Benchmarks/ (whose budgets it checks) runs.
    let untuned = [BenchSocketIO.configuration.commandName, BenchBudgets.configuration.commandName]
    if !untuned.contains(CommandLine.arguments.dropFirst().first) {
      tuneAllocator()
    }
    await main(nil)
  }

  /// glibc raises its mmap threshold to the size of each large block freed, so after the first
  /// decoded frame (1–4 MB) is let go, frames come from the heap and freed ones stay resident in
  /// fragments: the measured peak of `liva demo` at 1280×768 was 196 MiB with it and 137 MiB
  /// with a fixed threshold (64 MiB frame budget). A fixed 256 KiB threshold keeps every frame
  /// buffer in its own mapping, returned to the system when freed. Apps on Linux that embed
  /// the SDK can do the same (`mallopt`, or `MALLOC_MMAP_THRESHOLD_=262144`); Apple's allocator
  /// needs nothing.
  private static func tuneAllocator() {
    _ = liva_fix_mmap_threshold(256 << 10)  // 0 (nothing done) off glibc
  }
}

/// Where generated avatars and client caches live: `$LIVA_CACHE`, else `~/.cache/liva`.
func defaultCacheRoot() -> URL {
  if let path = ProcessInfo.processInfo.environment["LIVA_CACHE"], !path.isEmpty {
    return URL(fileURLWithPath: path)
  }
  return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/liva")
}

/// `--log-level`: the SDK's (and the backend's) log on standard error, from this level up.
struct LogOptions: ParsableArguments {
  @Option(
    help: ArgumentHelp(
      "Log to standard error from this level: trace, debug, info, notice, warning, error, critical.",
      valueName: "level"))
  var logLevel: String = "warning"

  func logger(_ label: String) throws -> Logger {
    guard let level = Logger.Level(rawValue: logLevel) else {
      throw ValidationError("unknown --log-level \(logLevel)")
    }
    var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = level
    return logger
  }
}

/// Prints a progress line at once (stdout is not always a terminal).
func progress(_ text: String) {
  FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// A frame size on the command line: `512` (square) or `1280x768`.
struct FrameSize: ExpressibleByArgument, CustomStringConvertible {
  var width: Int
  var height: Int

  init(width: Int, height: Int) {
    self.width = width
    self.height = height
  }

  init?(argument: String) {
    let parts = argument.lowercased().split(whereSeparator: { $0 == "x" || $0 == "×" })
    guard (1...2).contains(parts.count), let width = Int(parts[0]),
      let height = Int(parts.last ?? parts[0]), width > 0, height > 0
    else { return nil }
    self.init(width: width, height: height)
  }

  var description: String { width == height ? "\(width)" : "\(width)x\(height)" }
  /// `userResolution`: the longer side.
  var resolution: Int { max(width, height) }
}

/// Generates (or reuses) the sample avatar, with progress output.
func sampleAvatar(size: FrameSize, photographic: Bool = false, cacheRoot: URL) throws
  -> AvatarPack
{
  let avatar = try SampleAvatar(
    configuration: .init(width: size.width, height: size.height, photographic: photographic))
  let reported = Counter()
  return try avatar.cachedPack(in: cacheRoot.appendingPathComponent("avatars")) { done, total in
    let percent = total == 0 ? 100 : done * 100 / total
    if reported.advance(to: percent / 10) { progress("  drawing the sample avatar: \(percent) %") }
  }
}

/// A monotonic step counter for throttled progress output.
final class Counter: Sendable {
  private let value = Locked(-1)

  /// Moves to `step`; returns whether it is a new step.
  func advance(to step: Int) -> Bool {
    value.withLock {
      guard step > $0 else { return false }
      $0 = step
      return true
    }
  }
}

struct Demo: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract:
      "The main job: serve the sample avatar on loopback, connect a real client, have it speak, record demo.mp4 and a report."
  )

  @Option(help: "Where demo.mp4 (or the frames and audio), report.json go.")
  var output = "liva-demo"

  @Option(help: "The sample avatar's frame size: 512 (square) or 1280x768; the video follows it.")
  var size = FrameSize(width: 512, height: 512)

  @Option(help: "Clock skew of the headless audio output (e.g. 0.01 for 1 % fast), to test sync.")
  var audioSkew = 0.0

  @Option(parsing: .singleValue, help: "A sentence to say (repeat for several; default: three).")
  var say: [String] = []

  @Flag(help: "Send images and audio as binary attachments instead of base64.")
  var binary = false

  @Option(
    help:
      "Memory for decoded base frames, in MiB (LIVAConfiguration.decodedFrameByteLimit); default: the SDK's."
  )
  var frameBudget: Int?

  @Flag(
    help:
      "Decode base frames from their images, without the H.264 playback form (LIVAConfiguration.playbackForms = false)."
  )
  var imagesOnly = false

  @OptionGroup var log: LogOptions

  func run() async throws {
    let cacheRoot = defaultCacheRoot()
    progress(
      "liva demo: preparing the sample avatar (\(size.width)×\(size.height)) in \(cacheRoot.path)")
    let pack = try sampleAvatar(size: size, cacheRoot: cacheRoot)
    var backendConfiguration = BackendConfiguration()
    backendConfiguration.encoding = binary ? .binary : .base64
    let synthesizer = SpeechSynthesizer(library: try UtteranceLibrary.bundled())
    progress(
      synthesizer.canSynthesize
        ? "  speech: synthesized with espeak-ng and lame"
        : "  speech: pre-made utterances (install espeak-ng, lame and python3 to synthesize any text)"
    )
    let backend = ReferenceBackend(
      pack: pack, synthesizer: synthesizer, configuration: backendConfiguration,
      logger: try log.logger("liva.backend"))
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    let server = Task { try await backend.run(port: 0) { continuation.yield($0) } }
    defer { server.cancel() }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else {
      throw ValidationError("the backend did not start")
    }
    progress("  reference backend on http://127.0.0.1:\(port)")
    let sentences =
      say.isEmpty
      ? [
        "Hello there, nice to meet you.", "The quick brown fox jumps over the lazy dog.",
        "Thank you for watching this demo.",
      ] : say
    let session = SessionOptions(
      serverURL: "http://127.0.0.1:\(port)", userID: "demo", agentID: "sample",
      resolution: size.resolution, cacheRoot: cacheRoot.appendingPathComponent("client-\(size)"),
      cacheServerIdentity: "liva-demo-sample-avatar", output: URL(fileURLWithPath: output),
      messages: sentences, greet: true, audioSkew: audioSkew,
      frameBudget: frameBudget.map { $0 << 20 }, playbackForms: !imagesOnly,
      spokenMessages: { backend.spokenMessages }, pack: pack, logger: try log.logger("liva"))
    try await runSession(session)
  }
}

struct Record: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract:
      "Connect to any LIVA backend, send a message, record what the SDK renders and write the report."
  )

  @Option(help: "The backend's URL, e.g. http://127.0.0.1:5000.")
  var server: String

  @Option(help: "user_id of the connection.")
  var user: String

  @Option(help: "agent_id: which avatar.")
  var agent: String

  @Option(help: "instance_id of the connection.")
  var instance = "default"

  @Option(parsing: .singleValue, help: "The message to send (repeat for several).")
  var message: [String]

  @Option(help: "Where the video (or frames and audio) and report.json go.")
  var output = "liva-recording"

  @Option(help: "Canvas size asked of the server, and output size.")
  var size = 512

  @Option(
    help:
      "Memory for decoded base frames, in MiB (LIVAConfiguration.decodedFrameByteLimit); default: the SDK's."
  )
  var frameBudget: Int?

  @Option(
    help:
      "Memory for decoded mouths, in KiB (LIVAPlayer.Configuration.overlayByteLimit; a quarter of it for mouths already played); default: the SDK's."
  )
  var overlayBudget: Int?

  @Flag(
    help:
      "Decode base frames from their images, without the H.264 playback form (LIVAConfiguration.playbackForms = false)."
  )
  var imagesOnly = false

  @OptionGroup var log: LogOptions

  func run() async throws {
    try await runSession(sessionOptions())
  }

  /// The session these options ask for: what `run` records.
  func sessionOptions() throws -> SessionOptions {
    guard !message.isEmpty else { throw ValidationError("give at least one --message") }
    let safeAgent = agent.filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
    return SessionOptions(
      serverURL: server, userID: user, agentID: agent, instanceID: instance, resolution: size,
      cacheRoot: defaultCacheRoot().appendingPathComponent("record-\(safeAgent)-\(size)"),
      output: URL(fileURLWithPath: output), messages: message, greet: false, audioSkew: 0,
      videoName: "recording.mp4", frameBudget: frameBudget.map { $0 << 20 },
      overlayBudget: overlayBudget.map { $0 << 10 }, playbackForms: !imagesOnly,
      logger: try log.logger("liva"))
  }
}

struct Serve: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Run the reference backend with the sample avatar, for apps and other clients.")

  @Option(help: "Address to listen on.")
  var host = "127.0.0.1"

  @Option(help: "Port to listen on.")
  var port = 5000

  @Option(help: "Sample avatar frame size: 512 (square) or 1280x768.")
  var size = FrameSize(width: 512, height: 512)

  @Flag(help: "Send images and audio as binary attachments instead of base64.")
  var binary = false

  @Option(help: "Fault: milliseconds to wait before each speech event.")
  var delay = 0.0

  @Option(help: "Fault: up to this many more milliseconds, at random.")
  var jitter = 0.0

  @Flag(help: "Fault: send each chunk's image batches reversed, before its audio.")
  var reorder = false

  @Flag(help: "Fault: never send chunk_images_ready.")
  var dropReady = false

  @Option(help: "Fault: close the connection after this many speech events of a message.")
  var disconnectAfter: Int?

  @Flag(
    help:
      "Send speech in the older per-image variant: animation_chunk_metadata, receive_frame_image, an audio-only receive_audio."
  )
  var legacyImages = false

  @OptionGroup var log: LogOptions

  func run() async throws {
    let pack = try sampleAvatar(size: size, cacheRoot: defaultCacheRoot())
    var configuration = BackendConfiguration()
    configuration.encoding = binary ? .binary : .base64
    configuration.faults.eventDelay = delay / 1000
    configuration.faults.jitter = jitter / 1000
    configuration.faults.reorderBatches = reorder
    configuration.faults.dropChunkImagesReady = dropReady
    configuration.faults.disconnectAfterEvents = disconnectAfter
    configuration.legacyPerImage = legacyImages
    let backend = ReferenceBackend(
      pack: pack, synthesizer: SpeechSynthesizer(library: try UtteranceLibrary.bundled()),
      configuration: configuration, logger: try log.logger("liva.backend"))
    try await backend.run(host: host, port: port) { bound in
      progress(
        "liva serve: the sample avatar (agent_id any) on http://\(host):\(bound) — Ctrl-C to stop")
    }
  }
}

struct Avatar: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "The sample avatar.", subcommands: [Generate.self])

  struct Generate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Write the sample avatar pack (PNG base frames, WebP mouths, a manifest).")

    @Option(help: "Where to write the pack.")
    var output = "sample-avatar"

    @Option(help: "Frame size: 512 (square) or 1280x768 (the production set of 15 animations).")
    var size = FrameSize(width: 512, height: 512)

    func run() async throws {
      let avatar = try SampleAvatar(configuration: .init(width: size.width, height: size.height))
      let target = URL(fileURLWithPath: output)
      let reported = Counter()
      progress("liva avatar generate: \(size.width)×\(size.height) into \(target.path)")
      try avatar.write(to: target) { done, total in
        let percent = total == 0 ? 100 : done * 100 / total
        if reported.advance(to: percent / 10) { progress("  \(percent) %") }
      }
      let pack = try AvatarPack(loadingFrom: target)
      progress("  done: \(pack.animations.count) animations, \(try pack.verify()) files checked")
    }
  }
}
