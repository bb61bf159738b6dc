import Dispatch
import Foundation
import LIVAProtocol
import Locking
import Testing

@testable import LIVAMedia

@Suite("IngestPipeline")
struct IngestPipelineTests {
  static func batch(_ labels: [String]) -> [EncodedOverlay] {
    labels.map { EncodedOverlay(key: $0, data: Data($0.utf8)) }
  }

  static func readyKeys(_ events: [IngestEvent]) -> [String] {
    events.compactMap {
      if case .imageReady(let key, _, _) = $0 { return key }
      return nil
    }
  }

  @Test("a 60-frame batch decodes while a render loop reads the store")
  func sixtyFrames() throws {
    let codec = SystemImageCodec()
    let sprite = try codec.encode(TestSupport.pattern(width: 100, height: 80), as: .webp)
    let store = OverlayImageStore()
    let log = EventLog<IngestEvent>()
    let pipeline = IngestPipeline(store: store, codec: codec) { log.append($0) }
    let keys = (0..<60).map { "talking_1_s_talking_1_e/\($0)/J1_X2_M\($0 % 9).webp" }
    pipeline.submit(
      keys.map { EncodedOverlay(key: $0, data: sprite) }, chunk: 0, message: 1)
    pipeline.chunkImagesSent(chunk: 0, message: 1, total: 60)
    // The render loop: reads every key in turn until all are ready; every read is either a
    // miss or a complete image, never a partial one.
    var reads = 0
    var readyKeys = Set<String>()
    while readyKeys.count < 60 && reads < 50_000_000 {
      let key = keys[reads % 60]
      if let image = store.image(for: key) {
        #expect(image.width == 100 && image.height == 80 && image.byteCount == 32_000)
        readyKeys.insert(key)
      }
      reads += 1
    }
    #expect(readyKeys.count == 60)
    #expect(log.wait { $0.contains { if case .chunkReady = $0 { true } else { false } } })
    let events = log.all
    #expect(Set(Self.readyKeys(events)) == Set(keys))
    // chunkReady comes after the last image of the chunk.
    #expect(events.last == .chunkReady(chunk: 0, message: 1, totalImagesSent: 60))
  }

  @Test("render-side reads return while a decode is held inside the codec")
  func readsNeverWaitForDecodes() {
    let gate = Gate()
    let store = OverlayImageStore()
    store.insert(RGBAImage(width: 4, height: 4), for: "already")
    let pipeline = IngestPipeline(
      store: store, codec: FakeCodec(gate: gate),
      configuration: .init(maximumConcurrentDecodes: 2)
    ) { _ in }
    pipeline.submit(Self.batch(["held-1", "held-2"]), chunk: 0, message: 1)
    // Both workers are now inside the codec and cannot leave until the gate opens.
    #expect(gate.waitEntered(2))
    let reads = DispatchSemaphore(value: 0)
    let results = Locked<[Bool]>([])
    Thread.detachNewThread {
      // The "render thread": if any of these waited for a decode, it would never finish.
      let found = store.image(for: "already") != nil
      let missing = store.image(for: "held-1") == nil && !store.isReady("held-2")
      _ = store.statistics
      results.withLock { $0 = [found, missing] }
      reads.signal()
    }
    let finished = reads.wait(timeout: .now() + 10) == .success
    gate.open()
    #expect(finished, "a render-side read waited for a decode")
    #expect(results.withLock { $0 } == [true, true])
  }

  @Test("the first image of every batch is decoded before the rest of the queue")
  func firstFrameFirst() {
    let gate = Gate()
    let codec = FakeCodec(gate: gate)
    let log = EventLog<IngestEvent>()
    let pipeline = IngestPipeline(
      store: OverlayImageStore(), codec: codec,
      configuration: .init(maximumConcurrentDecodes: 1)
    ) { log.append($0) }
    pipeline.submit(Self.batch(["a0", "a1", "a2"]), chunk: 0, message: 1)
    #expect(gate.waitEntered(1))  // a0 is being decoded
    pipeline.submit(Self.batch(["b0", "b1", "b2"]), chunk: 1, message: 1)
    gate.open()
    #expect(log.wait { Self.readyKeys($0).count == 6 })
    #expect(codec.decoded == ["a0", "b0", "a1", "a2", "b1", "b2"])
  }

