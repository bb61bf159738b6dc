import Foundation
import LIVATestSupport

/// `pngine` in the same build folder as this test bundle (`swift test` builds it).
let pngineBinary: URL? = {
  let bundle = URL(fileURLWithPath: CommandLine.arguments.first { $0.contains(".xctest") } ?? "")
  let candidate = bundle.deletingLastPathComponent().appendingPathComponent("pngine")
  return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
}()

/// The public PNGine fixtures and their executors' command buffers, kept with PngineKit's tests.
enum Fixtures {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../../PngineKit/Tests/PngineKitTests/Fixtures").standardized

  static func bytes(_ relative: String) -> [UInt8] {
    [UInt8](
      FileManager.default.contents(atPath: root.appendingPathComponent(relative).path) ?? Data())
  }

  static func names(in folder: String, suffix: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(
      atPath: root.appendingPathComponent(folder).path)) ?? [])
      .filter { $0.hasSuffix(suffix) }.sorted()
  }

  /// Every PNG in `pngs/`.
  static var pngNames: [String] { names(in: "pngs", suffix: ".png") }

  /// Every expectation in `cmdbufs/`, by PNG name.
  static var expectationNames: [String] {
    names(in: "cmdbufs", suffix: ".png.txt").map { String($0.dropLast(4)) }
  }
}

/// What a run of `pngine` left: how it ended and what it printed.
struct PngineRun: Sendable {
  /// The exit status, or the signal's number when `signalled`.
  var status: Int32
  /// Whether a signal ended it.
  var signalled: Bool
  /// Everything it wrote to standard output.
  var stdout: Data
  /// Everything it wrote to standard error.
  var stderr: Data
}

/// Runs `pngine` with `arguments` to its end. The child is waited for on a thread of its own:
/// a render takes seconds, and a test blocked on it would hold one of the threads of Swift
/// concurrency's pool (two on a 2-core machine), stalling the timing-sensitive network tests
/// that run in the same process.
func runPngine(_ arguments: [String]) async throws -> PngineRun {
  try requireTool(pngineBinary != nil, "the pngine executable")
  let process = Process()
  process.executableURL = pngineBinary!
  process.arguments = arguments
  let output = Pipe()
  let errors = Pipe()
  process.standardOutput = output
  process.standardError = errors
  try process.run()
  return await withCheckedContinuation { continuation in
    let run = Thread {
      // Standard error is drained beside standard output: a child that fills one pipe while
      // the other is read would never end.
      let stderr = LockedData()
      let drained = Thread {
        stderr.set(errors.fileHandleForReading.readDataToEndOfFile())
      }
      drained.start()
      let stdout = output.fileHandleForReading.readDataToEndOfFile()
      process.waitUntilExit()
      continuation.resume(
        returning: PngineRun(
          status: process.terminationStatus,
          signalled: process.terminationReason == .uncaughtSignal, stdout: stdout,
          stderr: stderr.get()))
    }
    run.start()
  }
}

/// Bytes one thread writes once and another reads after it: `get` waits for `set`.
private final class LockedData: @unchecked Sendable {
  private let condition = NSCondition()
  private var data: Data?

  func set(_ value: Data) {
    condition.withLock {
      data = value
      condition.broadcast()
    }
  }

  func get() -> Data {
    condition.withLock {
      while data == nil { condition.wait() }
      return data!
    }
  }
}
