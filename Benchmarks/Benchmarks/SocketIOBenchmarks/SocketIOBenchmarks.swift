// Receive throughput of the Socket.IO client, with its budget:
//
//   SocketIO.Receive.Swift.*    events/s ≥ 3 × SocketIO.Receive.Python.* (same mode, same run);
//   SocketIO.Receive.SwiftOverPython.* measures that ratio (×100) with both clients run back to
//   back in every iteration, the fairer number on a loaded machine.
//
// A Swift SocketIOServer on loopback streams `receive_frame_images_batch` events of 50 frames
// with about 6 KB of (fake) WebP each, as base64 strings in the JSON or as binary attachments.
// Each iteration asks for `eventsPerIteration` events and ends at the server's `bench_done`:
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
// file that gets one line per side-by-side iteration, which scripts/bench-socketio checks (CI).
import Benchmark
import Foundation
import Hummingbird
import LIVAProtocol
import Logging
import SocketIO
import SocketIOServer

/// Distinct batches the server encodes once and sends in turn.
let distinctBatches = 40
/// Events per iteration: long enough (a few hundred ms) that the request and the final
/// `bench_done` round trip are not what is measured.
let eventsPerIteration =
  Int(ProcessInfo.processInfo.environment["SOCKETIO_BENCH_EVENTS"] ?? "") ?? 200
let framesPerEvent = 50
let imageSize = 6_000

/// Fake WebP bytes, as the python peer's `image_bytes(index, size)` makes them.
func imageBytes(_ index: Int, size: Int) -> [UInt8] {
  let header = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBP".utf8)
  return header + (0..<(size - header.count)).map { UInt8((index * 7 + $0) % 256) }
}

/// One batch event, as the python peer's `bench_batch(index, mode)` makes it.
func batch(_ index: Int, binary: Bool) -> JSONValue {
  let frames: [JSONValue] = (0..<framesPerEvent).map { i in
    let bytes = imageBytes(index * framesPerEvent + i, size: imageSize)
    return [
      "overlay_id": .string("talking_1_s_talking_1_e/\(i)/J1_X2_M\(i % 8).webp"),
      "animation_name": "talking_1_s_talking_1_e",
      "matched_sprite_frame_number": .number(Double(i)),
      "sheet_filename": .string("J1_X2_M\(i % 8).webp"), "sequence_index": .number(Double(i)),
      "section_index": 0, "frame_index": .number(Double(i)),
      "image_data": binary ? .binary(bytes) : .string(Data(bytes).base64EncodedString()),
      "image_mime": "image/webp",
    ]
  }
  return [
    "frames": .array(frames), "chunk_index": .number(Double(index)), "batch_index": 0,
    "batch_start_index": 0, "batch_size": .number(Double(framesPerEvent)), "total_batches": 1,
    "emission_timestamp": 1_738_000_000_000,
  ]
}

/// Hands an iteration's totals from the task that receives the events to the benchmark. The
/// receiving task counts in its own variables, as the python handler does, so no actor hop per
/// event is measured with the client.
final class Receiver: @unchecked Sendable {  // @unchecked: `waiter` is guarded by `lock`.
  typealias Totals = (events: Int, bytes: Int, failures: Int)
  private let lock = NSLock()
  private var waiter: CheckedContinuation<Totals, Never>?

  /// Waits for the next `bench_done`; `request` runs once the waiter is in place.
  func next(after request: @escaping @Sendable () async -> Void) async -> Totals {
    await withCheckedContinuation { continuation in
      lock.withLock { waiter = continuation }
      Task { await request() }
    }
  }

  /// Called at `bench_done` with the totals since the previous one.
  func done(_ totals: Totals) {
    lock.withLock {
      defer { waiter = nil }
      return waiter
    }?.resume(returning: totals)
  }
}

/// The server and the Swift client, started once for all benchmarks.
final class Fixture: @unchecked Sendable {  // @unchecked: written once in `start`, then read.
  static let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  var port = 0
  var client: SocketIOClient?
  let receiver = Receiver()
  private var serverTask: Task<Void, any Error>?