  @Test("chunk readiness is deferred until the chunk's batches are decoded")
  func deferredChunkReady() {
    let gate = Gate()
    let log = EventLog<IngestEvent>()
    let pipeline = IngestPipeline(
      store: OverlayImageStore(), codec: FakeCodec(gate: gate),
      configuration: .init(maximumConcurrentDecodes: 1)
    ) { log.append($0) }
    // A chunk with nothing pending is ready at once.
    pipeline.chunkImagesSent(chunk: 5, message: 1, total: 0)
    #expect(log.all == [.chunkReady(chunk: 5, message: 1, totalImagesSent: 0)])
    pipeline.submit(Self.batch(["x0", "x1"]), chunk: 0, message: 1)
    pipeline.submit(Self.batch(["x2", "bad-x3"]), chunk: 0, message: 1)
    #expect(gate.waitEntered(1))
    pipeline.chunkImagesSent(chunk: 0, message: 1, total: 4)
    #expect(log.all.count == 1)  // deferred: three images still queued, one decoding
    gate.allow(3)
    #expect(log.wait { Self.readyKeys($0).count == 3 })
    #expect(!log.all.contains(.chunkReady(chunk: 0, message: 1, totalImagesSent: 4)))
    gate.open()
    #expect(log.wait { $0.contains(.chunkReady(chunk: 0, message: 1, totalImagesSent: 4)) })
    // The failed image counted as done, and was reported before the chunk.
    let events = log.all
    let failed = events.firstIndex {
      if case .imageFailed(key: "bad-x3", _, _, _) = $0 { true } else { false }
    }
    let ready = events.firstIndex(of: .chunkReady(chunk: 0, message: 1, totalImagesSent: 4))
    #expect(failed != nil && ready != nil && failed! < ready!)
  }

  @Test("a flood of batches is shed beyond the queue bound, and counted")
  func backpressure() {
    let gate = Gate()
    let log = EventLog<IngestEvent>()
    let pipeline = IngestPipeline(
      store: OverlayImageStore(), codec: FakeCodec(gate: gate),
      configuration: .init(maximumConcurrentDecodes: 1, maximumQueuedImages: 5)
    ) { log.append($0) }
    pipeline.submit(Self.batch(["first"]), chunk: 0, message: 1)
    #expect(gate.waitEntered(1))  // the queue is empty again, one decode held
    pipeline.submit(Self.batch((0..<20).map { "f\($0)" }), chunk: 1, message: 1)
    #expect(pipeline.statistics.queued == 5)
    #expect(pipeline.statistics.shed == 15)
    let shed = log.all.filter { if case .imageShed = $0 { true } else { false } }
    #expect(shed.count == 15)
    pipeline.chunkImagesSent(chunk: 1, message: 1, total: 20)
    gate.open()
    #expect(log.wait { $0.contains(.chunkReady(chunk: 1, message: 1, totalImagesSent: 20)) })
    #expect(Self.readyKeys(log.all).count == 6)
    // The queued-bytes bound sheds too.
    let small = IngestPipeline(
      store: OverlayImageStore(), codec: FakeCodec(gate: Gate()),
      configuration: .init(maximumConcurrentDecodes: 1, maximumQueuedBytes: 10)
    ) { _ in }
    small.submit(Self.batch(["0123456789", "more"]), chunk: 0, message: 1)
    #expect(small.statistics.shed == 1)
  }

