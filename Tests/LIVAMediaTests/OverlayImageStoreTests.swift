import Dispatch
import Foundation
import LIVATestSupport
import Locking
import Testing

@testable import LIVAMedia

@Suite("OverlayImageStore")
struct OverlayImageStoreTests {
  /// A 10×10 image: 400 bytes.
  static func image(_ tag: UInt8 = 0) -> RGBAImage {
    RGBAImage(width: 10, height: 10, fill: RGBA(tag, tag, tag, 255))
  }

  @Test("least recently used images are evicted first; reads refresh recency")
  func lruOrder() {
    let store = OverlayImageStore(byteLimit: 1200)
    store.insert(Self.image(1), for: "a")
    store.insert(Self.image(2), for: "b")
    store.insert(Self.image(3), for: "c")
    #expect(store.image(for: "a") != nil)  // a is now the most recent
    store.insert(Self.image(4), for: "d")
    #expect(store.isReady("a") && !store.isReady("b") && store.isReady("c") && store.isReady("d"))
    store.insert(Self.image(5), for: "e")
    #expect(!store.isReady("c"))
    let stats = store.statistics
    #expect(stats.evictions == 2 && stats.bytes == 1200 && stats.count == 3)
  }

  @Test("an image alone larger than the store is refused and counted")
  func refusal() {
    let store = OverlayImageStore(byteLimit: 2000)
    store.insert(Self.image(), for: "a")
    #expect(!store.insert(RGBAImage(width: 30, height: 20), for: "big"))
    #expect(store.statistics.rejected == 1 && !store.isReady("big"))
    #expect(store.statistics.bytes == 400 && store.statistics.count == 1)
  }

  @Test("hits and misses are counted; isReady counts nothing")
  func hitsAndMisses() {
    let store = OverlayImageStore()
    store.insert(Self.image(), for: "a")
    _ = store.image(for: "a")
    _ = store.image(for: "a")
    _ = store.image(for: "zzz")
    _ = store.isReady("a")
    #expect(store.statistics.hits == 2 && store.statistics.misses == 1)
  }

  @Test(
    "every removal is reported (room made, played beyond their limit, purge); no replacement or read is"
  )
  func removalsAreReported() {
    let removed = EventLog<[String]>()
    let store = OverlayImageStore(byteLimit: 800, playedByteLimit: 400)
    store.observeRemovals { removed.append($0) }
    store.insert(Self.image(), for: "a")
    store.insert(Self.image(), for: "b")
    _ = store.image(for: "a")
    store.insert(Self.image(), for: "c")  // evicts b, the least recently used
    #expect(removed.all == [["b"]])
    store.claim(["a", "c"], message: 1)
    store.release(["a", "c"], message: 1)  // 800 bytes played: a, the older, goes
    #expect(removed.all == [["b"], ["a"]])
    store.insert(Self.image(7), for: "c")  // a replacement
    _ = store.image(for: "c")
    _ = store.isReady("d")
    #expect(removed.all.count == 2)
    store.purgeUnclaimed()
    #expect(removed.all == [["b"], ["a"], ["c"]])
    #expect(store.statistics.evictions == 2 && store.statistics.removals == 1)
  }
}

@Suite("Overlay store: claims")
struct OverlayImageClaimTests {
  static let image = RGBAImage(width: 10, height: 10, fill: RGBA(1, 2, 3))  // 400 bytes

  @Test("past the byte limit, images no message claims go first, however recent")
  func unclaimedGoFirst() {
    let store = OverlayImageStore(byteLimit: 1_200)
    store.claim(["claimed-old", "claimed"], message: 1)
    store.insert(Self.image, for: "claimed-old")
    store.insert(Self.image, for: "unclaimed")
    store.insert(Self.image, for: "claimed")
    store.claim(["new"], message: 2)
    store.insert(Self.image, for: "new")
    #expect(store.isReady("claimed-old") && store.isReady("claimed") && store.isReady("new"))
    #expect(!store.isReady("unclaimed"))
    // Released by its message, an image is among the first to go.
    store.release(["claimed"], message: 1)
    store.insert(Self.image, for: "newer")
    #expect(!store.isReady("claimed") && store.isReady("claimed-old"))
  }

