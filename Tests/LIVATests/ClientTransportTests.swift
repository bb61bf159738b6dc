import Foundation
import LIVAMedia
import LIVAProtocol
import LIVATestSupport
import Locking
import Logging
import SocketIO
import Testing

@testable import LIVA

/// A transport that plays the backend: the test says what the backend sends and which status
/// the link reports; what the client emits is recorded.
final class FakeTransport: LIVATransport {
  let events: SocketIOEvents
  let statusUpdates: AsyncStream<SocketIOStatus>
  private let feed: SocketIOEvents.Continuation
  private let statusFeed: AsyncStream<SocketIOStatus>.Continuation
  private let state = Locked<(started: Bool, emitted: [String], disconnects: Int)>(
    (false, [], 0))
  /// Signalled after every call of the client.
  let changes = ChangeFeed()
  /// When set, every emit is recorded and then refused with this error (a link that fails).
  let emitError = Locked<(any Error)?>(nil)

  init() {
    (events, feed) = SocketIOEvents.makeStream()
    (statusUpdates, statusFeed) = AsyncStream.makeStream()
  }

  /// What the link has delivered (the test moves it).
  let received = Locked(0)
  var bytesReceived: Int { received.withLock { $0 } }

  var isStarted: Bool { state.withLock { $0.started } }
  /// What the client emitted: event names, and `request <animation>` for a download.
  var emitted: [String] { state.withLock { $0.emitted } }
  var disconnects: Int { state.withLock { $0.disconnects } }

  func connect() async {
    state.withLock { $0.started = true }
    statusFeed.yield(.connecting)
    changes.signal()
  }

  func disconnect() async {
    state.withLock {
      $0.started = false
      $0.disconnects += 1
    }
    statusFeed.yield(.disconnected(.clientDisconnect))
    changes.signal()
  }

  func emit(_ name: String, _ arguments: [JSONValue]) async throws {
    var line = name
    if case .object(let payload)? = arguments.first,
      case .string(let animation)? = payload["animationType"]
    {
      line = "request \(animation)"
    }
    state.withLock { $0.emitted.append(line) }
    changes.signal()
    if let error = emitError.withLock({ $0 }) { throw error }
  }

  /// The link reports `status`.
  func report(_ status: SocketIOStatus) { statusFeed.yield(status) }

  /// The backend sends `event` on the connection with socket id `sid`.
  func send(_ event: OutgoingEvent, sid: String) {
    feed.yield(SocketIOEvent(name: event.name, arguments: [event.payload], sid: sid))
  }
}

/// The client's shell over a transport that plays the backend, the display on a virtual clock:
/// what the client asks for, and what it does when the link dies, a download stalls or the
/// backend pushes what nobody asked for. No socket, no sleep: each wait is on a change feed.
@Suite("Client over a fake transport")
struct ClientTransportTests {
  let idle = AnimationName.idleForward

  final class Rig: Sendable {
    let client: LIVAClient
    let link = VirtualDisplayLink()
    let transports = Locked<[FakeTransport]>([])
    let root = FileManager.default.temporaryDirectory.appendingPathComponent(
      "liva-transport-\(UUID().uuidString)")

    init() throws {
      var configuration = LIVAConfiguration(
        serverURL: "http://backend", userID: "u", agentID: "7", cacheRoot: root)
      configuration.resolution = 16
      configuration.decodeScheduler = InlineDecodeScheduler()
      configuration.downloadRetry = DownloadRetryPolicy(maximumRetries: 1)
      let transports = transports
      configuration.makeTransport = { _, _ in
        let transport = FakeTransport()
        transports.withLock { $0.append(transport) }
        return transport
      }
      client = try LIVAClient(
        configuration: configuration, displayLink: link, audio: HeadlessAudioOutput(),
        surface: CallbackSurface { _ in })
    }

    var transport: FakeTransport { transports.withLock { $0.last! } }

    /// Waits until the newest transport's emits satisfy `condition`. The bound is generous:
    /// beside this suite, long synchronous tests hold both of the machine's pool threads for
    /// seconds, and the client's tasks wait for one.
    func emitted(_ condition: @escaping ([String]) -> Bool) async -> Bool {
      let transport = transport
      return await until(transport.changes, timeout: .seconds(60)) {
        condition(transport.emitted)
      }
    }

    /// Connects, answers the manifest the client asks for with the idle loop alone, and begins
    /// the idle download the client then asks for. Returns the transport.
    func idleDownloadBegun() async -> FakeTransport {
      let idle = AnimationName.idleForward
      await client.connect()
      let transport = transport
      transport.report(.connected(sid: "a"))
      // The manifest answers the client's request (statuses and events come on two streams).
      #expect(await emitted { $0 == ["request_base_animations_manifest"] })
      transport.send(.baseAnimationsManifest([idle: BaseAnimationInfo(frameCount: 2)]), sid: "a")
      #expect(await emitted { $0.last == "request \(idle)" })
      transport.send(.animationTotalFrames(idle, totalFrames: 2), sid: "a")
      return transport
    }

