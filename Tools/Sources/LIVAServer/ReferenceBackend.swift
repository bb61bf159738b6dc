import Foundation
import Hummingbird
import LIVAProtocol
import Locking
import Logging
import SocketIO
import SocketIOServer

/// Faults the reference backend can inject into speech streams, for tests and demos. All of
/// them degrade playback; none may break it.
public struct BackendFaults: Hashable, Sendable {
  /// Seconds to wait before each speech event.
  public var eventDelay: Double = 0
  /// Up to this many more seconds, uniformly at random (seeded), before each speech event.
  public var jitter: Double = 0
  /// Send each chunk's image batches in reverse order, before its `receive_audio`.
  public var reorderBatches = false
  /// Never send `chunk_images_ready`.
  public var dropChunkImagesReady = false
  /// Close the client's transport after this many speech events of a message (in the middle of
  /// a chunk); the rest of the message is not sent.
  public var disconnectAfterEvents: Int?
  /// Close the client's transport once, in the middle of its first base-animation download,
  /// after this many frames of it (a reconnect during a download).
  public var disconnectDuringDownloadAfterFrames: Int?
  /// The first this many base-animation downloads leave out their last frame (and still end
  /// with `animation_frames_complete`): a download the client must reject and ask for again.
  public var incompleteDownloads = 0
  /// After the manifest, push a download the client never asked for: the first animation's
  /// frames under the name `pushed_1_s_pushed_1_e`.
  public var pushesUnrequestedAnimation = false
  /// The first this many `request_base_animations_manifest`s get no answer.
  public var unansweredManifestRequests = 0
  /// The first this many base-animation downloads stop after half their frames: no more frames
  /// and no `animation_frames_complete` (a download stalled on the backend).
  public var stalledDownloads = 0
  /// The first this many `user_message`s get no answer (counted, never spoken): a backend
  /// that lost them.
  public var unansweredMessages = 0
  /// The seed of the jitter.
  public var seed: UInt64 = 1

  /// No faults.
  public init() {}
}

/// How the reference backend streams.
public struct BackendConfiguration: Sendable {
  /// Images and audio as base64 strings or as binary attachments.
  public var encoding: BinaryEncoding = .base64
  /// How speech is planned (batch size, images per chunk, talking pose).
  public var planner = SpeechPlanner.Options()
  /// Injected faults.
  public var faults = BackendFaults()
  /// Engine.IO ping interval and timeout of the Socket.IO server.
  public var socket = SocketIOServerConfiguration()
  /// Send speech in the older per-image variant (`animation_chunk_metadata`, one
  /// `receive_frame_image` per image, an audio-only `receive_audio`) instead of batches.
  public var legacyPerImage = false
  /// When the pack has a greeting (`hi_1_s_hi_1_e`), send `play_base_animation` for it once a
  /// client has downloaded its last part (`hi_1_e_idle_1_s`): the avatar waves hello.
  public var greets = true
  /// The version announced for every animation instead of the pack's (a new avatar version
  /// for clients with a cache).
  public var manifestVersion: String?

  /// The defaults: base64, no faults.
  public init() {}
}

/// The reference LIVA backend: serves an avatar pack over the LIVA protocol exactly as
/// docs/Protocol.md describes it. It answers the manifest and base-animation requests, and turns
/// `user_message` (or `POST /messages`) into speech: text → utterance (synthesized, or the
/// closest pre-made one) → a speech plan → `receive_audio`, `receive_frame_images_batch`,
/// `chunk_images_ready` and `audio_end`, streamed to the room of the user, agent and instance.
/// A newer message to the same room cancels the stream of the older one.
public final class ReferenceBackend: Sendable {
  /// The avatar served.
  public let pack: AvatarPack
  /// The configuration.
  public let configuration: BackendConfiguration
  /// The Socket.IO server (its Hummingbird server builder serves the upgrade).
  public let socketServer: SocketIOServer
  private let synthesizer: SpeechSynthesizer
  private let streams = Locked<[String: Task<Void, Never>]>([:])
  private let stalledLeft: Locked<Int>
  private let manifestRequestsLeftUnanswered: Locked<Int>
  private let messagesReceived = Locked(0)
  private let spoken = Locked<[SpokenMessage]>([])
  /// The next `master_chunk_index`: it counts on over every message the server speaks.
  private let nextMasterChunk = Locked(0)
  private let downloadCut = Locked(false)
  private let incompleteLeft: Locked<Int>
  private let logger: Logger

