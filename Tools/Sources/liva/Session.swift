import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import LIVARecording
import LIVAServer
import Logging

/// What one recorded session connects to and says.
struct SessionOptions {
  var serverURL: String
  var userID: String
  var agentID: String
  var instanceID = "default"
  var resolution: Int
  var cacheRoot: URL
  /// `LIVAConfiguration.cacheServerIdentity`: the demo's backend listens on a new port each run.
  var cacheServerIdentity: String?
  var output: URL
  var messages: [String]
  var greet: Bool
  var audioSkew: Double
  /// The video's file name inside `output`.
  var videoName = "demo.mp4"
  /// `LIVAConfiguration.decodedFrameByteLimit`, when not the default.
  var frameBudget: Int?
  /// `LIVAPlayer.Configuration.overlayByteLimit`, when not the default (a quarter of it for
  /// played mouths).
  var overlayBudget: Int?
  /// `LIVAConfiguration.playbackForms`.
  var playbackForms = true
  /// The speech the backend planned, when it runs in this process (the demo): the report
  /// carries it, so that what was shown can be checked against what was sent.
  var spokenMessages: (@Sendable () -> [ReferenceBackend.SpokenMessage])?
  /// The pack that backend speaks from (the demo): the mouths it sent for the messages it
  /// streamed whole are written beside the video (`mouths/`, see ``writePlannedMouths``).
  var pack: AvatarPack?
  /// Where the SDK logs (`--log-level`).
  var logger = Logger(label: "liva", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// A display link that runs another one and, after each tick's handler, an extra step (the
/// recorder's sampling).
final class SamplingDisplayLink: DisplayLink {
  private let base: any DisplayLink
  private let after: @Sendable (Double) -> Void

  init(_ base: any DisplayLink, after: @escaping @Sendable (Double) -> Void) {
    self.base = base
    self.after = after
  }

  func start(_ onTick: @escaping @Sendable (Double) -> Void) {
    let after = after
    base.start { time in
      onTick(time)
      after(time)
    }
  }

  func stop() { base.stop() }
}

/// A surface that shows nothing (the warm-up connection).
final class NullSurface: RenderSurface {
  var retainedFrames: Int { 0 }
  func present(_ frame: RenderedFrame) {}
}

func configuration(_ options: SessionOptions) -> LIVAConfiguration {
  var configuration = LIVAConfiguration(
    serverURL: options.serverURL, userID: options.userID, agentID: options.agentID,
    cacheRoot: options.cacheRoot)
  configuration.instanceID = options.instanceID
  configuration.cacheServerIdentity = options.cacheServerIdentity
  configuration.resolution = options.resolution
  configuration.logger = options.logger
  if let budget = options.frameBudget { configuration.decodedFrameByteLimit = budget }
  configuration.playbackForms = options.playbackForms
  if let budget = options.overlayBudget {
    configuration.player.overlayByteLimit = budget
    configuration.player.playedOverlayByteLimit = budget / 4
  }
  return configuration
}

/// Connects, downloads what the cache lacks, and waits until every animation is in.
func connectAndLoad(_ client: LIVAClient) async throws {
  await client.connect()
  let ready = await client.changes.wait(timeout: .seconds(120)) {
    client.state == .ready && client.pendingDownloads == 0
  }
  guard ready else {
    throw SessionError("the backend did not deliver the avatar (state \(client.state))")
  }
}

struct SessionError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Runs a recorded session: a warm-up connection when the cache is cold, then the recorded
/// client in real time; then the video, the audio track and the report.
func runSession(_ options: SessionOptions) async throws {
  let fileManager = FileManager.default
  try fileManager.createDirectory(at: options.output, withIntermediateDirectories: true)
  // The client keeps this avatar's frames in its own directory under the cache root.
  let cacheDirectory = configuration(options).cacheDirectory
  let probe = try BaseFrameStore(root: cacheDirectory)
  let warm = probe.isAvailable(.idleForward)
  if !warm {
    progress("  cold cache: downloading the avatar once into \(options.cacheRoot.path)")
    // Its waits (a download's retry, the manifest's) run on the display clock: it ticks.
    let warmUp = try LIVAClient(
      configuration: configuration(options), displayLink: RealTimeDisplayLink(hz: 10),
      audio: HeadlessAudioOutput(), surface: NullSurface())
    try await connectAndLoad(warmUp)
    await warmUp.disconnect()
    // A warm cache has its playback forms too (the store makes them in the background after
    // each download; here at once, after every download has ended, so the recorded client's
    // session neither shares the CPU with making them nor holds the encoder's memory).
    let made = warmUp.player.baseFrames.makePlaybackForms()
    if !made.isEmpty { progress("  playback forms made for \(made.count) animations") }
  }
  // The recorded client starts with a warm cache: the one the report's start-up time is for.
  let warmNow = try BaseFrameStore(root: cacheDirectory).isAvailable(.idleForward)

  let framesDirectory = options.output.appendingPathComponent("frames")
  try? fileManager.removeItem(at: framesDirectory)
  let recorder = try RecordingSurface(directory: framesDirectory)
  let audio = HeadlessAudioOutput(clockSkew: options.audioSkew)
  let link = SamplingDisplayLink(RealTimeDisplayLink(hz: 60)) { recorder.sample(at: $0) }
  let client = try LIVAClient(
    configuration: configuration(options), displayLink: link, audio: audio, surface: recorder)
  progress("  connecting to \(options.serverURL)")
  try await connectAndLoad(client)
  let player = client.player
  try await Task.sleep(for: .milliseconds(800))
  if options.greet, let hi = try? AnimationName(parsing: "hi_1_s_hi_1_e"),
    player.readyAnimations.contains(hi)
  {
    // A backend that greets sends play_base_animation once the greeting is downloaded; with a
    // warm cache nothing is downloaded, so ask for it here unless it is already playing.
    progress("  waving hello")
    if player.mode == .idle { client.play(hi) }
    _ = await player.changes.wait(timeout: .seconds(3)) { player.mode != .idle }
    _ = await player.changes.wait(timeout: .seconds(10)) { player.mode == .idle }
  }
  for (number, text) in options.messages.enumerated() {
    progress("  saying (\(number + 1)/\(options.messages.count)): \(text)")
    try await client.sendMessage(text)
    let started = await player.changes.wait(timeout: .seconds(30)) {
      player.metrics.audioEndsReceived > number && player.mode != .idle
    }
    if !started { progress("  (no speech came back for this message)") }
    _ = await player.changes.wait(timeout: .seconds(60)) { player.mode == .idle }
    try await Task.sleep(for: .milliseconds(700))
  }
  await client.disconnect()
  link.stop()
  progress("  encoding frames")
  let videoFrames = recorder.finish()
  let metrics = client.metrics
  try writeMedia(options: options, recorder: recorder, audio: audio)
  var report = SessionReport(
    metrics: metrics, warmCache: warmNow, timeline: recorder.timeline, videoFrames: videoFrames,
    outputLipSync: OutputLipSync.measure(
      mouths: recorder.videoMouths, segments: audio.segments, origin: recorder.origin ?? 0,
      videoRate: recorder.videoRate), videoMotion: recorder.videoMotion,
    audioSegments: audio.segments, audioClockSkew: audio.clockSkew)
  if let spoken = options.spokenMessages?() {
    report.plannedMouthsPerChunk = spoken.filter(\.streamedWhole).map(\.mouthsPerChunk)
    report.messagesCutByBackend = spoken.count(where: { !$0.streamedWhole })
    if let pack = options.pack {
      try writePlannedMouths(
        spoken.filter(\.streamedWhole), pack: pack,
        to: options.output.appendingPathComponent("mouths"))
    }
  }
  let encoder = JSONEncoder()
  encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
  try encoder.encode(report).write(to: options.output.appendingPathComponent("report.json"))
  progress("\nReport (\(options.output.appendingPathComponent("report.json").path)):")
  progress(report.summary)
}

/// What the backend sent of one planned mouth, as `mouths/plan.json` lists it.
private struct PlannedMouth: Encodable {
  /// The overlay id; the sprite's bytes are in `mouths/<overlay>`.
  var overlay: String
  /// Where the sprite goes on the base frame: `[x, y, width, height]`.
  var rect: [Int]
  /// The mouth shape (`X` is the mouth at rest).
  var viseme: String
}

/// Writes the mouths the backend planned, so that the video's pictures can be checked against
/// them without the recorder's own account of what it drew: `plan.json` (`{"messages": [[[
/// PlannedMouth ]]]}`: per message streamed whole, per chunk, each mouth in playback order)
/// and every sprite it names, the WebP bytes the backend sent, at `<overlay id>`.
func writePlannedMouths(
  _ messages: [ReferenceBackend.SpokenMessage], pack: AvatarPack, to directory: URL
) throws {
  let fileManager = FileManager.default
  try? fileManager.removeItem(at: directory)
  try fileManager.createDirectory(at: directory, withIntermediateDirectories: true)
  var written = Set<String>()
  var plan: [[[PlannedMouth]]] = []
  for message in messages {
    plan.append(
      try message.framesPerChunk.map { frames in
        try frames.map { frame in
          if written.insert(frame.overlayID).inserted {
            let url = directory.appendingPathComponent(frame.overlayID)
            try fileManager.createDirectory(
              at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try pack.overlayData(frame.animation, frame: frame.baseFrame, viseme: frame.viseme)
              .write(to: url)
          }
          let rect = frame.rect
          return PlannedMouth(
            overlay: frame.overlayID, rect: [rect.x, rect.y, rect.width, rect.height],
            viseme: frame.viseme.rawValue)
        }
      })
  }
  try JSONEncoder().encode(["messages": plan]).write(
    to: directory.appendingPathComponent("plan.json"))
}

/// Writes the audio track's pieces and muxes the video with ffmpeg when it is installed;
/// otherwise leaves the frames, the audio and a script that makes the MP4.
func writeMedia(options: SessionOptions, recorder: RecordingSurface, audio: HeadlessAudioOutput)
  throws
{
  let fileManager = FileManager.default
  let audioDirectory = options.output.appendingPathComponent("audio")
  try? fileManager.removeItem(at: audioDirectory)
  try fileManager.createDirectory(at: audioDirectory, withIntermediateDirectories: true)
  let origin = recorder.origin ?? 0
  var inputs: [String] = []
  var filters: [String] = []
  for (number, segment) in audio.segments.enumerated() {
    let name = "chunk_\(segment.chunk.message.rawValue)_\(segment.chunk.index).mp3"
    try segment.audio.write(to: audioDirectory.appendingPathComponent(name))
    inputs += ["-i", "audio/\(name)"]
    let delay = max(0, Int(((segment.start - origin) * 1000).rounded()))
    var trim = "atrim=start=\(segment.offset)"
    if let stopped = segment.stoppedAt {
      trim += ":end=\(segment.offset + max(0, stopped - segment.start))"
    }
    filters.append(
      "[\(number + 1):a]\(trim),asetpts=PTS-STARTPTS,adelay=delays=\(delay):all=1[a\(number)]")
  }
  var arguments =
    ["-y", "-loglevel", "error", "-framerate", "30", "-i", "frames/frame_%05d.png"] + inputs
  if !filters.isEmpty {
    let mix =
      (0..<filters.count).map { "[a\($0)]" }.joined()
      + "amix=inputs=\(filters.count):normalize=0[a]"
    arguments += [
      "-filter_complex", (filters + [mix]).joined(separator: ";"), "-map", "0:v", "-map", "[a]",
      "-c:a", "aac",
    ]
  }
  arguments += ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "veryfast", options.videoName]
  let script =
    "#!/bin/sh\n# Makes \(options.videoName) from the frames and the audio chunks (needs ffmpeg).\ncd \"$(dirname \"$0\")\"\nexec ffmpeg "
    + arguments.map { "'\($0)'" }.joined(separator: " ") + "\n"
  let scriptURL = options.output.appendingPathComponent("make-mp4.sh")
  try script.write(to: scriptURL, atomically: true, encoding: .utf8)
  try fileManager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: scriptURL.path)

  guard let ffmpeg = findExecutable("ffmpeg") else {
    progress(
      """

      ffmpeg is not installed, so no \(options.videoName) was made. The frames are in \(options.output.path)/frames,
      the audio chunks in \(options.output.path)/audio. To make the video:
        sudo apt-get install -y ffmpeg && \(scriptURL.path)
      """)
    return
  }
  progress("  muxing \(options.videoName) with ffmpeg")
  let process = Process()
  process.executableURL = ffmpeg
  process.arguments = arguments
  process.currentDirectoryURL = options.output
  try process.run()
  process.waitUntilExit()
  guard process.terminationStatus == 0 else {
    throw SessionError("ffmpeg failed (status \(process.terminationStatus)); see \(scriptURL.path)")
  }
  try? fileManager.removeItem(at: options.output.appendingPathComponent("frames"))
  progress("  wrote \(options.output.appendingPathComponent(options.videoName).path)")
}

func findExecutable(_ name: String) -> URL? {
  let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
  for directory in path.split(separator: ":") {
    let url = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
    if FileManager.default.isExecutableFile(atPath: url.path) { return url }
  }
  return nil
}
