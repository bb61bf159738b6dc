import Foundation
import LIVAMedia
import LIVAProtocol
import SocketIO
import Testing

@testable import LIVA

/// What the app gets when the client cannot do what it asked: a typed ``LIVAClientError`` with
/// its code, nothing sent, and a text that was not sent is not left waiting for an answer.
@Suite("Client errors the app sees")
struct ClientErrorTests {
  func configuration(
    serverURL: String = "http://backend", cacheRoot: URL? = nil,
    transport: (@Sendable () -> any LIVATransport)? = nil
  ) -> LIVAConfiguration {
    var configuration = LIVAConfiguration(
      serverURL: serverURL, userID: "u", agentID: "7",
      cacheRoot: cacheRoot
        ?? FileManager.default.temporaryDirectory.appendingPathComponent(
          "liva-errors-\(UUID().uuidString)"))
    configuration.resolution = 16
    configuration.decodeScheduler = InlineDecodeScheduler()
    if let transport { configuration.makeTransport = { _, _ in transport() } }
    return configuration
  }

  func client(_ configuration: LIVAConfiguration) throws -> LIVAClient {
    try LIVAClient(
      configuration: configuration, displayLink: VirtualDisplayLink(),
      audio: HeadlessAudioOutput(), surface: CallbackSurface { _ in })
  }

  /// The error `body` threw, if it threw a ``LIVAClientError``.
  func error(_ body: () async throws -> Void) async -> LIVAClientError? {
    do {
      try await body()
      return nil
    } catch {
      return error as? LIVAClientError
    }
  }

  @Test("sending before connecting is a send error, and the text does not wait for an answer")
  func sendWhileDisconnected() async throws {
    let client = try client(configuration())
    let e = await error { try await client.sendMessage("hello") }
    #expect(e?.code == .send)
    #expect(e?.description.contains("not connected") == true, "\(String(describing: e))")
    #expect(client.protectedState.withLock { $0.core.answers.waiting.isEmpty })
    #expect(await error { try await client.setSessionID("s") }?.code == .send)
    #expect(await error { try await client.sendVoice(Data([1, 2])) }?.code == .send)
  }

  @Test("an emit the link refuses is a send error naming the event; the text is withdrawn")
  func failedEmit() async throws {
    let transport = FakeTransport()
    transport.emitError.withLock { $0 = SocketIOError(.notConnected, "the link refused it") }
    let client = try client(configuration(transport: { transport }))
    await client.connect()
    let e = await error { try await client.sendMessage("hello") }
    #expect(transport.emitted.count == 1)
    #expect(e?.code == .send)
    #expect(e?.description.contains(Wire.Event.userMessage) == true, "\(String(describing: e))")
    #expect(client.protectedState.withLock { $0.core.answers.waiting.isEmpty })
    await client.disconnect()
  }

  @Test("a cache folder that cannot be opened is a cache error at creation")
  func cacheUnopenable() throws {
    // A file where the cache folder should be.
    let file = FileManager.default.temporaryDirectory.appendingPathComponent(
      "liva-not-a-folder-\(UUID().uuidString)")
    try Data([0]).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    #expect {
      _ = try client(configuration(cacheRoot: file))
    } throws: { ($0 as? LIVAClientError)?.code == .cache }
  }

  @Test("POST /messages to a server that is not there is a send error, and the text withdrawn")
  func postFails() async throws {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    var configuration = configuration(serverURL: "http://127.0.0.1:1")
    configuration.sendMessagesOverHTTP = true
    let client = try client(configuration)
    let e = await error { try await client.sendMessage("hello") }
    #expect(e?.code == .send)
    #expect(e?.description.contains("POST /messages failed") == true, "\(String(describing: e))")
    #expect(client.protectedState.withLock { $0.core.answers.waiting.isEmpty })
  }

  @Test("POST /messages with a server URL that is not a URL is a send error")
  func postBadURL() async throws {
    var configuration = configuration(serverURL: "")
    configuration.sendMessagesOverHTTP = true
    let client = try client(configuration)
    let e = await error { try await client.sendMessage("hello") }
    #expect(e?.code == .send)
    #expect(e?.description.contains("bad server URL") == true, "\(String(describing: e))")
  }
}
