import Foundation
import LIVATestSupport
import SocketIO
import SocketIOServer
import Testing

/// A server faster than the application: the client holds its event budget and no more, the
/// server's writes wait in TCP, and the link is not declared dead while the client is behind.
@Suite("Backpressure: a slow application holds its event budget, not the server's output")
struct BackpressureTests {
  static let eventBytes = 256 << 10
  static let eventCount = 64  // 16 MiB in all

  @Test(
    "16 MiB of events to an application that takes none for 6 s: 1 MiB held, then all arrive in order, no reconnect"
  )
  func slowApplication() async throws {
    let received = Recorder<String>()
    let server = try await LoopbackServer.start { socket in
      Task {
        for await event in socket.events {
          await received.append(event.name)
          // Asked for, once connected: the flood.
          guard event.name == "go" else { continue }
          for index in 0..<Self.eventCount {
            socket.emit(
              "chunk",
              [.number(Double(index)), .binary(Data(repeating: 7, count: Self.eventBytes))])
          }
        }
      }
    }
    var configuration = testConfiguration(server.url)
    configuration.maximumQueuedEventBytes = 1 << 20
    // The default probe, which would time out while the application is behind (a shorter one
    // timed out in CI while the loaded machine read the backlog: more than 1 s between two
    // 256 KiB packets of a debug build beside a hundred other tests).
    configuration.livenessTimeout = .seconds(5)
    let client = SocketIOClient(configuration: configuration)
    let statuses = Recorder<SocketIOStatus>()
    statuses.record(client.statusUpdates)
    await client.connect()
    #expect(await statuses.wait { $0.contains { if case .connected = $0 { true } else { false } } })
    try await client.emit("go")
    // The budget fills (the server sends at once).
    let deadline = ContinuousClock.now + .seconds(10)
    while client.queuedEventBytes < 1 << 20, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(5))
    }
    #expect(client.queuedEventBytes >= 1 << 20)
    // A message goes out; its pong cannot be read while the client is not reading.
    try await client.emit("while-behind", ["x"])
    // The application takes nothing for 6 s, past the probe's timeout.
    try await Task.sleep(for: .seconds(6))
    let held = client.queuedEventBytes
    #expect(held <= (1 << 20) + Self.eventBytes + 1024, "\(held) bytes held")
    // Then it takes everything: all of it, in order, on the one connection.
    let indexes = Recorder<Int>()
    let consumer = Task {
      for await event in client.events where event.name == "chunk" {
        await indexes.append(Int(event.arguments.first?.numberValue ?? -1))
      }
    }
    let all = await indexes.wait(timeout: .seconds(30)) { $0.count >= Self.eventCount }
    consumer.cancel()
    let taken = await indexes.items
    let seenWhileTaking = await statuses.items
    #expect(all, "\(taken.count) of \(Self.eventCount) taken; statuses \(seenWhileTaking)")
    #expect(taken == Array(0..<Self.eventCount))
    #expect(await received.wait { $0.contains("while-behind") })
    #expect(await client.emitsResent == 0)
    let seen = await statuses.items
    #expect(
      seen.filter { if case .connected = $0 { true } else { false } }.count == 1,
      "reconnected while behind: \(seen)")
    await client.disconnect()
    await server.stop()
  }
}
