import Foundation
import Testing

@testable import PngineKit

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Serves canned answers to URLSession: the remote source without a network.
final class CannedProtocol: URLProtocol, @unchecked Sendable {
  nonisolated(unsafe) static var answers: [String: (status: Int, body: Data)] = [:]
  override class func canInit(with request: URLRequest) -> Bool {
    request.url?.host == "pngine.test"
  }
  override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }
  override func startLoading() {
    let answer = Self.answers[request.url?.path ?? ""] ?? (404, Data())
    let response = HTTPURLResponse(
      url: request.url!, statusCode: answer.status, httpVersion: "HTTP/1.1", headerFields: nil)!
    client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
    client?.urlProtocol(self, didLoad: answer.body)
    client?.urlProtocolDidFinishLoading(self)
  }
  override func stopLoading() {}
}

@Suite("Loading a PNG: sources, states, the PNG's own picture", .serialized)
struct LoaderTests {
  let cube = Fixtures.png("examples_vite-gallery_shaders_cube.png")

  @Test("the PNG's own picture shows while preparing and stays as the fallback when it cannot run")
  func stillAsPlaceholderAndFallback() throws {
    let picture = try RGBAImage(png: cube)
    #expect(picture.width > 0 && picture.height > 0)
    var load = PngineLoading()
    #expect(load.state == .idle)
    load.began()
    #expect(load.state == .fetching)
    load.fetched(cube)
    #expect(load.state == .preparing(still: picture))
    load.prepared()
    #expect(load.state == .ready)
    // Stopped for good (a lost device that did not come back): the picture again.
    let lost = PngineError(.deviceLost, "gone")
    load.failed(lost)
    #expect(load.state == .failed(lost, fallback: picture))
  }

  @Test("without a picture to show: the policy off, a file that never came, a PNG it cannot decode")
  func noStill() throws {
    var policy = PngineLoadPolicy()
    policy.showsStillWhileLoading = false
    policy.fallsBackToStill = false
    var quiet = PngineLoading(policy: policy)
    quiet.began()
    quiet.fetched(cube)
    #expect(quiet.state == .preparing(still: nil))
    let trap = PngineError(.trap, "unreachable")
    quiet.failed(trap)
    #expect(quiet.state == .failed(trap, fallback: nil))

    var missing = PngineLoading()
    missing.began()
    let notFound = PngineError(.invalidArgument, "answered 404")
    missing.fetchFailed(notFound)
    #expect(missing.state == .failed(notFound, fallback: nil))
    // A late fetch of the failed load changes nothing.
    missing.fetched(cube)
    #expect(missing.state == .failed(notFound, fallback: nil))

    var garbage = PngineLoading()
    garbage.began()
    garbage.fetched([0x89, 0x50, 0x4E, 0x47, 1, 2, 3])
    #expect(garbage.state == .preparing(still: nil))
  }

  @Test("a new load replaces the old one; a cancelled load is idle")
  func reload() {
    var load = PngineLoading()
    load.began()
    load.fetched(cube)
    load.cancelled()
    #expect(load.state == .idle)
    load.began()
    #expect(load.state == .fetching && load.png == nil)
  }

  @Test("sources: data, a file, a bundle-less name, a size cap")
  func sources() async throws {
    #expect(try await PngineLoader.fetch(.data(Data(cube))) == cube)
    let file = FileManager.default.temporaryDirectory.appendingPathComponent(
      "pngine-\(UUID().uuidString).png")
    try Data(cube).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    #expect(try await PngineLoader.fetch(.file(file)) == cube)
    await #expect(throws: PngineError.self) {
      _ = try await PngineLoader.fetch(.file(file.appendingPathExtension("missing")))
    }
    do {
      _ = try await PngineLoader.fetch(.file(file), maximumBytes: 100)
      Issue.record("a file over the cap was read")
    } catch let error as PngineError {
      #expect(error.code == .limitExceeded)
    }
    #expect(PngineSource.bundle("no-such-animation", in: Bundle.main) == nil)
  }

  @Test("a remote source: 2xx gives the bytes; another status is a typed error")
  func remote() async throws {
    CannedProtocol.answers = ["/cube.png": (200, Data(cube)), "/gone.png": (410, Data())]
    let configuration = URLSessionConfiguration.ephemeral
    configuration.protocolClasses = [CannedProtocol.self]
    let session = URLSession(configuration: configuration)
    let url = URL(string: "https://pngine.test/cube.png")!
    #expect(try await PngineLoader.fetch(.remote(url), session: session) == cube)
    do {
      _ = try await PngineLoader.fetch(
        .remote(URL(string: "https://pngine.test/gone.png")!), session: session)
      Issue.record("a 410 was taken")
    } catch let error as PngineError {
      #expect(error.code == .invalidArgument && error.message.contains("410"))
    }
  }

  @Test("a cancelled fetch throws CancellationError, not a PngineError")
  func cancellation() async {
    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await PngineLoader.fetch(.data(Data(cube)))
    }
    await #expect(throws: CancellationError.self) { _ = try await task.value }
  }
}
