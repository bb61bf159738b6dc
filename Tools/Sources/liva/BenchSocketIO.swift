import ArgumentParser
import Foundation
import SocketIOBench

/// `liva bench-socketio`: the Socket.IO client's receive rate beside python-socketio's
/// `AsyncClient`, both fed by the same server, in side-by-side iterations.
struct BenchSocketIO: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "bench-socketio",
    abstract:
      "Benchmark: the Swift Socket.IO client's receive rate beside python-socketio's.",
    discussion: """
      A Swift SocketIOServer on loopback streams receive_frame_images_batch events of 50 \
      frames with about 6 KB of (fake) WebP each, as base64 strings or as binary attachments. \
      Each iteration runs both clients back to back on the same stream, python first: the \
      python peer (scripts/interop/socketio_peer.py, run by .venv/bin/python of the \
      repository: scripts/setup-python.sh makes it), then SocketIOClient decoding every event \
      into a typed ServerEvent. One warm-up iteration per mode is printed, not reported. \
      Each measured iteration prints (and --report appends) the line \
      `mode swift-events/s python-events/s ratio`; medians follow. CI's budget, checked by \
      scripts/bench-socketio: a median ratio of at least 3.
      """)

  @Option(
    help: ArgumentHelp(
      "The images' form: base64 or binary (default: both, base64 first).", valueName: "mode"))
  var mode: String?

  @Option(help: "Measured side-by-side iterations per mode, after one warm-up.")
  var iterations = 20

  @Option(help: "Events asked for in each iteration, of each client.")
  var events = 200

  @Option(help: "A file to write the measured iterations' lines to (replaced).")
  var report: String?

  @Option(
    help: "The repository whose .venv/bin/python and scripts/interop/socketio_peer.py to run.")
  var repository: String?

  func validate() throws {
    if let mode, SocketIOBenchMode(name: mode) == nil {
      throw ValidationError("unknown --mode \(mode) (base64 or binary)")
    }
    guard iterations > 0, events > 0 else {
      throw ValidationError("--iterations and --events must be positive")
    }
  }

  func run() async throws {
    let modes =
      mode.flatMap { SocketIOBenchMode(name: $0) }.map { [$0] } ?? SocketIOBenchMode.allCases
    let reportFile = try report.map { path in
      guard FileManager.default.createFile(atPath: path, contents: nil),
        let file = FileHandle(forWritingAtPath: path)
      else { throw ValidationError("cannot write --report \(path)") }
      return file
    }
    defer { try? reportFile?.close() }
    let bench = try await SocketIOReceiveBench.start(
      eventsPerIteration: events,
      repositoryRoot: repository.map { URL(fileURLWithPath: $0) }
        ?? SocketIOReceiveBench.defaultRepositoryRoot)
    do {
      for mode in modes {
        progress(
          "liva bench-socketio: \(mode.rawValue), \(iterations) iterations of \(events) events"
            + " per client, after one warm-up")
        progress("  warm-up: \(try await bench.compare(mode).reportLine)")
        var comparisons: [SocketIOBenchComparison] = []
        for _ in 0..<iterations {
          let comparison = try await bench.compare(mode)
          comparisons.append(comparison)
          progress(comparison.reportLine)
          try reportFile?.write(contentsOf: Data((comparison.reportLine + "\n").utf8))
        }
        progress(
          "  \(mode.title) medians: Swift "
            + String(format: "%.0f", median(comparisons.map(\.swift.eventsPerSecond)))
            + " events/s, python "
            + String(format: "%.0f", median(comparisons.map(\.python.eventsPerSecond)))
            + " events/s, Swift/python "
            + String(format: "%.2f", median(comparisons.map(\.ratio))) + "x")
      }
    } catch {
      await bench.stop()
      throw error
    }
    await bench.stop()
  }

  private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
  }
}