    deinit { try? FileManager.default.removeItem(at: root) }
  }

  static func png() throws -> Data {
    try SystemImageCodec().encode(
      RGBAImage(width: 16, height: 16, fill: RGBA(200, 10, 10, 255)), as: .png)
  }

  @Test("a link that dies mid-download: what was staged is dropped; the next connection asks again")
  func deadLinkMidDownload() async throws {
    let rig = try Rig()
    let transport = await rig.idleDownloadBegun()
    transport.send(.receiveBaseFrame(idle, frameIndex: 0, image: try Self.png()), sid: "a")
    #expect(
      await until(rig.client.changes) { rig.client.player.baseFrames.isDownloading(idle) })
    // Dead: the staged frame goes; nothing is pending on a connection that is gone.
    transport.report(.disconnected(.pingTimeout))
    #expect(
      await until(rig.client.changes) {
        !rig.client.player.baseFrames.isDownloading(idle) && rig.client.pendingDownloads == 0
      })
    #expect(rig.client.state == .connecting)
    // Its late frame is not taken; the next connection asks for the manifest and the download.
    transport.send(.receiveBaseFrame(idle, frameIndex: 1, image: try Self.png()), sid: "a")
    transport.report(.connected(sid: "b"))
    #expect(await rig.emitted { $0.filter { $0.hasPrefix("request_base") }.count == 2 })
    transport.send(.baseAnimationsManifest([idle: BaseAnimationInfo(frameCount: 2)]), sid: "b")
    #expect(await rig.emitted { $0.filter { $0.hasPrefix("request idle") }.count == 2 })
    transport.send(.animationTotalFrames(idle, totalFrames: 2), sid: "b")
    for index in 0..<2 {
      transport.send(.receiveBaseFrame(idle, frameIndex: index, image: try Self.png()), sid: "b")
    }
    transport.send(.animationFramesComplete(idle), sid: "b")
    #expect(await until(rig.client.changes) { rig.client.state == .ready })
    await rig.client.disconnect()
  }

  @Test("a download that stalls fails after 15 s of display time and is asked for again once")
  func stalledDownload() async throws {
    let rig = try Rig()
    let transport = await rig.idleDownloadBegun()
    #expect(
      await until(rig.client.changes) { rig.client.player.baseFrames.isDownloading(idle) })
    rig.link.run(from: 0, to: 14.9)
    #expect(transport.emitted.filter { $0.hasPrefix("request idle") }.count == 1)
    // 15 s without an event: failed, retried after the policy's 1 s.
    rig.link.run(from: 14.9, to: 16.5)
    #expect(await rig.emitted { $0.filter { $0.hasPrefix("request idle") }.count == 2 })
    // The one retry stalls too: given up, nothing pending, no third ask.
    rig.link.run(from: 16.5, to: 60)
    #expect(await until(rig.client.changes) { rig.client.pendingDownloads == 0 })
    #expect(transport.emitted.filter { $0.hasPrefix("request idle") }.count == 2)
    await rig.client.disconnect()
  }

  @Test("an animation the backend pushes unasked is refused and not stored")
  func unrequestedPush() async throws {
    let rig = try Rig()
    let events = rig.client.events
    await rig.client.connect()
    let transport = rig.transport
    transport.report(.connected(sid: "a"))
    let pushed = try AnimationName(parsing: "pushed_1_s_pushed_1_e")
    transport.send(.animationTotalFrames(pushed, totalFrames: 1), sid: "a")
    transport.send(.receiveBaseFrame(pushed, frameIndex: 0, image: try Self.png()), sid: "a")
    transport.send(.animationFramesComplete(pushed), sid: "a")
    var refused: LIVAProtocolError?
    for await event in events {
      if case .rejected(let error) = event {
        refused = error
        break
      }
    }
    #expect(refused?.code == .unrequested)
    #expect(!rig.client.player.baseFrames.isAvailable(pushed))
    #expect(!rig.client.player.baseFrames.isDownloading(pushed))
    #expect(rig.client.pendingDownloads == 1)  // only the manifest, awaited
    await rig.client.disconnect()
  }

  @Test("a client the app drops stops its transport")
  func droppedClientStopsTransport() async throws {
    let transports = Locked<[FakeTransport]>([])
    do {
      let rig = try Rig()
      await rig.client.connect()
      rig.transport.report(.connected(sid: "a"))
      #expect(await rig.emitted { !$0.isEmpty })
      transports.withLock { $0 = rig.transports.withLock { $0 } }
    }
    let transport = try #require(transports.withLock { $0.first })
    #expect(await until(transport.changes, timeout: .seconds(60)) { transport.disconnects == 1 })
  }
}
