import Foundation
import Hummingbird
import LIVAProtocol
import Locking
import Logging
import SocketIO
import SocketIOServer

/// What one client received in one iteration, and how long it took.
public struct SocketIOBenchSample: Sendable {
  /// `receive_frame_images_batch` events received.
  public var events: Int
  /// Image bytes received, after decoding.
  public var bytes: Int
  /// Seconds from the request to the server's `bench_done`.
  public var seconds: Double

  /// Makes a sample.
  public init(events: Int, bytes: Int, seconds: Double) {
    self.events = events
    self.bytes = bytes
    self.seconds = seconds
  }

  /// Events received per second.
  public var eventsPerSecond: Double { Double(events) / seconds }
  /// Image megabytes (10⁶ bytes, after decoding) received per second.
  public var megabytesPerSecond: Double { Double(bytes) / seconds / 1e6 }
}

/// Both clients measured back to back on the same stream: python-socketio first, then Swift.
public struct SocketIOBenchComparison: Sendable {
  /// How the images travelled.
  public var mode: SocketIOBenchMode
  /// The Swift client's sample.
  public var swift: SocketIOBenchSample
  /// python-socketio's sample.
  public var python: SocketIOBenchSample

  /// Swift's events per second over python's.
  public var ratio: Double { swift.eventsPerSecond / python.eventsPerSecond }

  /// `mode swift-events/s python-events/s ratio`, e.g. `Base64 2345.6 530.1 4.42…`: the line
  /// `scripts/bench-socketio` checks against the budget.
  public var reportLine: String {
    "\(mode.title) \(swift.eventsPerSecond) \(python.eventsPerSecond) \(ratio)"
  }
}

/// Why a measurement could not be made.
public enum SocketIOBenchError: Error, CustomStringConvertible {
  /// The server never reported the port it listens on.
  case serverDidNotStart
  /// The Swift client's status stream ended before it connected.
  case clientDidNotConnect
  /// The Swift client could not send the request.
  case requestFailed(String)
  /// The Swift client received the wrong number of events, or could not decode some.
  case swiftReceiveFailed(events: Int, failures: Int, expected: Int)
  /// There is no python in the repository's `.venv`.
  case pythonMissing(path: String)
  /// The python client exited without its `BENCH` line.
  case pythonFailed(status: Int32, output: String)

  /// What went wrong, and what to do about the python client.
  public var description: String {
    switch self {
    case .serverDidNotStart: "the Socket.IO server did not start"
    case .clientDidNotConnect: "the Swift client did not connect"
    case .requestFailed(let reason): "the Swift client could not ask for events: \(reason)"
    case .swiftReceiveFailed(let events, let failures, let expected):
      "the Swift client received \(events) of \(expected) events, \(failures) not decoded"
    case .pythonMissing(let path): "no \(path) (run scripts/setup-python.sh)"
    case .pythonFailed(let status, let output):
      "the python client failed (exit status \(status); run scripts/setup-python.sh): \(output)"
    }
  }
}

/// Receive throughput of the Socket.IO client against python-socketio's `AsyncClient`, both
/// fed by the same Swift `SocketIOServer` on loopback.
///
/// Each iteration asks the server for ``eventsPerIteration`` `receive_frame_images_batch`
/// events (see ``SocketIOBenchPayload``) and ends at its `bench_done`. The server sends
/// packets encoded once (`SocketIOServerPacket`), so its own encoding is not measured.
///
/// - Swift: `SocketIOClient` receives them and decodes each into a typed LIVAProtocol
///   `ServerEvent` (base64 decoded to bytes, every field validated).
/// - Python: `scripts/interop/socketio_peer.py bench`, run by the repository's
///   `.venv/bin/python` (made by scripts/setup-python.sh), receives the same stream and decodes
///   each image from base64; it reports its own time from the request to `bench_done`, so the
///   interpreter's start-up is not counted.
///
/// ```swift
/// let bench = try await SocketIOReceiveBench.start()
/// let comparison = try await bench.compare(.binary)
/// print(comparison.reportLine)
/// await bench.stop()
/// ```
public final class SocketIOReceiveBench: Sendable {
  /// The repository this source file was compiled from.
  public static let defaultRepositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  /// The server's port on 127.0.0.1.
  public let port: Int
  /// Events asked for in each iteration.
  public let eventsPerIteration: Int
  /// Where `.venv/bin/python` and `scripts/interop/socketio_peer.py` are.
  public let repositoryRoot: URL

