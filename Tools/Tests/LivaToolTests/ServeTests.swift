import Foundation
import LIVAProtocol
import LIVAServer
import LIVATestSupport
import Locking
import SocketIO
import Testing

/// `liva serve`'s faults and stream variants, each seen from a Socket.IO client that asks a
/// `liva serve` child process for one message: what arrives, in what order and when. Without
/// espeak-ng on its `PATH` the backend speaks the bundled utterance that best matches the text,
/// so the events a faultless stream carries are known: those of that utterance's plan.
@Suite(
  "liva serve: faults and variants, seen from a client",
  // One child at a time: eight starting at once load a 2-core machine enough to stall the
  // timing-sensitive network tests that run beside them.
  .serialized,
  .enabled(if: livaBinary != nil || requireAllTools, "the liva executable is not built"))
struct ServeTests {
  /// The message sent: its best match is `lovely-day` (2.0 s of speech in two chunks).
  static let text = "It's a lovely day"

  /// One event as the client received it.
  struct Heard: Sendable {
    var name: String
    var arguments: [JSONValue]
    /// From the emit of `user_message` to the event's arrival.
    var after: Duration
  }

  /// What one message brought.
  struct Conversation: Sendable {
    var heard: [Heard]
    /// Whether the server ended the connection (before the client did).
    var cut: Bool

    var names: [String] { heard.map(\.name) }
  }

  /// The plan the backend streams for ``text``, made once.
  static let planned = Task {
    let pack = try await Cache.preparedPack()
    return try await offThePool {
      guard let utterance = try UtteranceLibrary.bundled().bestMatch(for: text) else {
        throw LivaError("no bundled utterance")
      }
      return (utterance.id, try SpeechPlanner(pack: pack).plan(utterance))
    }
  }

  /// The plan the backend streams for ``text``.
  static func plan() async throws -> SpeechPlan {
    let (id, plan) = try await planned.value
    #expect(id == "lovely-day")
    return plan
  }

  /// The event names of a faultless stream of `plan`.
  static func names(_ plan: SpeechPlan) -> [String] {
    plan.events(encoding: .base64).map(\.name)
  }

  /// Starts `liva serve` with `flags`, connects, sends ``text`` and collects what arrives until
  /// `audio_end`, or until the server ends the connection.
  static func converse(_ flags: [String]) async throws -> Conversation {
    _ = try await Cache.preparedPack()
    return try await withServe(flags) { serve in
      let client = SocketIOClient(
        configuration: .init(
          url: "http://127.0.0.1:\(serve.port)",
          query: [
            ("user_id", "tester"), ("agent_id", "sample"), ("instance_id", "default"),
            ("userResolution", "\(Cache.width)"),
          ], reconnection: ReconnectionPolicy(isEnabled: false)))
      let collector = Task { () -> [(SocketIOEvent, ContinuousClock.Instant)] in
        var heard: [(SocketIOEvent, ContinuousClock.Instant)] = []
        // Ends at audio_end, or once cancelled and every event already received is taken.
        for await event in client.events {
          heard.append((event, .now))
          if event.name == "audio_end" { break }
        }
        return heard
      }
      let cut = Locked(false)
      let (connected, connectedContinuation) = AsyncStream<Bool>.makeStream()
      let watcher = Task {
        for await status in client.statusUpdates {
          switch status {
          case .connected: connectedContinuation.yield(true)
          case .disconnected(let reason) where reason != .clientDisconnect:
            cut.withLock { $0 = true }
            connectedContinuation.yield(false)
            collector.cancel()
          case .failed:
            connectedContinuation.yield(false)
            collector.cancel()
          default: break
          }
        }
      }
      // A bound on the whole exchange, not a wait for it.
      let bound = Task {
        try await Task.sleep(for: .seconds(30))
        connectedContinuation.yield(false)
        collector.cancel()
      }
      defer {
        bound.cancel()
        watcher.cancel()
      }
      await client.connect()
      var statuses = connected.makeAsyncIterator()
      guard await statuses.next() == true else {
        collector.cancel()
        throw LivaError("could not connect to liva serve \(flags)")
      }
      let emitted = ContinuousClock.now
      try await client.emit("user_message", [.object(["message": .string(text)])])
      let heard = await collector.value
      await client.disconnect()
      return Conversation(
        heard: heard.map {
          Heard(name: $0.0.name, arguments: $0.0.arguments, after: $0.1 - emitted)
        }, cut: cut.withLock { $0 })
    }
  }

  /// Whether `value` holds a binary attachment anywhere.
  static func carriesBinary(_ value: JSONValue) -> Bool {
    switch value {
    case .binary: return true
    case .array(let values): return values.contains(where: carriesBinary)
    case .object(let fields): return fields.values.contains(where: carriesBinary)
    default: return false
    }
  }