  /// Creates a backend for `pack`, speaking with `synthesizer`.
  public init(
    pack: AvatarPack, synthesizer: SpeechSynthesizer, configuration: BackendConfiguration = .init(),
    logger: Logger = Logger(label: "liva.backend", factory: { _ in SwiftLogNoOpLogHandler() })
  ) {
    self.pack = pack
    self.synthesizer = synthesizer
    self.configuration = configuration
    self.logger = logger
    incompleteLeft = Locked(configuration.faults.incompleteDownloads)
    stalledLeft = Locked(configuration.faults.stalledDownloads)
    manifestRequestsLeftUnanswered = Locked(
      configuration.faults.unansweredManifestRequests)
    let box = Locked<ReferenceBackend?>(nil)
    socketServer = SocketIOServer(configuration: configuration.socket, logger: logger) { socket in
      box.withLock { $0 }?.accept(socket)
    }
    box.withLock { $0 = self }
  }

  /// How many user messages (socket or HTTP) the backend has received.
  public var messageCount: Int { messagesReceived.withLock { $0 } }

  /// One message the backend planned speech for: what a client must show of it.
  public struct SpokenMessage: Sendable, Hashable {
    /// The text spoken.
    public var text: String
    /// The mouths (overlay frames) planned in each chunk, in chunk order.
    public var mouthsPerChunk: [Int]
    /// The same mouths, each with its sprite and where it goes (``SpeechFrame``), in playback
    /// order per chunk: what a recording's pictures are compared with.
    public var framesPerChunk: [[SpeechFrame]]
    /// Whether every event of the speech was sent (false while streaming, or when a newer
    /// message or a disconnect cut it).
    public var streamedWhole: Bool
  }

  /// Every message spoken so far, in the order their speech was planned: the expectation a
  /// recording is checked against (every planned mouth shown, every chunk heard).
  public var spokenMessages: [SpokenMessage] { spoken.withLock { $0 } }

  /// The room a connection joins: `{user_id}-{agent_id}-instance-{instance_id}`.
  public static func room(user: String, agent: String, instance: String?) -> String {
    LIVAConnectionQuery(
      userID: user, agentID: agent, instanceID: instance ?? "default", userResolution: ""
    ).room
  }

  /// Runs the backend (Socket.IO and `POST /messages`) until the task is cancelled.
  /// - Parameter onRunning: called with the bound port once the server listens (useful with
  ///   port 0).
  public func run(
    host: String = "127.0.0.1", port: Int, onRunning: @escaping @Sendable (Int) -> Void = { _ in }
  ) async throws {
    let router = Router()
    router.post("/messages") { request, context -> Response in
      await self.receiveHTTPMessage(request, context: context)
    }
    let app = Application(
      router: router, server: socketServer.httpServerBuilder,
      configuration: .init(address: .hostname(host, port: port)),
      onServerRunning: { channel in onRunning(channel.localAddress?.port ?? port) },
      logger: logger)
    try await app.run()
  }

  // MARK: - Connections

  private func accept(_ socket: SocketIOServerSocket) {
    let query = socket.query
    let room = Self.room(
      user: query[Wire.Query.userId] ?? "", agent: query[Wire.Query.agentId] ?? "",
      instance: query[Wire.Query.instanceId])
    socket.join(room)
    logger.info("client connected", metadata: ["room": "\(room)", "sid": "\(socket.id)"])
    Task {
      for await event in socket.events { await self.handle(event, from: socket, room: room) }
    }
  }

