import LIVAEngine
import LIVAProtocol
import LIVATestSupport
import Testing

/// A link slower than the speech: the backend sends a message's chunks (plan and audio, image
/// batches, `chunk_images_ready`) into a link that delivers a fixed number of bytes a second, in
/// order. Each event reaches the engine when its last byte has come; on every tick where bytes
/// moved, the engine hears ``LIVAEngine/linkDelivered()``. Judged from what the engine drew and
/// when it started each chunk's audio: every planned mouth drawn, in time with its audio, every
/// chunk's audio from its start.
@Suite("Engine: a link slower than the speech")
struct EngineSlowLinkTests {
  struct Link: CustomTestStringConvertible, Sendable {
    /// Bytes a second the link delivers.
    var rate: Double
    /// Frames of each chunk of the one message.
    var sizes: [Int]
    /// Bytes of one encoded mouth.
    var imageBytes: Int
    /// Bytes of a chunk's plan and audio (`receive_audio`).
    var planBytes: Int
    /// Seconds between the backend sending two chunks (0: the whole message at once).
    var gap: Double
    /// Whether the engine hears the link deliver (false: an owner that never reports it).
    var reported = true

    var testDescription: String {
      "\(Int(rate)) B/s, chunks \(sizes), \(imageBytes) B a mouth, gap \(gap) s"
        + (reported ? "" : ", not reported")
    }

    /// A case from `seed`: each chunk's bytes take at most 10 s of the link (the longest wait a
    /// delivering link gets is 15 s), and always longer than the chunk plays.
    static func generated(_ seed: UInt64) -> Link {
      var random = SplitMix64(seed: seed)
      let sizes = (0..<Int.random(in: 1...4, using: &random)).map { _ in
        Int.random(in: 15...90, using: &random)
      }
      let imageBytes = Int.random(in: 500...4000, using: &random)
      let planBytes = Int.random(in: 5000...30_000, using: &random)
      let largest = Double(sizes.max()! * imageBytes + planBytes)
      let slowest = largest / 10
      let fastest = largest / (Double(sizes.max()!) / 30) / 1.5
      return Link(
        rate: Double.random(in: slowest...max(slowest, fastest), using: &random), sizes: sizes,
        imageBytes: imageBytes, planBytes: planBytes,
        gap: Bool.random(using: &random) ? 0 : Double.random(in: 0...1.5, using: &random))
    }
  }

  /// What the session saw: the frames drawn and each chunk's audio starts.
  struct Outcome {
    var draws: [(time: Double, frame: DrawnFrame)]
    var starts: [ChunkID: [(time: Double, offset: Double)]]
    var plans: [ChunkPlan]
    var lastDelivery: Double

    /// Planned mouths never drawn with their chunk, as `chunk/frame`.
    var missing: [String] {
      var drawn = Set<String>()
      for (_, frame) in draws where !frame.overlays.isEmpty {
        if let chunk = frame.chunk, let index = frame.overlayIndex {
          drawn.insert("\(chunk.index)/\(index)")
        }
      }
      return plans.flatMap { plan in
        plan.frames.indices.map { "\(plan.index)/\($0)" }.filter { !drawn.contains($0) }
      }
    }

    /// The worst distance, in seconds, between a mouth's first drawing and where its audio is
    /// (frame `k` of a chunk belongs at `k / 30` s into the chunk's audio).
    var worstSync: Double {
      var worst = 0.0
      var seen = Set<String>()
      for (time, frame) in draws where !frame.overlays.isEmpty {
        guard let chunk = frame.chunk, let index = frame.overlayIndex,
          seen.insert("\(chunk.index)/\(index)").inserted,
          let start = starts[chunk]?.first
        else { continue }
        let audio = start.offset + time - start.time
        worst = max(worst, abs(audio - Double(index) / 30))
      }
      return worst
    }
  }

