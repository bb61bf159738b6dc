import Hummingbird
import HummingbirdTLS
import Logging
import NIOSSL
import SocketIO
import SocketIOServer
import Testing

/// Collects the elements of an async sequence and lets a test wait, with a bound, until
/// they satisfy a condition. No test sleeps to wait for timing.
actor Recorder<Element: Sendable> {
  private(set) var items: [Element] = []
  private var waiters: [Int: (@Sendable ([Element]) -> Bool, CheckedContinuation<Bool, Never>)] =
    [:]
  private var nextWaiter = 0

  init() {}

  /// Starts recording `sequence` in a background task.
  nonisolated func record<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
    Task {
      do {
        for try await item in sequence { await self.append(item) }
      } catch {}
    }
  }

  func append(_ item: Element) {
    items.append(item)
    for (id, (predicate, continuation)) in waiters where predicate(items) {
      waiters.removeValue(forKey: id)
      continuation.resume(returning: true)
    }
  }

  /// Waits until `predicate(items)` holds; false after `timeout`.
  func wait(
    timeout: Duration = .seconds(10), until predicate: @escaping @Sendable ([Element]) -> Bool
  )
    async -> Bool
  {
    if predicate(items) { return true }
    let id = nextWaiter
    nextWaiter += 1
    let timer = Task {
      try await Task.sleep(for: timeout)
      self.expire(id)
    }
    defer { timer.cancel() }
    return await withCheckedContinuation { continuation in
      waiters[id] = (predicate, continuation)
    }
  }

  private func expire(_ id: Int) {
    waiters.removeValue(forKey: id)?.1.resume(returning: false)
  }
}

/// A Socket.IO server on an ephemeral loopback port.
struct LoopbackServer {
  let server: SocketIOServer
  let port: Int
  /// Every socket that joined, in order (the server's ``SocketIOServer/connections``, read
  /// here: a test hooks a socket's handling into `onConnect`).
  let sockets: Recorder<SocketIOServerSocket>
  private let task: Task<Void, any Error>

  var url: String { "http://127.0.0.1:\(port)" }

  /// `tls`: serve `wss` with it (the URL's scheme stays `http`; a client turns `https` into
  /// `wss`).
  static func start(
    _ configuration: SocketIOServerConfiguration = .init(), port: Int = 0,
    tls: TLSConfiguration? = nil,
    onConnect: @escaping @Sendable (SocketIOServerSocket) async throws -> Void = { _ in }
  ) async throws -> LoopbackServer {
    let server = SocketIOServer(configuration: configuration, onConnect: onConnect)
    let (ports, portContinuation) = AsyncStream<Int>.makeStream()
    let app = Application(
      router: Router(),
      server: try tls.map { try .tls(server.httpServerBuilder, tlsConfiguration: $0) }
        ?? server.httpServerBuilder,
      configuration: .init(address: .hostname("127.0.0.1", port: port)),
      onServerRunning: { channel in
        portContinuation.yield(channel.localAddress?.port ?? 0)
        portContinuation.finish()
      },
      logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    let task = Task { try await app.run() }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next(), port > 0 else {
      task.cancel()
      throw SocketIOError(.connectionFailed, "the loopback server did not start")
    }
    let sockets = Recorder<SocketIOServerSocket>()
    sockets.record(server.connections)
    return LoopbackServer(server: server, port: port, sockets: sockets, task: task)
  }

  func stop() async {
    task.cancel()
    _ = await task.result
  }
}

/// A client configuration for tests: no real waiting between reconnection attempts.
func testConfiguration(_ url: String) -> SocketIOClientConfiguration {
  var configuration = SocketIOClientConfiguration(
    url: url, query: [("user_id", "u 1"), ("agent_id", "a&2")], auth: ["token": "secret"])
  configuration.sleep = { _ in }
  configuration.random = { 0.5 }
  return configuration
}