  private func handle(_ event: SocketIOEvent, from socket: SocketIOServerSocket, room: String) async
  {
    let request: ClientRequest?
    do {
      request = try ClientRequest.decode(
        name: event.name, payload: event.arguments.first ?? .null)
    } catch {
      logger.warning("client event refused", metadata: ["error": "\(error)"])
      return
    }
    switch request {
    case .baseAnimationsManifest:
      let ignored = manifestRequestsLeftUnanswered.withLock { left -> Bool in
        guard left > 0 else { return false }
        left -= 1
        return true
      }
      guard !ignored else {
        logger.info("manifest request left unanswered (fault)")
        return
      }
      var manifest = pack.wireManifest
      if let version = configuration.manifestVersion {
        manifest = manifest.mapValues {
          BaseAnimationInfo(frameCount: $0.frameCount, version: version)
        }
      }
      send(.baseAnimationsManifest(manifest), to: socket)
      if configuration.faults.pushesUnrequestedAnimation,
        let first = manifest.keys.sorted(by: { $0.rawValue < $1.rawValue }).first,
        let count = pack.frameCount(of: first),
        let pushed = try? AnimationName(parsing: "pushed_1_s_pushed_1_e")
      {
        logger.info("fault: pushing an unrequested download", metadata: ["as": "\(pushed)"])
        sendAnimation(first, frames: count, to: socket, as: pushed)
      }
    case .specificBaseAnimation(let name, _):
      guard let count = pack.frameCount(of: name) else {
        logger.warning("unknown animation requested", metadata: ["animation": "\(name)"])
        return
      }
      sendAnimation(name, frames: count, to: socket)
    case .userMessage(let text, let ready):
      say(text, readyAnimations: ready.map(Set.init), toRoom: room, via: socket)
    case .setSessionID, .userFullAudio, nil:
      logger.debug("event ignored", metadata: ["event": "\(event.name)"])
    }
  }

  /// Sends animation `name`'s frames, named `wireName` on the wire (`name` by default).
  private func sendAnimation(
    _ name: AnimationName, frames count: Int, to socket: SocketIOServerSocket,
    as wireName: AnimationName? = nil
  ) {
    let source = name
    let name = wireName ?? name
    send(.animationTotalFrames(name, totalFrames: count), to: socket)
    let incomplete = incompleteLeft.withLock { left -> Bool in
      guard left > 0 else { return false }
      left -= 1
      return true
    }
    let stalls = stalledLeft.withLock { left -> Bool in
      guard left > 0 else { return false }
      left -= 1
      return true
    }
    for index in 0..<count where !(incomplete && index == count - 1) {
      if stalls, index == count / 2 {
        logger.info("fault: the download stalls", metadata: ["animation": "\(name)"])
        return
      }
      if let limit = configuration.faults.disconnectDuringDownloadAfterFrames, index == limit,
        !downloadCut.withLock({ cut in
          defer { cut = true }
          return cut
        })
      {
        logger.info("fault: closing the transport mid-download", metadata: ["animation": "\(name)"])
        socket.closeTransport()
        return
      }
      do {
        let data = try pack.baseFrameData(source, frame: index)
        send(.receiveBaseFrame(name, frameIndex: index, image: data), to: socket)
      } catch {
        logger.error(
          "base frame unreadable",
          metadata: ["animation": "\(name)", "frame": "\(index)", "error": "\(error)"])
        return
      }
    }
    send(.animationFramesComplete(name), to: socket)
    if configuration.greets, name.rawValue == "hi_1_e_idle_1_s",
      let greeting = try? AnimationName(parsing: "hi_1_s_hi_1_e"),
      pack.frameCount(of: greeting) != nil
    {
      send(.playBaseAnimation(greeting), to: socket)
    }
  }

  private func send(_ event: OutgoingEvent, to socket: SocketIOServerSocket) {
    socket.emit(event.name, [event.payload])
  }

  // MARK: - Speech

