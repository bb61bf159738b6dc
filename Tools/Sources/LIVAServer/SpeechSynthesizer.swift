import Dispatch
import Foundation
import LIVAMedia
import Locking

/// Turns text into an ``Utterance``: synthesized at run time when the tools exist, otherwise
/// the best-matching pre-made one.
///
/// **Synthesis** runs LIVAServer's helper `make_utterance.py` (a bundled resource, the same
/// one `scripts/make-utterances.sh` uses) with `python3` through `Foundation.Process`, into a
/// fresh temporary directory that is removed afterwards. The helper drives libespeak-ng (the
/// library of Debian's `espeak-ng` package) for the audio and its phoneme events, maps
/// phonemes to visemes, and encodes whole-frame chunk MP3s with `lame`. It needs `espeak-ng`,
/// `lame` and `python3` on the `PATH`.
///
/// **Fallback** (``speak(_:)``): when a tool is missing, synthesis is switched off, or it
/// fails, the library's ``UtteranceLibrary/bestMatch(for:)`` is used: the pre-made
/// utterance sharing the most words with the text. The result says which happened and why.
public struct SpeechSynthesizer: Sendable {
  /// Options.
  public struct Configuration: Hashable, Sendable {
    /// The espeak-ng voice (default `en-us`).
    public var voice: String
    /// The longest chunk, in seconds (default 1.6): chunks are as even as possible.
    public var chunkSeconds: Double
    /// Whether to synthesize at all (false: always use the pre-made utterances).
    public var allowsSynthesis: Bool
    /// The search path for the tools; nil uses the process's `PATH`.
    public var searchPath: String?
    /// Where the temporary work directories go.
    public var temporaryDirectory: URL
    /// How long synthesis may take before the helper is stopped, in seconds (default 60).
    public var timeout: Double
    /// The longest text synthesized, in characters (default 2,000).
    public var maximumTextLength: Int

    /// Creates options; every argument has a default.
    public init(
      voice: String = "en-us", chunkSeconds: Double = 1.6, allowsSynthesis: Bool = true,
      searchPath: String? = nil,
      temporaryDirectory: URL = FileManager.default.temporaryDirectory, timeout: Double = 60,
      maximumTextLength: Int = 2000
    ) {
      self.voice = voice
      self.chunkSeconds = chunkSeconds
      self.allowsSynthesis = allowsSynthesis
      self.searchPath = searchPath
      self.temporaryDirectory = temporaryDirectory
      self.timeout = timeout
      self.maximumTextLength = maximumTextLength
    }
  }

  /// Where an utterance came from.
  public enum Source: Hashable, Sendable {
    /// Synthesized from the text at run time.
    case synthesized
    /// A pre-made utterance, by id.
    case premade(id: String)
  }

  /// What ``speak(_:)`` produced.
  public struct Speech: Sendable {
    /// The utterance to stream.
    public var utterance: Utterance
    /// Where it came from.
    public var source: Source
    /// Why synthesis was not used, when it was not.
    public var fallbackReason: String?
  }

  /// The options.
  public let configuration: Configuration
  /// The pre-made utterances to fall back on.
  public let library: UtteranceLibrary

  /// Creates a synthesizer with a fallback library (e.g. ``UtteranceLibrary/bundled()``).
  public init(configuration: Configuration = Configuration(), library: UtteranceLibrary) {
    self.configuration = configuration
    self.library = library
  }

  /// The tools synthesis needs, found on the search path: `(python3, lame, espeak-ng)`, or nil
  /// when one is missing or synthesis is switched off.
  public var tools: (python: URL, lame: URL, espeak: URL)? {
    guard configuration.allowsSynthesis, Self.helperURL != nil else { return nil }
    guard let python = find("python3"), let lame = find("lame"), let espeak = find("espeak-ng")
    else { return nil }
    return (python, lame, espeak)
  }

  /// Whether run-time synthesis is possible here.
  public var canSynthesize: Bool { tools != nil }