  func start() async throws {
    guard serverTask == nil else { return }
    // Encoded once: the server streams the same frames to both clients, so its own
    // encoding cost is not part of the measurement.
    let payloads = [
      false: (0..<distinctBatches).map {
        SocketIOServerPacket(.event("receive_frame_images_batch", [batch($0, binary: false)]))
      },
      true: (0..<distinctBatches).map {
        SocketIOServerPacket(.event("receive_frame_images_batch", [batch($0, binary: true)]))
      },
    ]
    let server = SocketIOServer(
      configuration: SocketIOServerConfiguration(
        limits: SocketIOLimits(maximumPayloadBytes: 64 << 20)))
    Task {
      for await socket in server.connections {
        Task {
          for await event in socket.events where event.name == "bench" {
            let count = event.arguments.first?.intValue ?? 0
            let binary = event.arguments.dropFirst().first == "binary"
            for index in 0..<count {
              socket.send(payloads[binary]![index % distinctBatches])
            }
            socket.emit("bench_done", [.number(Double(count))])
          }
        }
      }
    }
    let (ports, portContinuation) = AsyncStream<Int>.makeStream()
    let app = Application(
      router: Router(), server: server.httpServerBuilder,
      configuration: .init(address: .hostname("127.0.0.1", port: 0)),
      onServerRunning: { channel in
        portContinuation.yield(channel.localAddress?.port ?? 0)
        portContinuation.finish()
      },
      logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
    serverTask = Task { try await app.run() }
    var iterator = ports.makeAsyncIterator()
    port = await iterator.next() ?? 0

    let client = SocketIOClient(
      configuration: SocketIOClientConfiguration(
        url: "http://127.0.0.1:\(port)", limits: SocketIOLimits(maximumPayloadBytes: 64 << 20)))
    let receiver = receiver
    Task {
      var totals: Receiver.Totals = (0, 0, 0)
      for await event in client.events {
        if event.name == "bench_done" {
          receiver.done(totals)
          totals = (0, 0, 0)
          continue
        }
        do {
          let decoded = try ServerEvent.decode(
            name: event.name, arguments: event.arguments)
          guard case .frameImagesBatch(let batch)? = decoded else {
            totals.failures += 1
            continue
          }
          totals.events += 1
          for frame in batch.frames { totals.bytes += frame.image?.data.count ?? 0 }
        } catch {
          totals.failures += 1
        }
      }
    }
    await client.connect()
    var statuses = client.statusUpdates.makeAsyncIterator()
    while let status = await statuses.next() {
      if case .connected = status { break }
    }
    self.client = client
  }

  /// Receives one iteration's events with the Swift client; returns (events, bytes, seconds).
  func receiveSwift(binary: Bool) async throws -> (Int, Int, Double) {
    let started = ContinuousClock.now
    let client = client!
    let (events, bytes, failures) = await receiver.next {
      try? await client.emit(
        "bench", [.number(Double(eventsPerIteration)), binary ? "binary" : "base64"])
    }
    let elapsed = ContinuousClock.now - started
    precondition(failures == 0 && events == eventsPerIteration, "decoding failed")
    let (seconds, attoseconds) = elapsed.components
    return (events, bytes, Double(seconds) + Double(attoseconds) / 1e18)
  }

  /// ``receivePython(binary:)`` on a thread of its own: it blocks while the python client
  /// runs, and the server it talks to needs the cooperative pool.
  func receivePythonOffPool(binary: Bool) async throws -> (Int, Int, Double) {
    try await withCheckedThrowingContinuation { continuation in
      Thread { continuation.resume(with: Result { try self.receivePython(binary: binary) }) }
        .start()
    }
  }

  /// Runs the python client for one iteration; returns (events, bytes, seconds) as it reports.
  func receivePython(binary: Bool) throws -> (Int, Int, Double) {
    let python = Self.repositoryRoot.appendingPathComponent(".venv/bin/python")
    let script = Self.repositoryRoot.appendingPathComponent("scripts/interop/socketio_peer.py")
    let process = Process()
    process.executableURL = python
    process.arguments = [
      "-u", script.path, "bench", "http://127.0.0.1:\(port)", "--events", "\(eventsPerIteration)",
      "--mode", binary ? "binary" : "base64",
    ]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("BENCH ") }) else {
      fatalError("the python client failed (run scripts/setup-python.sh): \(output)")
    }
    let fields = line.split(separator: " ")
    return (Int(fields[1])!, Int(fields[2])!, Double(fields[3])!)
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
/// side-by-side iteration (`mode swift-events/s python-events/s ratio`), which
/// `scripts/bench-socketio` checks against the budget.
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

func report(_ benchmark: Benchmark, _ result: (Int, Int, Double)) {
  let (events, bytes, seconds) = result
  benchmark.measurement(eventsPerSecond, Int(Double(events) / seconds))
  benchmark.measurement(megabytesPerSecond, Int(Double(bytes) / seconds / 1e6))
}

let benchmarks: @Sendable () -> Void = {
  let fixture = Fixture()
  let configuration = Benchmark.Configuration(
    metrics: [.wallClock, eventsPerSecond, megabytesPerSecond], warmupIterations: 1,
    maxDuration: .seconds(30), maxIterations: 10)
  for binary in [false, true] {
    let mode = binary ? "Binary" : "Base64"
    Benchmark(
      "SocketIO.Receive.Swift.\(mode)", configuration: configuration,
      closure: { benchmark in
        report(benchmark, try! await fixture.receiveSwift(binary: binary))
      }, setup: { try await fixture.start() })
    // Both clients back to back in each iteration, so that the ratio is not skewed by the
    // load of a shared machine changing between two benchmarks.
    Benchmark(
      "SocketIO.Receive.SwiftOverPython.\(mode)",
      configuration: .init(
        metrics: [speedup, swiftEventsPerSecond, pythonEventsPerSecond], warmupIterations: 1,
        maxDuration: .seconds(120), maxIterations: 20),
      closure: { benchmark in
        let python = try! await fixture.receivePythonOffPool(binary: binary)
        let swift = try! await fixture.receiveSwift(binary: binary)
        let ratio = (Double(swift.0) / swift.2) / (Double(python.0) / python.2)
        benchmark.measurement(speedup, Int(ratio * 100))
        benchmark.measurement(swiftEventsPerSecond, Int(Double(swift.0) / swift.2))
        benchmark.measurement(pythonEventsPerSecond, Int(Double(python.0) / python.2))
        appendToReport(
          "\(mode) \(Double(swift.0) / swift.2) \(Double(python.0) / python.2) \(ratio)")
      }, setup: { try await fixture.start() })
    Benchmark(
      "SocketIO.Receive.Python.\(mode)", configuration: configuration,
      closure: { benchmark in
        report(benchmark, try! fixture.receivePython(binary: binary))
      }, setup: { try await fixture.start() })
  }
}