  @Test("without flags the message streams whole, in the plan's order, in base64")
  func faultless() async throws {
    let plan = try await Self.plan()
    let conversation = try await Self.converse([])
    #expect(conversation.names == Self.names(plan))
    #expect(!conversation.cut)
    #expect(!conversation.heard.contains { $0.arguments.contains(where: Self.carriesBinary) })
    // Each chunk's audio comes as a base64 string.
    let audio = conversation.heard.filter { $0.name == "receive_audio" }
    #expect(audio.count == plan.chunks.count)
    #expect(audio.allSatisfy { Self.audioData($0).map(Self.isString) == true })
  }

  /// `audio_data` of a `receive_audio`.
  static func audioData(_ event: Heard) -> JSONValue? {
    guard case .object(let fields) = event.arguments.first else { return nil }
    return fields["audio_data"]
  }

  static func isString(_ value: JSONValue) -> Bool {
    if case .string = value { return true }
    return false
  }

  @Test("--delay waits that many milliseconds before each speech event")
  func delay() async throws {
    let plan = try await Self.plan()
    let conversation = try await Self.converse(["--delay", "100"])
    #expect(conversation.names == Self.names(plan))
    // Each of the n events was sent 100 ms after the one before (the first 100 ms after the
    // message came): the last cannot arrive sooner than n × 100 ms after the emit.
    let last = try #require(conversation.heard.last)
    #expect(last.after >= .milliseconds(100 * conversation.heard.count))
  }

  /// The backend's jitter draws, seed 1: SplitMix64, from its published definition (each a
  /// uniform number in 0..<1).
  static func jitterDraws(_ count: Int) -> [Double] {
    var state: UInt64 = 1
    return (0..<count).map { _ in
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return Double((z ^ (z >> 31)) >> 11) / Double(UInt64(1) << 53)
    }
  }

  @Test("--jitter waits up to that many more milliseconds, drawn from the fixed seed")
  func jitter() async throws {
    let plan = try await Self.plan()
    let conversation = try await Self.converse(["--jitter", "300"])
    #expect(conversation.names == Self.names(plan))
    // The waits are 300 ms × each draw (whole milliseconds): their sum bounds the last arrival.
    let waits = Self.jitterDraws(conversation.heard.count).map { Int($0 * 300) }
    let least = waits.reduce(0, +)
    #expect(least >= 300)  // the draws of seed 1 wait in all well above a faultless stream
    let last = try #require(conversation.heard.last)
    #expect(last.after >= .milliseconds(least))
  }

  @Test("--reorder sends each chunk's image batches reversed, then its audio")
  func reorder() async throws {
    let plan = try await Self.plan()
    let conversation = try await Self.converse(["--reorder"])
    var expected: [String] = []
    for chunk in plan.chunks {
      expected += Array(repeating: "receive_frame_images_batch", count: chunk.batches.count)
      expected += ["receive_audio", "chunk_images_ready"]
    }
    #expect(conversation.names == expected + ["audio_end"])
    // Within a chunk the batches come last first.
    var batches: [Int: [Int]] = [:]
    for event in conversation.heard where event.name == "receive_frame_images_batch" {
      guard
        case .frameImagesBatch(let batch) = try ServerEvent.decode(
          name: event.name, arguments: event.arguments)
      else { continue }
      batches[batch.chunkIndex, default: []].append(batch.batchIndex ?? -1)
    }
    for chunk in plan.chunks {
      let sent = batches[chunk.audio.chunkIndex] ?? []
      #expect(sent == Array((0..<chunk.batches.count).reversed()))
    }
  }

  @Test("--drop-ready never sends chunk_images_ready")
  func dropReady() async throws {
    let plan = try await Self.plan()
    let conversation = try await Self.converse(["--drop-ready"])
    let faultless = Self.names(plan)
    #expect(faultless.contains("chunk_images_ready"))
    #expect(conversation.names == faultless.filter { $0 != "chunk_images_ready" })
  }

  @Test("--disconnect-after 2 closes the connection after two speech events")
  func disconnectAfter() async throws {
    let plan = try await Self.plan()
    let conversation = try await Self.converse(["--disconnect-after", "2"])
    #expect(conversation.cut)
    #expect(conversation.names == Array(Self.names(plan).prefix(2)))
  }

  @Test("--legacy-images streams the per-image variant")
  func legacyImages() async throws {
    let plan = try await Self.plan()
    let conversation = try await Self.converse(["--legacy-images"])
    let expected = plan.chunks.flatMap { $0.legacyEvents(encoding: .base64) }.map(\.name)
    #expect(expected.contains("receive_frame_image"))
    #expect(conversation.names == expected + ["audio_end"])
  }

  @Test("--binary sends images and audio as binary attachments")
  func binary() async throws {
    let plan = try await Self.plan()
    let conversation = try await Self.converse(["--binary"])
    #expect(conversation.names == Self.names(plan))
    for event in conversation.heard
    where ["receive_audio", "receive_frame_images_batch"].contains(event.name) {
      #expect(event.arguments.contains(where: Self.carriesBinary), "\(event.name) in base64")
    }
    let audio = conversation.heard.filter { $0.name == "receive_audio" }
    #expect(audio.count == plan.chunks.count)
    #expect(audio.allSatisfy { Self.audioData($0).map(Self.carriesBinary) == true })
  }
}