  /// Speaks `text` to every client in `room`: cancels the room's current stream, plans the
  /// speech and streams it. Returns at once; the stream runs in the background.
  public func say(
    _ text: String, readyAnimations: Set<AnimationName>? = nil, toRoom room: String,
    via socket: SocketIOServerSocket? = nil
  ) {
    let number = messagesReceived.withLock { count -> Int in
      count += 1
      return count
    }
    guard number > configuration.faults.unansweredMessages else {
      logger.info("message left unanswered (fault)", metadata: ["number": "\(number)"])
      return
    }
    let task = Task {
      do {
        let speech = try await synthesizer.speak(text)
        if let reason = speech.fallbackReason {
          logger.info(
            "using a pre-made utterance",
            metadata: ["id": "\(speech.utterance.id)", "reason": "\(reason)"])
        }
        let planner = SpeechPlanner(pack: pack, options: configuration.planner)
        // Chunks of one utterance are one per its chunks; reserve that many indexes.
        let first = nextMasterChunk.withLock { next in
          defer { next += speech.utterance.chunks.count }
          return next
        }
        let plan = try planner.plan(
          speech.utterance, readyAnimations: readyAnimations, firstMasterChunkIndex: first,
          timestamp: Date())
        let entry = spoken.withLock { spoken -> Int in
          spoken.append(
            SpokenMessage(
              text: text, mouthsPerChunk: plan.chunks.map(\.frames.count),
              framesPerChunk: plan.chunks.map(\.frames), streamedWhole: false))
          return spoken.count - 1
        }
        let whole = try await stream(plan, toRoom: room, via: socket)
        spoken.withLock { $0[entry].streamedWhole = whole }
      } catch is CancellationError {
        logger.debug("stream cancelled by a newer message", metadata: ["room": "\(room)"])
      } catch {
        logger.error("speech failed", metadata: ["room": "\(room)", "error": "\(error)"])
      }
    }
    let previous = streams.withLock { streams -> Task<Void, Never>? in
      defer { streams[room] = task }
      return streams[room]
    }
    previous?.cancel()
  }

  /// Streams `plan` to `room`; false when a fault cut it short.
  private func stream(_ plan: SpeechPlan, toRoom room: String, via socket: SocketIOServerSocket?)
    async throws -> Bool
  {
    let faults = configuration.faults
    var random = SeededRandom(seed: faults.seed)
    var sent = 0
    var events: [OutgoingEvent] = []
    for chunk in plan.chunks {
      let stamp = Date().timeIntervalSince1970 * 1000
      var chunkEvents =
        configuration.legacyPerImage
        ? chunk.legacyEvents(encoding: configuration.encoding)
        : chunk.events(encoding: configuration.encoding, emissionTimestamp: stamp)
      if faults.reorderBatches && !configuration.legacyPerImage {
        let audio = chunkEvents.removeFirst()
        let ready = chunkEvents.removeLast()
        chunkEvents = chunkEvents.reversed() + [audio, ready]
      }
      if faults.dropChunkImagesReady {
        chunkEvents.removeAll { $0.name == Wire.Event.chunkImagesReady }
      }
      events += chunkEvents
    }
    events.append(.audioEnd)
    for event in events {
      let wait = faults.eventDelay + faults.jitter * random.unit()
      if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
      try Task.checkCancellation()
      socketServer.emit(event.name, [event.payload], toRoom: room)
      sent += 1
      if let limit = faults.disconnectAfterEvents, sent >= limit {
        logger.info("fault: closing the transport mid-message", metadata: ["room": "\(room)"])
        for client in socketServer.connectedSockets where client.rooms.contains(room) {
          client.closeTransport()
        }
        return false
      }
    }
    return true
  }

  private func receiveHTTPMessage(_ request: Request, context: some RequestContext) async
    -> Response
  {
    guard let user = request.headers[.init("X-User-ID")!],
      let body = try? await request.body.collect(upTo: 1 << 20),
      let json = try? JSONValue(parsing: String(buffer: body)),
      let message = try? HTTPUserMessage(body: json)
    else {
      return Response(status: .badRequest)
    }
    let room = Self.room(user: user, agent: message.agentID, instance: message.instanceID)
    say(message.message, readyAnimations: message.readyAnimations.map(Set.init), toRoom: room)
    return Response(status: .accepted)
  }
}

/// SplitMix64: a small seeded generator, so fault jitter replays exactly.
struct SeededRandom {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func unit() -> Double {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
  }
}
