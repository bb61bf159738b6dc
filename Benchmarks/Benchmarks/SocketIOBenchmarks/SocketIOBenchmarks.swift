// Receive throughput of the Socket.IO client, with its budget:
//
//   SocketIO.Receive.Swift.*    events/s ≥ 3 × SocketIO.Receive.Python.* (same mode, same run);
//   SocketIO.Receive.SwiftOverPython.* measures that ratio (×100) with both clients run back to
//   back in every iteration, the fairer number on a loaded machine.
//
// The measuring code is Tools' SocketIOBench library (`SocketIOReceiveBench`), which
// `liva bench-socketio` runs too: a Swift SocketIOServer on loopback streams
// `receive_frame_images_batch` events of 50 frames with about 6 KB of (fake) WebP each, as
// base64 strings in the JSON or as binary attachments. Each iteration asks for
// `eventsPerIteration` events and ends at the server's `bench_done`:
//
// - Swift: SocketIOClient receives them and decodes each into a typed LIVAProtocol
//   `ServerEvent` (base64 decoded to bytes, every field validated).
// - Python: python-socketio's AsyncClient (the peer of the interop tests, from .venv made by
//   scripts/setup-python.sh) receives the same stream from the same server and decodes each
//   image from base64; it reports its own time from the request to `bench_done`, so the
//   interpreter's start-up is not counted.
//
// Both report the custom metrics `events/s` and `MB/s` (image bytes after decoding). The
// server sends packets encoded once (`SocketIOServerPacket`), so its encoding is not measured.
// `SOCKETIO_BENCH_EVENTS` sets the events per iteration (200); `SOCKETIO_BENCH_REPORT` names a
// file that gets one line per side-by-side iteration (the warm-up's first). CI checks the
// budget with `liva bench-socketio` (scripts/bench-socketio), which needs no release build of
// this package.
import Benchmark
import Foundation
import SocketIOBench

/// Events per iteration: long enough (a few hundred ms) that the request and the final
/// `bench_done` round trip are not what is measured.
let eventsPerIteration =
  Int(ProcessInfo.processInfo.environment["SOCKETIO_BENCH_EVENTS"] ?? "") ?? 200

/// The server and the Swift client, started by the first benchmark's setup and shared.
actor Fixture {
  private var started: SocketIOReceiveBench?

  func bench() async throws -> SocketIOReceiveBench {
    if let started { return started }
    let bench = try await SocketIOReceiveBench.start(eventsPerIteration: eventsPerIteration)
    started = bench
    return bench
  }
}

let eventsPerSecond = BenchmarkMetric.custom(
  "events/s", polarity: .prefersLarger, useScalingFactor: false)
let megabytesPerSecond = BenchmarkMetric.custom(
  "MB/s", polarity: .prefersLarger, useScalingFactor: false)

let speedup = BenchmarkMetric.custom(
  "Swift/Python events/s ×100", polarity: .prefersLarger, useScalingFactor: false)
let swiftEventsPerSecond = BenchmarkMetric.custom(
  "Swift events/s", polarity: .prefersLarger, useScalingFactor: false)
let pythonEventsPerSecond = BenchmarkMetric.custom(
  "Python events/s", polarity: .prefersLarger, useScalingFactor: false)

/// Appends a line to the file named by `SOCKETIO_BENCH_REPORT`, if set: one line per
/// side-by-side iteration (`mode swift-events/s python-events/s ratio`).
func appendToReport(_ line: String) {
  guard let path = ProcessInfo.processInfo.environment["SOCKETIO_BENCH_REPORT"] else { return }
  if !FileManager.default.fileExists(atPath: path) {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
  }
  guard let file = FileHandle(forWritingAtPath: path) else { return }
  file.seekToEndOfFile()
  file.write(Data((line + "\n").utf8))
  file.closeFile()
}

func report(_ benchmark: Benchmark, _ sample: SocketIOBenchSample) {
  benchmark.measurement(eventsPerSecond, Int(sample.eventsPerSecond))
  benchmark.measurement(megabytesPerSecond, Int(sample.megabytesPerSecond))
}

let benchmarks: @Sendable () -> Void = {
  let fixture = Fixture()
  let configuration = Benchmark.Configuration(
    metrics: [.wallClock, eventsPerSecond, megabytesPerSecond], warmupIterations: 1,
    maxDuration: .seconds(30), maxIterations: 10)
  for mode in SocketIOBenchMode.allCases {
    Benchmark(
      "SocketIO.Receive.Swift.\(mode.title)", configuration: configuration,
      closure: { benchmark in
        let bench = try await fixture.bench()
        report(benchmark, try await bench.receiveSwift(mode))
      }, setup: { _ = try await fixture.bench() })
    // Both clients back to back in each iteration, so that the ratio is not skewed by the
    // load of a shared machine changing between two benchmarks.
    Benchmark(
      "SocketIO.Receive.SwiftOverPython.\(mode.title)",
      configuration: .init(
        metrics: [speedup, swiftEventsPerSecond, pythonEventsPerSecond], warmupIterations: 1,
        maxDuration: .seconds(120), maxIterations: 20),
      closure: { benchmark in
        let comparison = try await fixture.bench().compare(mode)
        benchmark.measurement(speedup, Int(comparison.ratio * 100))
        benchmark.measurement(swiftEventsPerSecond, Int(comparison.swift.eventsPerSecond))
        benchmark.measurement(pythonEventsPerSecond, Int(comparison.python.eventsPerSecond))
        appendToReport(comparison.reportLine)
      }, setup: { _ = try await fixture.bench() })
    Benchmark(
      "SocketIO.Receive.Python.\(mode.title)", configuration: configuration,
      closure: { benchmark in
        let bench = try await fixture.bench()
        report(benchmark, try bench.receivePython(mode))
      }, setup: { _ = try await fixture.bench() })
  }
}
