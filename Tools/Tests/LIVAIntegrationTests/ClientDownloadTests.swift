import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import LIVAServer
import LIVATestSupport
import Locking
import SocketIO
import Testing

@testable import LIVA

/// Base-animation downloads that fail: the cached version stays, the
/// download is asked for again under ``DownloadRetryPolicy``. The reference backend over real
/// loopback Socket.IO; every wait is bounded.
@Suite("Client downloads", .serialized)
struct ClientDownloadTests {
  static func client(
    port: Int, cacheRoot: URL, displayLink: any DisplayLink = VirtualDisplayLink(),
    configure: (inout LIVAConfiguration) -> Void = { _ in }
  ) throws -> LIVAClient {
    var configuration = LIVAConfiguration(
      serverURL: "http://127.0.0.1:\(port)", userID: "user", agentID: "sample",
      cacheRoot: cacheRoot)
    configuration.resolution = 96
    configuration.decodeScheduler = InlineDecodeScheduler()
    configure(&configuration)
    return try LIVAClient(
      configuration: configuration, displayLink: displayLink,
      audio: HeadlessAudioOutput(), surface: CallbackSurface { _ in })
  }

  static func temporaryRoot() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent(
      "liva-downloads-\(UUID().uuidString)")
  }

  /// Collects a client's events in the background, signalling the client's change feed after
  /// each (so a wait on the feed sees the event counted).
  final class Events: Sendable {
    let seen = Locked<[LIVAEvent]>([])
    init(_ client: LIVAClient) {
      let stream = client.events
      let changes = client.changes
      Task { [seen] in
        for await event in stream {
          seen.withLock { $0.append(event) }
          changes.signal()
        }
      }
    }
    var downloadErrors: Int {
      seen.withLock { events in
        events.filter {
          if case .error(let error) = $0 { error.code == .download } else { false }
        }.count
      }
    }
  }

  @Test("an incomplete download (a frame missing at animation_frames_complete) is asked for again")
  func incompleteIsRetried() async throws {
    // The first download, the idle loop's first half, leaves out its last frame.
    let server = try await TestBackend.start { $0.faults.incompleteDownloads = 1 }
    // A retry is due on the display clock, which moves only when the test ticks it: until
    // then the retry cannot have been sent, whatever the machine's speed.
    let link = VirtualDisplayLink()
    let client = try Self.client(
      port: server.port, cacheRoot: Self.temporaryRoot(), displayLink: link)
    let events = Events(client)
    await client.connect()
    link.tick(at: 0)
    // The last animation asked for is in, and the first one's download failed.
    let last = try AnimationName(parsing: "hi_1_e_idle_1_s")
    #expect(
      await until(client.changes) {
        events.downloadErrors == 1 && client.player.baseFrames.isAvailable(last)
      })
    // While the retry waits, the download is pending and the idle loop not there: nobody takes
    // the avatar for loaded.
    #expect(!client.player.baseFrames.isAvailable(.idleForward))
    #expect(client.pendingDownloads > 0, "a retry to come is a pending download")
    #expect(client.state != .ready)
    // Display time passes (the retry's 1 s): the animation is asked for again and comes whole.
    var now = 0.0
    var loaded = false
    while !loaded && now < 30 {
      now += 0.1
      link.tick(at: now)
      loaded = await until(client.changes, timeout: .milliseconds(100)) {
        client.state == .ready && client.pendingDownloads == 0
          && client.player.baseFrames.isAvailable(.idleForward)
      }
    }
    #expect(loaded, "not loaded after \(now) s of display time")
    #expect(now >= 1, "retried after \(now) s of display time, before its 1 s wait")
    await client.disconnect()
    await server.stop()
  }

  // A manifest request the backend lost left the client connected and never ready.
  @Test("a manifest that does not come is asked for again after 10 s (display time)")
  func manifestAskedAgain() async throws {
    let server = try await TestBackend.start { $0.faults.unansweredManifestRequests = 1 }
    let link = VirtualDisplayLink()
    let client = try Self.client(
      port: server.port, cacheRoot: Self.temporaryRoot(), displayLink: link)
    await client.connect()
    try #require(await until(client.changes) { client.state == .connected })
    link.run(from: 0, to: 9)
    #expect(client.pendingDownloads == 1)  // the manifest, still awaited
    link.run(from: 9, to: 11)
    #expect(
      await until(client.changes) { client.state == .ready && client.pendingDownloads == 0 })
    await client.disconnect()
    await server.stop()
  }

  // A download whose events stopped stayed in flight for ever, never asked again.
  @Test("a download that stalls fails after 15 s without an event and is asked for again")
  func stalledDownloadRetried() async throws {
    let server = try await TestBackend.start { $0.faults.stalledDownloads = 1 }
    let link = VirtualDisplayLink()
    let client = try Self.client(
      port: server.port, cacheRoot: Self.temporaryRoot(), displayLink: link
    ) {
      $0.downloadRetry = DownloadRetryPolicy(maximumRetries: 2, initialDelay: .milliseconds(1))
    }
    let events = Events(client)
    await client.connect()
    // Every download but the stalled one (the first) is in.
    let last = try AnimationName(parsing: "hi_1_e_idle_1_s")
    try #require(
      await until(client.changes) {
        client.player.baseFrames.isAvailable(last) && client.pendingDownloads == 1
      })
    link.run(from: 0, to: 14)
    #expect(client.pendingDownloads == 1 && events.downloadErrors == 0)
    link.run(from: 14, to: 16)
    #expect(
      await until(client.changes) {
        events.downloadErrors == 1 && client.state == .ready && client.pendingDownloads == 0
      })
    await client.disconnect()
    await server.stop()
  }

  @Test("a download the backend pushes unasked is refused: nothing of it reaches the disk cache")
  func unrequestedDownloadIgnored() async throws {
    let server = try await TestBackend.start { $0.faults.pushesUnrequestedAnimation = true }
    let root = Self.temporaryRoot()
    defer { try? FileManager.default.removeItem(at: root) }
    let client = try Self.client(port: server.port, cacheRoot: root)
    let events = Events(client)
    await client.connect()
    let pushed = try AnimationName(parsing: "pushed_1_s_pushed_1_e")
    let refused = {
      events.seen.withLock { events in
        events.contains {
          if case .rejected(let error) = $0 { error.code == .unrequested } else { false }
        }
      }
    }
    #expect(
      await until(client.changes) {
        refused() && client.state == .ready && client.pendingDownloads == 0
      })
    #expect(!client.player.baseFrames.isAvailable(pushed))
    #expect(!client.player.baseFrames.isDownloading(pushed))
    let folders = (try? FileManager.default.subpathsOfDirectory(atPath: root.path)) ?? []
    #expect(!folders.contains { $0.contains("pushed_1_s_pushed_1_e") }, "\(folders)")
    await client.disconnect()
    await server.stop()
  }

  @Test("a new version whose downloads keep failing: retried as the policy says, the old one plays")
  func failingNewVersionKeepsOld() async throws {
    let root = Self.temporaryRoot()
    let first = try await TestBackend.start()
    var cached: BaseAnimationInfo?
    do {
      let client = try Self.client(port: first.port, cacheRoot: root)
      await client.connect()
      try #require(
        await until(client.changes) {
          client.state == .ready && client.pendingDownloads == 0
            && client.player.readyAnimations.count >= 6
        })
      cached = client.player.baseFrames.cachedEntry(.idleForward)
      await client.disconnect()
    }
    await first.stop()
    let old = try #require(cached?.version)

    // The same server (the cache is keyed by it) with version "2" of every animation, and no
    // download ever completes.
    let second = try await TestBackend.start(port: first.port) {
      $0.manifestVersion = "2"
      $0.faults.incompleteDownloads = 10_000
    }
    let client = try Self.client(
      port: second.port, cacheRoot: root, displayLink: RealTimeDisplayLink(hz: 30)
    ) {
      $0.downloadRetry = DownloadRetryPolicy(maximumRetries: 2, initialDelay: .milliseconds(1))
    }
    let events = Events(client)
    let animations = client.player.readyAnimations.count
    await client.connect()
    // Every animation: its first try and two retries fail; then the client stops asking.
    #expect(await until(client.changes) { events.downloadErrors == animations * 3 })
    #expect(await until(client.changes) { client.pendingDownloads == 0 })
    #expect(events.downloadErrors == animations * 3)
    #expect(client.state == .ready)
    #expect(client.player.baseFrames.cachedEntry(.idleForward)?.version == old)
    #expect(client.player.readyAnimations.count == animations)
    #expect(try client.player.baseFrames.frame(0, of: .idleForward).width == 96)
    await client.disconnect()
    await second.stop()
  }

  @Test(
    "the retry policy: 1, 2, 4 s, then give up; capped",
    arguments: [
      (DownloadRetryPolicy(), [1, 2, 3, 4], [1_000, 2_000, 4_000, nil]),
      (
        DownloadRetryPolicy(
          maximumRetries: 5, initialDelay: .seconds(10), maximumDelay: .seconds(30)),
        [1, 2, 3, 5, 6], [10_000, 20_000, 30_000, 30_000, nil]
      ),
      (DownloadRetryPolicy(maximumRetries: 0), [1], [nil]),
    ] as [(DownloadRetryPolicy, [Int], [Int?])])
  func policy(policy: DownloadRetryPolicy, failures: [Int], milliseconds: [Int?]) {
    #expect(
      failures.map { policy.delay(afterFailures: $0) }
        == milliseconds.map { $0.map { Duration.milliseconds($0) } })
  }

  @Test("retries count per animation, start over after a success and on a new connection")
  func retriesStateMachine() {
    var retries = DownloadRetries(policy: DownloadRetryPolicy(maximumRetries: 2))
    #expect(retries.failed(.idleForward) == .retry(after: .seconds(1)))
    #expect(retries.failed(.idleBack) == .retry(after: .seconds(1)))
    #expect(retries.failed(.idleForward) == .retry(after: .seconds(2)))
    #expect(retries.failed(.idleForward) == .giveUp(failures: 3))
    retries.succeeded(.idleBack)
    #expect(retries.failed(.idleBack) == .retry(after: .seconds(1)))
    retries.reset()
    #expect(retries.failed(.idleForward) == .retry(after: .seconds(1)))
  }
}