  /// Plays `link` for up to `limit` seconds at 60 Hz.
  static func play(
    _ link: Link, configuration: EngineConfiguration = .init(), limit: Double = 90
  ) -> Outcome {
    var engine = LIVAEngine(configuration: configuration, animations: animations())
    let walk = talkingWalk(count: link.sizes.reduce(0, +))
    var plans: [ChunkPlan] = []
    var start = 0
    for (index, size) in link.sizes.enumerated() {
      // Every mouth its own image, so none is ready before its batch comes.
      let frames = walk[start..<start + size].enumerated().map { k, frame in
        PlannedFrame(
          key: "c\(index)/\(k)", animation: frame.animation, baseFrame: frame.baseFrame,
          rect: rect)
      }
      plans.append(
        ChunkPlan(
          index: index, frames: frames, message: MessageID(0), startsOnFirstFrame: index == 0))
      start += size
    }
    // What the backend sends, in order: (when sent, bytes, what it does when it arrives).
    enum Event {
      case plan(Int)
      case batch([String])
      case ready(Int)
      case audioEnd
    }
    // Each event's bytes on the link's byte clock (`rate` bytes a second since 0); the link
    // idles between a gap's start and the next chunk's sending.
    var wire: [(begin: Double, end: Double, event: Event)] = []
    var bytes = 0.0
    for (index, plan) in plans.enumerated() {
      let sent = Double(index) * link.gap
      // The link's queue: an event's bytes follow the bytes before it.
      func add(_ size: Int, _ event: Event) {
        let begin = max(bytes, sent * link.rate)
        bytes = begin + Double(size)
        wire.append((begin, bytes, event))
      }
      add(link.planBytes + (index == 0 ? link.imageBytes : 0), .plan(index))
      let keys = plan.frames.flatMap(\.layers).map(\.key)
      for batch in stride(from: 0, to: keys.count, by: 50) {
        let part = Array(keys[batch..<min(batch + 50, keys.count)])
        add(part.count * link.imageBytes, .batch(part))
      }
      add(60, .ready(index))
    }
    let lastByte = bytes + 10
    wire.append((bytes, lastByte, .audioEnd))

    var draws: [(Double, DrawnFrame)] = []
    var starts: [ChunkID: [(Double, Double)]] = [:]
    var playing: (id: ChunkID, start: Double, offset: Double, length: Double)?
    var next = 0
    var delivered = 0.0
    var lastDelivery = 0.0
    var k = 0.0
    var spoke = false
    while k / 60 <= limit {
      let t = k / 60
      k += 1
      // The link has carried every byte sent so far, up to its rate.
      let now = min(lastByte, t * link.rate)
      if now > delivered {
        // Bytes moved when an event's range overlaps this tick's.
        if wire.contains(where: { $0.begin < now && $0.end > delivered }) {
          lastDelivery = t
          if link.reported { engine.linkDelivered() }
        }
        delivered = now
      }
      while next < wire.count, wire[next].end <= delivered + 1e-9 {
        switch wire[next].event {
        case .plan(let index):
          if index == 0 {
            engine.imagesReady([plans[0].frames[0].layers[0].key])
            _ = engine.begin(MessageID(0))
          }
          _ = engine.enqueue(plans[index])
        case .batch(let keys): engine.imagesReady(keys)
        case .ready(let index): engine.chunkImagesComplete(chunkIndex: index)
        case .audioEnd: engine.audioEnded()
        }
        next += 1
      }
      var clock: AudioClock?
      if let audio = playing, audio.offset + t - audio.start < audio.length {
        clock = AudioClock(chunk: audio.id, position: audio.offset + t - audio.start)
      }
      let result = engine.tick(now: t, audio: clock)
      if let frame = result.plan.frame { draws.append((t, frame)) }
      for action in result.actions {
        switch action {
        case .startAudio(let id, let offset):
          playing = (id, t, offset, Double(plans[id.index].frames.count) / 30)
          starts[id, default: []].append((t, offset))
        case .stopAudio: playing = nil
        default: break
        }
      }
      if engine.mode != .idle { spoke = true }
      if spoke && engine.mode == .idle && next == wire.count { break }
    }
    return Outcome(
      draws: draws, starts: starts, plans: plans, lastDelivery: lastDelivery)
  }

  /// Every chunk's audio started once, from its start.
  static func expectWhole(_ outcome: Outcome, _ link: Link) {
    for plan in outcome.plans {
      let starts = outcome.starts[ChunkID(message: MessageID(0), index: plan.index)] ?? []
      #expect(starts.count == 1, "chunk \(plan.index) started \(starts.count) times")
      #expect(starts.allSatisfy { $0.offset == 0 }, "chunk \(plan.index) started late")
    }
    let missing = outcome.missing
    #expect(missing.count == 0, "mouths never drawn, the first: \(missing.prefix(12))")
    // A slot and a tick at most.
    #expect(outcome.worstSync <= 1.0 / 30 + 1.0 / 60 + 1e-6)
  }

  static let seeds = RunSeed.seeds(60)

  @Test("a link slower than the speech plays every mouth with its audio", arguments: seeds)
  func generated(_ seed: UInt64) {
    let link = Link.generated(seed)
    Self.expectWhole(Self.play(link), link)
  }