  @Test(
    "a message's claim is one, however often it is made: the player claims a key per chunk and releases it once, when no queued chunk uses it"
  )
  func claimOncePerMessage() {
    let store = OverlayImageStore(byteLimit: 800)
    store.claim(["mouth"], message: 1)  // chunk 0's plan, before its image
    store.claim(["mouth"], message: 1)  // chunk 1's plan
    store.insert(Self.image, for: "mouth")
    store.insert(Self.image, for: "other")
    store.insert(Self.image, for: "newest")
    #expect(store.isReady("mouth") && !store.isReady("other"))
    store.release(["mouth"], message: 1)  // chunk 1 played
    store.insert(Self.image, for: "late")
    #expect(!store.isReady("mouth"))
  }

  @Test(
    "withdrawing an interrupted message's claims keeps its images, first to go; another message's claim holds"
  )
  func withdrawClaims() {
    let store = OverlayImageStore(byteLimit: 1_200)
    store.claim(["only1", "shared"], message: 1)
    store.claim(["shared"], message: 2)
    store.insert(Self.image, for: "only1")
    store.insert(Self.image, for: "shared")
    store.claim(["pending"], message: 1)  // its image never came
    store.withdrawClaims(message: 1)
    #expect(store.isReady("only1") && store.isReady("shared"))
    store.insert(Self.image, for: "pending")
    store.insert(Self.image, for: "new")
    #expect(!store.isReady("only1") && store.isReady("shared") && store.isReady("pending"))
    store.insert(Self.image, for: "newer")
    #expect(store.isReady("shared") && !store.isReady("pending"))
  }

  @Test(
    "played images are kept for reuse within their own limit, oldest first out; fresh unclaimed ones and claimed ones stay"
  )
  func playedLimit() {
    let removed = Locked<[String]>([])
    let store = OverlayImageStore(byteLimit: 10_000, playedByteLimit: 800)
    store.observeRemovals { keys in removed.withLock { $0 += keys } }
    store.claim(["a", "b", "c"], message: 1)
    store.claim(["d"], message: 2)
    for key in ["a", "b", "c"] { store.insert(Self.image, for: key) }
    store.insert(Self.image, for: "fresh")  // decoded ahead, not yet claimed
    store.insert(Self.image, for: "d")
    store.release(["a", "b"], message: 1)
    #expect(store.isReady("a") && store.isReady("b"))  // 800 bytes played: within the limit
    store.release(["c"], message: 1)
    // 1,200 played: the least recently used of them goes, and the player is told.
    #expect(!store.isReady("a") && store.isReady("b") && store.isReady("c"))
    #expect(removed.withLock { $0 } == ["a"])
    #expect(store.isReady("fresh") && store.isReady("d"))
    // A played image claimed again is in use: it no longer counts, and is not trimmed.
    store.claim(["b"], message: 3)
    _ = store.image(for: "c")
    store.claim(["e"], message: 2)
    store.insert(Self.image, for: "e")
    store.release(["d", "e"], message: 2)
    // Played now: d, c (read since, so more recent) and e; d is the least recently used.
    #expect(store.isReady("b") && !store.isReady("d") && store.isReady("c") && store.isReady("e"))
    #expect(store.statistics.bytes == 400 * 4)  // b (claimed), fresh, c and e
  }

  @Test("a release by a message that made no claim changes nothing")
  func releaseWithoutClaim() {
    let store = OverlayImageStore(byteLimit: 800, playedByteLimit: 0)
    store.claim(["mouth"], message: 1)
    store.insert(Self.image, for: "mouth")
    store.release(["mouth"], message: 2)
    store.insert(Self.image, for: "other")
    store.insert(Self.image, for: "newest")
    #expect(store.isReady("mouth") && !store.isReady("other"))
  }

  @Test("a memory-pressure purge drops unclaimed and played images, never claimed ones")
  func purgeUnclaimed() {
    let store = OverlayImageStore()
    store.claim(["claimed", "played"], message: 1)
    for key in ["claimed", "played", "fresh"] { store.insert(Self.image, for: key) }
    store.release(["played"], message: 1)
    store.purgeUnclaimed()
    #expect(store.isReady("claimed") && !store.isReady("played") && !store.isReady("fresh"))
    #expect(store.statistics.count == 1 && store.statistics.removals == 2)
  }
}

