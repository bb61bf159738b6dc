import Foundation
import LIVAMedia
import LIVAProtocol
import LIVAServer
import LIVATestSupport
import Testing

@testable import LIVA

/// `POST /messages` against a real HTTP server (the reference backend): an answer outside
/// 2xx is a send error naming the status, and the text does not wait for an answer that will
/// not come; a 2xx answer is a send that worked.
@Suite("Client: messages sent over HTTP", .serialized)
struct HTTPMessageTests {
  /// Runs the reference backend on a free loopback port for `body` (with `BackendConfiguration`'s
  /// defaults, greeting on), and stops it after.
  func withBackend(_ body: (ReferenceBackend, Int) async throws -> Void) async throws {
    let server = try await TestBackend.start { $0.greets = true }
    do {
      try await body(server.backend, server.port)
    } catch {
      await server.stop()
      throw error
    }
    await server.stop()
  }

  func client(serverURL: String) throws -> LIVAClient {
    var configuration = LIVAConfiguration(
      serverURL: serverURL, userID: "user", agentID: "sample",
      cacheRoot: FileManager.default.temporaryDirectory.appendingPathComponent(
        "liva-http-\(UUID().uuidString)"))
    configuration.resolution = 96
    configuration.sendMessagesOverHTTP = true
    configuration.decodeScheduler = InlineDecodeScheduler()
    return try LIVAClient(
      configuration: configuration, displayLink: VirtualDisplayLink(),
      audio: HeadlessAudioOutput(), surface: CallbackSurface { _ in })
  }

  @Test("a POST answered 404 is a send error naming the status; the text is withdrawn")
  func notFound() async throws {
    try await withBackend { backend, port in
      // The backend serves /messages at its root, not under /nowhere.
      let client = try client(serverURL: "http://127.0.0.1:\(port)/nowhere")
      var thrown: LIVAClientError?
      do {
        try await client.sendMessage("hello")
      } catch {
        thrown = error as? LIVAClientError
      }
      #expect(thrown?.code == .send)
      #expect(
        thrown?.description.contains("POST /messages answered 404") == true,
        "\(String(describing: thrown))")
      #expect(client.protectedState.withLock { $0.core.answers.waiting.isEmpty })
      #expect(backend.messageCount == 0)
    }
  }

  @Test("a POST answered 2xx is sent: the backend has the message, and the text awaits speech")
  func accepted() async throws {
    try await withBackend { backend, port in
      let client = try client(serverURL: "http://127.0.0.1:\(port)")
      try await client.sendMessage("hello")
      #expect(backend.messageCount == 1)
      #expect(client.protectedState.withLock { $0.core.answers.waiting.count } == 1)
    }
  }
}