/// The disk cache is keyed by server, agent and resolution.
@Suite("Client cache keys", .serialized)
struct ClientCacheKeyTests {
  @Test("another agent, resolution or server on the same cache root never draws these frames")
  func keyedCache() async throws {
    let root = ClientDownloadTests.temporaryRoot()
    let server = try await TestBackend.start()
    do {
      let client = try ClientDownloadTests.client(port: server.port, cacheRoot: root)
      await client.connect()
      try #require(
        await until(client.changes) {
          client.state == .ready && client.pendingDownloads == 0
            && client.player.readyAnimations.count >= 6
        })
      await client.disconnect()
    }
    // The same server, agent and resolution: warm.
    let same = try ClientDownloadTests.client(port: server.port, cacheRoot: root)
    #expect(same.player.readyAnimations.count >= 6)
    // Another agent, resolution or server: cold.
    let others: [(inout LIVAConfiguration) -> Void] = [
      { $0.agentID = "other" }, { $0.resolution = 512 },
      { $0.serverURL = "http://localhost:\(server.port)" },
    ]
    for configure in others {
      let other = try ClientDownloadTests.client(
        port: server.port, cacheRoot: root, configure: configure)
      #expect(other.player.readyAnimations.isEmpty, "\(other.configuration)")
    }
    await server.stop()
  }

  @Test("one backend reached at changing addresses keeps one cache when told its identity")
  func cacheServerIdentity() {
    let root = URL(fileURLWithPath: "/tmp/liva-cache")
    func configuration(port: Int, identity: String?) -> LIVAConfiguration {
      var configuration = LIVAConfiguration(
        serverURL: "http://127.0.0.1:\(port)", userID: "u", agentID: "sample", cacheRoot: root)
      configuration.cacheServerIdentity = identity
      return configuration
    }
    // By default the address is the server: another port, another cache.
    #expect(
      configuration(port: 40001, identity: nil).cacheDirectory
        != configuration(port: 40002, identity: nil).cacheDirectory)
    let first = configuration(port: 40001, identity: "loopback-demo").cacheDirectory
    #expect(first == configuration(port: 40002, identity: "loopback-demo").cacheDirectory)
    #expect(first != configuration(port: 40001, identity: "another-demo").cacheDirectory)
    #expect(first.deletingLastPathComponent().path == root.path)
    // The identity stands for the server in the key; agent and resolution still count.
    var otherAgent = configuration(port: 40001, identity: "loopback-demo")
    otherAgent.agentID = "other"
    #expect(first != otherAgent.cacheDirectory)
  }
}