  /// The utterance for `text`: synthesized when possible, else the best-matching pre-made
  /// one. Throws only when neither works (synthesis unavailable and an empty library).
  public func speak(_ text: String) async throws(LIVAServerError) -> Speech {
    var reason: String
    if canSynthesize {
      do {
        return Speech(utterance: try await synthesize(text), source: .synthesized)
      } catch {
        reason = error.description
      }
    } else {
      reason =
        configuration.allowsSynthesis
        ? "espeak-ng, lame or python3 is not on the PATH" : "synthesis is switched off"
    }
    guard let premade = library.bestMatch(for: text) else {
      throw LIVAServerError(
        .toolUnavailable, "cannot synthesize (\(reason)) and no pre-made utterance exists")
    }
    return Speech(utterance: premade, source: .premade(id: premade.id), fallbackReason: reason)
  }

  /// Synthesizes `text` (see the type's documentation). Throws `toolUnavailable` when a tool
  /// is missing, `invalidArgument` for empty or over-long text, `synthesisFailed` when the
  /// helper fails or times out.
  public func synthesize(_ text: String) async throws(LIVAServerError) -> Utterance {
    let trimmed = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    guard !trimmed.isEmpty, trimmed.count <= configuration.maximumTextLength else {
      throw LIVAServerError(
        .invalidArgument,
        "the text must have 1 to \(configuration.maximumTextLength) characters")
    }
    guard let tools, let helper = Self.helperURL else {
      throw LIVAServerError(
        .toolUnavailable, "synthesis needs espeak-ng, lame and python3 on the PATH")
    }
    let work = configuration.temporaryDirectory.appendingPathComponent(
      "liva-utterance-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: work) }
    let output = work.appendingPathComponent("out")
    let arguments = [
      helper.path, "--text", trimmed, "--out", output.path, "--id", "synthesized",
      "--voice", configuration.voice, "--chunk-seconds", String(configuration.chunkSeconds),
      "--lame", tools.lame.path,
    ]
    let (status, stderr) = try await run(tools.python, arguments)
    guard status == 0 else {
      let detail = stderr.trimmingCharacters(in: .whitespacesAndNewlines)
      throw LIVAServerError(
        status == 3 ? .toolUnavailable : .synthesisFailed,
        "the helper exited with status \(status)\(detail.isEmpty ? "" : ": \(detail.prefix(300))")",
        location: "make_utterance.py")
    }
    return try Utterance(loadingFrom: output)
  }

  /// The bundled helper script.
  static var helperURL: URL? {
    Bundle.module.url(forResource: "make_utterance", withExtension: "py")
  }

  private func find(_ tool: String) -> URL? {
    let path = configuration.searchPath ?? ProcessInfo.processInfo.environment["PATH"] ?? ""
    for directory in path.split(separator: ":") where !directory.isEmpty {
      let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(tool)
      if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    return nil
  }

  /// Runs a process to completion (stopped after the timeout); returns its exit status and
  /// standard error.
  private func run(_ executable: URL, _ arguments: [String]) async throws(LIVAServerError)
    -> (Int32, String)
  {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let errorPipe = Pipe()
    process.standardError = errorPipe
    process.standardOutput = FileHandle.nullDevice
    process.standardInput = FileHandle.nullDevice
    let stderr = PipeCollector(errorPipe.fileHandleForReading)
    let status: Int32? = await withCheckedContinuation { continuation in
      process.terminationHandler = { finished in
        continuation.resume(returning: finished.terminationStatus)
      }
      do {
        try process.run()
      } catch {
        process.terminationHandler = nil
        continuation.resume(returning: nil)
        return
      }
      let deadline = DispatchTime.now() + configuration.timeout
      DispatchQueue.global().asyncAfter(deadline: deadline) {
        if process.isRunning { process.terminate() }
      }
    }
    guard let status else {
      throw LIVAServerError(
        .toolUnavailable, "cannot start \(executable.path)", location: executable.path)
    }
    return (status, stderr.finish())
  }
}

/// Drains a pipe on a background thread so a chatty child never blocks on a full pipe.
private final class PipeCollector: Sendable {
  private let data = Locked(Data())
  private let done = DispatchSemaphore(value: 0)

  init(_ handle: FileHandle) {
    DispatchQueue.global().async {
      while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        self.data.withLock { $0.append(chunk) }
      }
      self.done.signal()
    }
  }

  /// Waits for the end of the stream (the child has exited) and returns what it wrote.
  func finish() -> String {
    done.wait()
    return data.withLock { String(decoding: $0, as: UTF8.self) }
  }
}
