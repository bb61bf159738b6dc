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
      if case .imageReady(let key) = $0 { return key }
      return nil
    }
  }

  @Test("a 60-frame batch decodes while a render loop reads the store")
  func sixtyFrames() throws {
    let codec = SystemImageCodec()
    let sprite = try codec.encode(TestSupport.pattern(width: 100, height: 80), as: .webp)
    let store = OverlayImageStore()
    let log = EventLog<IngestEvent>()
    let pipeline = IngestPipeline(store: store, codec: codec)
    let keys = (0..<60).map { "talking_1_s_talking_1_e/\($0)/J1_X2_M\($0 % 9).webp" }
    pipeline.submit(keys.map { EncodedOverlay(key: $0, data: sprite) }) { log.append($0) }
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
    // One report per image (the last may follow its store by a moment).
    #expect(log.wait { $0.count == 60 })
    #expect(Self.readyKeys(log.all).sorted() == keys.sorted())
  }

  @Test("render-side reads return while a decode is held inside the codec")
  func readsNeverWaitForDecodes() {
    let gate = Gate()
    let store = OverlayImageStore()
    store.insert(RGBAImage(width: 4, height: 4), for: "already")
    let pipeline = IngestPipeline(
      store: store, codec: FakeCodec(gate: gate),
      configuration: .init(maximumConcurrentDecodes: 2))
    pipeline.submit(Self.batch(["held-1", "held-2"])) { _ in }
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
      configuration: .init(maximumConcurrentDecodes: 1))
    pipeline.submit(Self.batch(["a0", "a1", "a2"])) { log.append($0) }
    #expect(gate.waitEntered(1))  // a0 is being decoded
    pipeline.submit(Self.batch(["b0", "b1", "b2"])) { log.append($0) }
    gate.open()
    #expect(log.wait { Self.readyKeys($0).count == 6 })
    #expect(codec.decoded == ["a0", "b0", "a1", "a2", "b1", "b2"])
  }

  @Test("a flood of batches is shed beyond the queue bound, and counted")
  func backpressure() {
    let gate = Gate()
    let log = EventLog<IngestEvent>()
    let pipeline = IngestPipeline(
      store: OverlayImageStore(), codec: FakeCodec(gate: gate),
      configuration: .init(maximumConcurrentDecodes: 1, maximumQueuedImages: 5))
    pipeline.submit(Self.batch(["first"])) { log.append($0) }
    #expect(gate.waitEntered(1))  // the queue is empty again, one decode held
    pipeline.submit(Self.batch((0..<20).map { "f\($0)" })) { log.append($0) }
    #expect(pipeline.statistics.queued == 5)
    #expect(pipeline.statistics.shed == 15)
    let shed = log.all.filter { if case .imageShed = $0 { true } else { false } }
    #expect(shed.count == 15)
    gate.open()
    #expect(log.wait { Self.readyKeys($0).count == 6 })
    #expect(log.all.count == 21)
    // The queued-bytes bound sheds too.
    let small = IngestPipeline(
      store: OverlayImageStore(), codec: FakeCodec(gate: Gate()),
      configuration: .init(maximumConcurrentDecodes: 1, maximumQueuedBytes: 10))
    small.submit(Self.batch(["0123456789", "more"])) { _ in }
    #expect(small.statistics.shed == 1)
  }

  @Test("a long message's 1,000 queued sprites are kept; past the byte bound images are shed")
  func longMessageQueue() throws {
    let scheduler = HeldScheduler()
    let log = EventLog<IngestEvent>()
    let configuration = IngestPipeline.Configuration(maximumConcurrentDecodes: 1)
    let pipeline = IngestPipeline(
      store: OverlayImageStore(), codec: BlankCodec(), configuration: configuration,
      scheduler: scheduler)
    // 1,000 mouth sprites of 4 KB (a compressed 100×80 sprite is a few KB), in chunks of 50,
    // while no decoder runs (decoding lags behind the socket).
    func sprite(_ key: String, bytes: Int = 4_096) -> EncodedOverlay {
      EncodedOverlay(key: key, data: Data(repeating: UInt8(key.utf8.count), count: bytes))
    }
    for chunk in 0..<20 {
      pipeline.submit((0..<50).map { sprite("c\(chunk)-\($0)") }) { log.append($0) }
    }
    #expect(pipeline.statistics.queued == 1_000)
    #expect(pipeline.statistics.shed == 0)
    #expect(pipeline.statistics.queuedBytes == 1_000 * 4_096)
    #expect(!log.all.contains { if case .imageShed = $0 { true } else { false } })
    // Past the byte bound: what does not fit is shed, reported one by one; what fits is kept.
    let room = configuration.maximumQueuedBytes - pipeline.statistics.queuedBytes
    pipeline.submit(
      [sprite("too-big", bytes: room + 1), sprite("fits", bytes: room), sprite("one-more")]
    ) { log.append($0) }
    #expect(pipeline.statistics.queued == 1_001)
    #expect(pipeline.statistics.queuedBytes == configuration.maximumQueuedBytes)
    #expect(pipeline.statistics.shed == 2)
    let shed = log.all.filter { if case .imageShed = $0 { true } else { false } }
    #expect(shed == [.imageShed(key: "too-big"), .imageShed(key: "one-more")])
    // Once the decoder runs, every kept image is decoded.
    scheduler.runAll()
    #expect(Self.readyKeys(log.all).count == 1_001)
    #expect(pipeline.statistics.queued == 0 && pipeline.statistics.queuedBytes == 0)
  }

  @Test("images already in the store are ready at once and not decoded again")
  func alreadyStored() {
    let store = OverlayImageStore()
    store.insert(RGBAImage(width: 2, height: 2), for: "cached")
    let codec = FakeCodec()
    let log = EventLog<IngestEvent>()
    let pipeline = IngestPipeline(store: store, codec: codec)
    pipeline.submit(Self.batch(["cached"])) { log.append($0) }
    #expect(log.all == [.imageReady(key: "cached")])
    #expect(codec.decoded.isEmpty)
  }

  @Test(
    "the queue keeps no readiness of its own: an image sent twice is decoded once (the store joins the decode), and each submission hears of it"
  )
  func sentTwiceDecodedOnce() {
    let gate = Gate()
    let codec = FakeCodec(gate: gate)
    let first = EventLog<IngestEvent>()
    let second = EventLog<IngestEvent>()
    let pipeline = IngestPipeline(
      store: OverlayImageStore(), codec: codec,
      configuration: .init(maximumConcurrentDecodes: 2))
    pipeline.submit(Self.batch(["same"])) { first.append($0) }
    #expect(gate.waitEntered(1))  // "same" is inside the codec
    pipeline.submit(Self.batch(["same", "bad-other"])) { second.append($0) }
    gate.open()
    #expect(first.wait { $0 == [.imageReady(key: "same")] })
    #expect(second.wait { $0.count == 2 })
    #expect(second.all.contains(.imageReady(key: "same")))
    #expect(
      second.all.contains {
        if case .imageFailed(key: "bad-other", _) = $0 { true } else { false }
      })
    #expect(codec.decoded.filter { $0 == "same" }.count == 1)
    #expect(pipeline.statistics.decoding == 0 && pipeline.statistics.ready == 2)
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