  @Test("a long message's 1,000 queued sprites are kept; past the byte bound images are shed")
  func longMessageQueue() throws {
    let scheduler = HeldScheduler()
    let log = EventLog<IngestEvent>()
    let configuration = IngestPipeline.Configuration(maximumConcurrentDecodes: 1)
    let pipeline = IngestPipeline(
      store: OverlayImageStore(), codec: BlankCodec(), configuration: configuration,
      scheduler: scheduler
    ) { log.append($0) }
    // 1,000 mouth sprites of 4 KB (a compressed 100×80 sprite is a few KB), in chunks of 50,
    // while no decoder runs (decoding lags behind the socket).
    func sprite(_ key: String, bytes: Int = 4_096) -> EncodedOverlay {
      EncodedOverlay(key: key, data: Data(repeating: UInt8(key.utf8.count), count: bytes))
    }
    for chunk in 0..<20 {
      pipeline.submit((0..<50).map { sprite("c\(chunk)-\($0)") }, chunk: chunk, message: 1)
    }
    #expect(pipeline.statistics.queued == 1_000)
    #expect(pipeline.statistics.shed == 0)
    #expect(pipeline.statistics.queuedBytes == 1_000 * 4_096)
    #expect(!log.all.contains { if case .imageShed = $0 { true } else { false } })
    // Past the byte bound: what does not fit is shed, reported one by one; what fits is kept.
    let room = configuration.maximumQueuedBytes - pipeline.statistics.queuedBytes
    pipeline.submit(
      [sprite("too-big", bytes: room + 1), sprite("fits", bytes: room), sprite("one-more")],
      chunk: 20, message: 1)
    #expect(pipeline.statistics.queued == 1_001)
    #expect(pipeline.statistics.queuedBytes == configuration.maximumQueuedBytes)
    #expect(pipeline.statistics.shed == 2)
    let shed = log.all.filter { if case .imageShed = $0 { true } else { false } }
    #expect(
      shed == [
        .imageShed(key: "too-big", chunk: 20, message: 1),
        .imageShed(key: "one-more", chunk: 20, message: 1),
      ])
    // Once the decoder runs, every kept image is decoded.
    scheduler.runAll()
    #expect(Self.readyKeys(log.all).count == 1_001)
    #expect(pipeline.statistics.queued == 0 && pipeline.statistics.queuedBytes == 0)
  }

  @Test(
    "cancelling a message drops its queued work and its events; a decode under way stores its image"
  )
  func cancelMessage() {
    let gate = Gate()
    let log = EventLog<IngestEvent>()
    let store = OverlayImageStore()
    let pipeline = IngestPipeline(
      store: store, codec: FakeCodec(gate: gate),
      configuration: .init(maximumConcurrentDecodes: 1)
    ) { log.append($0) }
    pipeline.submit(Self.batch(["m1-0", "m1-1", "m1-2"]), chunk: 0, message: 1)
    #expect(gate.waitEntered(1))
    pipeline.chunkImagesSent(chunk: 0, message: 1, total: 3)
    pipeline.cancel(message: 1)
    #expect(pipeline.statistics.cancelled == 2)
    pipeline.submit(Self.batch(["m2-0"]), chunk: 0, message: 2)
    gate.open()
    #expect(log.wait { Self.readyKeys($0) == ["m2-0"] })
    #expect(!log.all.contains { if case .chunkReady(_, 1, _) = $0 { true } else { false } })
    // Content, not the message's: m1-0 stays for whichever message shows it.
    #expect(store.isReady("m1-0") && !store.isReady("m1-1") && store.isReady("m2-0"))
  }

  @Test("a protocol batch is submitted by overlay id; frames without an image are skipped")
  func protocolBatch() throws {
    let log = EventLog<IngestEvent>()
    let pipeline = IngestPipeline(store: OverlayImageStore(), codec: FakeCodec()) {
      log.append($0)
    }
    let animation = try AnimationName(parsing: "talking_1_s_talking_1_e")
    let batch = FrameImagesBatch(
      frames: [
        OverlayFrame(
          overlayId: "talking_1_s_talking_1_e/7/J1_X2_M2.webp", animationName: animation,
          matchedSpriteFrameNumber: 7, image: EncodedImage(data: Data("sprite".utf8))),
        OverlayFrame(
          overlayId: "talking_1_s_talking_1_e/8/J1_X2_M3.webp", animationName: animation,
          matchedSpriteFrameNumber: 8),
      ], chunkIndex: 3)
    pipeline.submit(batch, message: 1)
    pipeline.chunkImagesSent(chunk: 3, message: 1, total: 2)
    #expect(log.wait { $0.contains(.chunkReady(chunk: 3, message: 1, totalImagesSent: 2)) })
    #expect(Self.readyKeys(log.all) == ["talking_1_s_talking_1_e/7/J1_X2_M2.webp"])
  }

  @Test("images already in the store are ready at once and not decoded again")
  func alreadyStored() {
    let store = OverlayImageStore()
    store.insert(RGBAImage(width: 2, height: 2), for: "cached")
    let codec = FakeCodec()
    let log = EventLog<IngestEvent>()
    let pipeline = IngestPipeline(store: store, codec: codec) { log.append($0) }
    pipeline.submit(Self.batch(["cached"]), chunk: 0, message: 2)
    #expect(log.all == [.imageReady(key: "cached", chunk: 0, message: 2)])
    #expect(codec.decoded.isEmpty)
  }
}

/// "Decodes" any bytes, however many, to a blank 2×2 image.
struct BlankCodec: ImageCodec {
  func decode(_ data: Data, limits: DecodeLimits) throws(LIVAMediaError) -> RGBAImage {
    RGBAImage(width: 2, height: 2)
  }

  func encode(_ image: RGBAImage, as format: ImageFormat, quality: Float?) throws(LIVAMediaError)
    -> Data
  {
    throw LIVAMediaError(.unsupportedOperation, "blank")
  }
}