  private let client: SocketIOClient
  private let receiver: Receiver
  private let tasks: [Task<Void, any Error>]

  private init(
    port: Int, eventsPerIteration: Int, repositoryRoot: URL, client: SocketIOClient,
    receiver: Receiver, tasks: [Task<Void, any Error>]
  ) {
    self.port = port
    self.eventsPerIteration = eventsPerIteration
    self.repositoryRoot = repositoryRoot
    self.client = client
    self.receiver = receiver
    self.tasks = tasks
  }

  /// Starts the server and connects the Swift client to it.
  /// - Parameters:
  ///   - eventsPerIteration: Events per iteration: long enough (a few hundred ms) that the
  ///     request and the final `bench_done` round trip are not what is measured.
  ///   - repositoryRoot: Where the python client is.
  public static func start(
    eventsPerIteration: Int = 200, repositoryRoot: URL = defaultRepositoryRoot
  ) async throws -> SocketIOReceiveBench {
    // Encoded once: the server streams the same frames to both clients, so its own
    // encoding cost is not part of the measurement.
    func packets(_ mode: SocketIOBenchMode) -> [SocketIOServerPacket] {
      (0..<SocketIOBenchPayload.distinctBatches).map {
        SocketIOServerPacket(
          .event("receive_frame_images_batch", [SocketIOBenchPayload.batch($0, mode: mode)]))
      }
    }
    let base64Packets = packets(.base64)
    let binaryPackets = packets(.binary)
    let server = SocketIOServer(
      configuration: SocketIOServerConfiguration(
        limits: SocketIOLimits(maximumPayloadBytes: 64 << 20)))
    let accepting = Task<Void, any Error> {
      for await socket in server.connections {
        Task {
          for await event in socket.events where event.name == "bench" {
            let count = event.arguments.first?.intValue ?? 0
            let packets =
              event.arguments.dropFirst().first == "binary" ? binaryPackets : base64Packets
            for index in 0..<count {
              socket.send(packets[index % packets.count])
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
    let serving = Task {
      // Ends the wait for the port if the server stops before it runs.
      defer { portContinuation.finish() }
      try await app.run()
    }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next(), port != 0 else {
      accepting.cancel()
      serving.cancel()
      throw SocketIOBenchError.serverDidNotStart
    }

    let client = SocketIOClient(
      configuration: SocketIOClientConfiguration(
        url: "http://127.0.0.1:\(port)", limits: SocketIOLimits(maximumPayloadBytes: 64 << 20)))
    let receiver = Receiver()
    let receiving = Task<Void, any Error> {
      var totals = Receiver.Totals()
      for await event in client.events {
        if event.name == "bench_done" {
          receiver.done(totals)
          totals = Receiver.Totals()
          continue
        }
        do {
          let decoded = try ServerEvent.decode(name: event.name, arguments: event.arguments)
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
    let bench = SocketIOReceiveBench(
      port: port, eventsPerIteration: eventsPerIteration, repositoryRoot: repositoryRoot,
      client: client, receiver: receiver, tasks: [accepting, serving, receiving])
    await client.connect()
    for await status in client.statusUpdates {
      if case .connected = status { return bench }
    }
    await bench.stop()
    throw SocketIOBenchError.clientDidNotConnect
  }

  /// Disconnects the Swift client and stops the server.
  public func stop() async {
    await client.disconnect()
    for task in tasks { task.cancel() }
  }

  /// One side-by-side iteration: the python client, then the Swift client, on the same stream.
  public func compare(_ mode: SocketIOBenchMode) async throws -> SocketIOBenchComparison {
    let python = try await receivePythonOffPool(mode)
    let swift = try await receiveSwift(mode)
    return SocketIOBenchComparison(mode: mode, swift: swift, python: python)
  }

  /// Receives one iteration's events with the Swift client.
  public func receiveSwift(_ mode: SocketIOBenchMode) async throws -> SocketIOBenchSample {
    let started = ContinuousClock.now
    let client = client
    let events = eventsPerIteration
    let receiver = receiver
    let totals = try await receiver.next {
      do {
        try await client.emit("bench", [.number(Double(events)), .string(mode.rawValue)])
      } catch {
        receiver.fail(SocketIOBenchError.requestFailed("\(error)"))
      }
    }
    let elapsed = ContinuousClock.now - started
    guard totals.failures == 0, totals.events == eventsPerIteration else {
      throw SocketIOBenchError.swiftReceiveFailed(
        events: totals.events, failures: totals.failures, expected: eventsPerIteration)
    }
    let (seconds, attoseconds) = elapsed.components
    return SocketIOBenchSample(
      events: totals.events, bytes: totals.bytes,
      seconds: Double(seconds) + Double(attoseconds) / 1e18)
  }

  /// ``receivePython(_:)`` on a thread of its own: it blocks while the python client runs,
  /// and the server it talks to needs the cooperative pool.
  public func receivePythonOffPool(_ mode: SocketIOBenchMode) async throws
    -> SocketIOBenchSample
  {
    try await withCheckedThrowingContinuation { continuation in
      Thread { continuation.resume(with: Result { try self.receivePython(mode) }) }.start()
    }
  }

  /// Runs the python client for one iteration, blocking until it exits; returns what it
  /// reports.
  public func receivePython(_ mode: SocketIOBenchMode) throws -> SocketIOBenchSample {
    let python = repositoryRoot.appendingPathComponent(".venv/bin/python")
    guard FileManager.default.isExecutableFile(atPath: python.path) else {
      throw SocketIOBenchError.pythonMissing(path: python.path)
    }
    let script = repositoryRoot.appendingPathComponent("scripts/interop/socketio_peer.py")
    let process = Process()
    process.executableURL = python
    process.arguments = [
      "-u", script.path, "bench", "http://127.0.0.1:\(port)", "--events", "\(eventsPerIteration)",
      "--mode", mode.rawValue,
    ]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    let line = output.split(separator: "\n").first { $0.hasPrefix("BENCH ") }
    let fields = line?.split(separator: " ") ?? []
    guard fields.count >= 4, let events = Int(fields[1]), let bytes = Int(fields[2]),
      let seconds = Double(fields[3])
    else {
      throw SocketIOBenchError.pythonFailed(status: process.terminationStatus, output: output)
    }
    return SocketIOBenchSample(events: events, bytes: bytes, seconds: seconds)
  }
}

/// Hands an iteration's totals from the task that receives the events to the one measuring.
/// The receiving task counts in its own variables, as the python handler does, so no actor hop
/// per event is measured with the client.
final class Receiver: Sendable {
  /// Events, image bytes and events not decoded since the previous `bench_done`.
  struct Totals {
    var events = 0
    var bytes = 0
    var failures = 0
  }

  private let waiter = Locked<CheckedContinuation<Totals, any Error>?>(nil)

  /// Waits for the next `bench_done`; `request` runs once the waiter is in place.
  func next(after request: @escaping @Sendable () async -> Void) async throws -> Totals {
    try await withCheckedThrowingContinuation { continuation in
      waiter.withLock { $0 = continuation }
      Task { await request() }
    }
  }

  /// Called at `bench_done` with the totals since the previous one.
  func done(_ totals: Totals) {
    take()?.resume(returning: totals)
  }

  /// Ends the wait with `error` (the request could not be sent).
  func fail(_ error: any Error) {
    take()?.resume(throwing: error)
  }

  private func take() -> CheckedContinuation<Totals, any Error>? {
    waiter.withLock { waiting in
      defer { waiting = nil }
      return waiting
    }
  }
}