  /// The paced link measured against python-socketio: 20 KB/s, two chunks of 42 mouths of
  /// 3 KB, 125 KB a chunk with its audio, sent at once.
  static let paced = Link(
    rate: 20_000, sizes: [42, 42], imageBytes: 3000, planBytes: 25_000, gap: 0)

  @Test("the paced link of the interop fault plays whole")
  func pacedLink() {
    Self.expectWhole(Self.play(Self.paced), Self.paced)
  }

  /// The finding: with the fixed waits alone (an owner that does not report the link), the
  /// chunks start without their mouths and most are never drawn.
  @Test("without the link's reports, the fixed waits lose the mouths")
  func unreported() {
    var link = Self.paced
    link.reported = false
    let outcome = Self.play(link)
    #expect(outcome.missing.count > 40)
  }

  /// A chunk larger than one batch (120 mouths): it starts once its last batch has come, not
  /// when its first ten mouths are ready, so the mouths of the later batches are drawn too.
  @Test("a chunk of three batches waits for its last one")
  func threeBatches() {
    let link = Link(rate: 40_000, sizes: [120], imageBytes: 2000, planBytes: 20_000, gap: 0)
    Self.expectWhole(Self.play(link), link)
  }

  /// A fast link is not waited for: the first chunk starts as soon as its first mouths are
  /// ready, as before (within a tick of its images' arrival plus the walk into speech).
  @Test("a fast link starts speech as soon as it did")
  func fastLink() {
    var link = Link(rate: 10_000_000, sizes: [40, 40], imageBytes: 3000, planBytes: 25_000, gap: 0)
    let reported = Self.play(link)
    link.reported = false
    let unreported = Self.play(link)
    let first = ChunkID(message: MessageID(0), index: 0)
    #expect(reported.starts[first]?.first?.time == unreported.starts[first]?.first?.time)
    Self.expectWhole(reported, link)
  }
}

/// The waits a delivering link makes have an end: a link that trickles bytes for ever (a
/// hostile or broken backend) holds speech at most ``EngineConfiguration/maxDeliveryWait``.
@Suite("Engine: the longest wait for a delivering link")
struct EngineDeliveryCapTests {
  /// Chunk 0 is queued with none of its images, which never come; the link delivers other
  /// bytes every tick (`trickle`) or none. Returns when its audio started.
  static func startOfImagelessChunk(trickle: Bool) -> Double? {
    var driver = Driver()
    driver.tick(at: 0)
    driver.enqueue(chunks(talkingWalk(count: 30), sizes: [30])[0], ready: false)
    var k = 1.0
    while k / 60 <= 30 {
      if trickle { driver.engine.linkDelivered() }
      let result = driver.tick(at: k / 60)
      if result.actions.contains(where: { $0.startedChunk != nil }) { return k / 60 }
      k += 1
    }
    return nil
  }

  @Test("a chunk whose images never come starts at the cap while bytes trickle")
  func startCap() throws {
    let configuration = EngineConfiguration()
    let quiet = try #require(Self.startOfImagelessChunk(trickle: false))
    let trickling = try #require(Self.startOfImagelessChunk(trickle: true))
    // Quiet: after maxStartWait (plus the walk into speech); trickling: after maxDeliveryWait.
    #expect(quiet < configuration.maxStartWait + 1)
    #expect(trickling >= configuration.maxDeliveryWait)
    #expect(trickling < configuration.maxDeliveryWait + 1)
  }

  /// Chunk 0 plays; chunk 1 is never announced and `audio_end` never comes. Returns how long
  /// after chunk 0's last mouth the engine was back in idle.
  static func boundaryWait(trickle: Bool) -> Double? {
    var driver = Driver()
    driver.tick(at: 0)
    driver.enqueue(chunks(talkingWalk(count: 20), sizes: [20])[0])
    var lastMouth: Double?
    var k = 1.0
    while k / 60 <= 40 {
      let t = k / 60
      k += 1
      if trickle { driver.engine.linkDelivered() }
      let result = driver.tick(at: t)
      if result.plan.frame?.overlayIndex == 19 { lastMouth = t }
      if let lastMouth, driver.engine.mode == .idle { return t - lastMouth }
    }
    return nil
  }

  @Test("a boundary waits for a chunk that never comes until the cap while bytes trickle")
  func boundaryCap() throws {
    let configuration = EngineConfiguration()
    let quiet = try #require(Self.boundaryWait(trickle: false))
    let trickling = try #require(Self.boundaryWait(trickle: true))
    #expect(quiet >= configuration.maxBoundaryHold)
    #expect(quiet < configuration.maxBoundaryHold + 2)
    #expect(trickling >= configuration.maxDeliveryWait)
    #expect(trickling < configuration.maxDeliveryWait + 2)
  }
}