// Decodes and concurrency: part of the suite CI runs under the thread sanitizer.
extension OverlayImageStoreTests {
  @Test("concurrent requests to decode one key run the codec once")
  func decodeOnce() {
    let gate = Gate()
    let codec = FakeCodec(gate: gate)
    let store = OverlayImageStore()
    let results = EventLog<Result<RGBAImage, LIVAMediaError>>()
    let group = DispatchGroup()
    // The first request enters the codec and is held there.
    DispatchQueue.global().async(group: group) {
      store.decode(Data("k".utf8), for: "k", codec: codec) { results.append($0) }
    }
    #expect(gate.waitEntered(1))
    // Seven more requests while it is held: each returns at once, without decoding.
    DispatchQueue.concurrentPerform(iterations: 7) { _ in
      store.decode(Data("k".utf8), for: "k", codec: codec) { results.append($0) }
    }
    #expect(results.all.isEmpty)
    gate.open()
    #expect(results.wait { $0.count == 8 })
    #expect(group.wait(timeout: .now() + 10) == .success)
    #expect(codec.decoded == ["k"])
    #expect(results.all.allSatisfy { (try? $0.get())?.width == 2 })
    // Once stored, a request is answered from the store.
    store.decode(Data("k".utf8), for: "k", codec: codec) { results.append($0) }
    #expect(results.all.count == 9 && codec.decoded == ["k"])
    #expect(store.statistics.decodes == 1 && store.statistics.deduplicated == 8)
  }

  @Test("a claim made while its image decodes holds the image once stored")
  func claimWhileDecoding() {
    let gate = Gate()
    let store = OverlayImageStore(byteLimit: 32)  // two of the fake codec's 2×2 images
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      store.decode(Data("k".utf8), for: "k", codec: FakeCodec(gate: gate)) { _ in done.signal() }
    }
    #expect(gate.waitEntered(1))
    store.claim(["k"], message: 1)
    gate.open()
    #expect(done.wait(timeout: .now() + 10) == .success)
    store.insert(RGBAImage(width: 2, height: 2), for: "a")
    store.insert(RGBAImage(width: 2, height: 2), for: "b")
    #expect(store.isReady("k") && !store.isReady("a"))
  }

  @Test("decode failures and images larger than the store are reported and counted")
  func decodeFailure() {
    let store = OverlayImageStore(byteLimit: 8)
    let results = EventLog<Result<RGBAImage, LIVAMediaError>>()
    store.decode(Data("bad".utf8), for: "x", codec: FakeCodec()) { results.append($0) }
    store.decode(Data("big".utf8), for: "y", codec: FakeCodec()) { results.append($0) }
    let codes = results.all.map { result -> LIVAMediaError.Code? in
      if case .failure(let error) = result { error.code } else { nil }
    }
    #expect(codes == [.corruptData, .limitExceeded])
    #expect(store.statistics.decodeFailures == 1 && store.statistics.rejected == 1)
    #expect(!store.isReady("x") && !store.isReady("y"))
  }

  @Test("concurrent readers, writers and claims keep the accounting consistent")
  func concurrentReadersAndWriters() {
    let store = OverlayImageStore(byteLimit: 400 * 20, playedByteLimit: 400 * 5)
    let codec = FakeCodec()
    DispatchQueue.concurrentPerform(iterations: 8) { worker in
      var generator = SplitMix64(seed: UInt64(worker + 1))
      for step in 0..<2000 {
        let key = "k\(generator.next() % 40)"
        switch (worker + step) % 6 {
        case 0: store.insert(OverlayImageStoreTests.image(), for: key)
        case 1: store.decode(Data(key.utf8), for: key, codec: codec) { _ in }
        case 2: _ = store.isReady(key)
        case 3: store.claim([key], message: worker)
        case 4:
          if step % 97 == 0 {
            store.withdrawClaims(message: worker)
          } else {
            store.release([key], message: worker)
          }
        default: _ = store.image(for: key)
        }
      }
    }
    let stats = store.statistics
    #expect(stats.bytes <= store.byteLimit)
    let held = (0..<40).filter { store.isReady("k\($0)") }
    #expect(held.count == stats.count)
    // 400-byte inserts and 16-byte fake decodes mix; bytes must match what is held.
    let bytes = held.compactMap { store.image(for: "k\($0)")?.byteCount }.reduce(0, +)
    #expect(bytes == stats.bytes)
  }
}