/// A client the application drops without `disconnect()` is released, and so is its socket:
/// nothing reconnects or plays for ever behind the app's back.
@Suite("Client life cycle", .serialized)
struct ClientLifeCycleTests {
  @Test("a connected client dropped without disconnect() is released with its socket")
  func droppedClientIsReleased() async throws {
    let server = try await TestBackend.start()
    let root = ClientDownloadTests.temporaryRoot()
    defer { try? FileManager.default.removeItem(at: root) }
    weak var weakClient: LIVAClient?
    weak var weakSocket: SocketIOClient?
    do {
      let client = try ClientDownloadTests.client(port: server.port, cacheRoot: root)
      weakClient = client
      await client.connect()
      #expect(await until(client.changes) { client.state == .ready })
      weakSocket = client.protectedState.withLock { $0.socket } as? SocketIOClient
      #expect(weakSocket != nil)
    }
    #expect(
      await until(every: .milliseconds(10)) { weakClient == nil }, "the client is still alive")
    #expect(
      await until(every: .milliseconds(10)) { weakSocket == nil }, "its socket is still alive")
    await server.stop()
  }

  // A disconnect() that ran while connect() was between creating its socket
  // and starting it found nothing to stop; connect() then started the socket: a live orphan
  // (connected, reconnecting, its speech played) the client no longer held.
  @Test(
    "connect() and disconnect() at once from many tasks end in one socket or none, as the state says",
    arguments: 0..<24)
  func connectDisconnectInterleavings(seed: Int) async throws {
    let server = try await TestBackend.start()
    let root = ClientDownloadTests.temporaryRoot()
    defer { try? FileManager.default.removeItem(at: root) }
    let client = try ClientDownloadTests.client(port: server.port, cacheRoot: root)
    var generator = SplitMix64(seed: UInt64(seed))
    let calls = (0..<6).map { _ in
      (connects: generator.next() % 2 == 0, yields: generator.next() % 4)
    }
    await withTaskGroup(of: Void.self) { group in
      for call in calls {
        group.addTask {
          for _ in 0..<call.yields { await Task.yield() }
          if call.connects { await client.connect() } else { await client.disconnect() }
        }
      }
    }
    let holdsSocket = client.protectedState.withLock { $0.socket != nil }
    let sockets = { server.backend.socketServer.connectedSockets.count }
    #expect(
      await until(every: .milliseconds(10)) { sockets() == (holdsSocket ? 1 : 0) },
      "client holds a socket: \(holdsSocket); the server has \(sockets()) (calls \(calls))")
    if holdsSocket {
      #expect(await until(client.changes) { client.state == .ready })
    } else {
      #expect(client.state == .idle)
    }
    await client.disconnect()
    #expect(await until(every: .milliseconds(10)) { sockets() == 0 })
    #expect(client.state == .idle)
    await server.stop()
  }
}
