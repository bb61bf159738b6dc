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
    store.insert(Self.image(1), for: "a", message: 1)
    store.insert(Self.image(2), for: "b", message: 1)
    store.insert(Self.image(3), for: "c", message: 1)
    #expect(store.image(for: "a") != nil)  // a is now the most recent
    store.insert(Self.image(4), for: "d", message: 1)
    #expect(store.isReady("a") && !store.isReady("b") && store.isReady("c") && store.isReady("d"))
    store.insert(Self.image(5), for: "e", message: 1)
    #expect(!store.isReady("c"))
    let stats = store.statistics
    #expect(stats.evictions == 2 && stats.bytes == 1200 && stats.count == 3)
  }

  @Test(
    "a claim made before its image is stored owns the image once it is: unclaimed images go first, and a release or an eviction of the message undoes the claim"
  )
  func claimBeforeStore() {
    let store = OverlayImageStore(byteLimit: 1200)
    #expect(!store.retain("mouth", message: 1))  // its plan came before its image
    #expect(!store.retain("gone", message: 2))
    store.evict(message: 2)
    store.insert(Self.image(1), for: "mouth", message: nil)
    store.insert(Self.image(2), for: "gone", message: nil)
    store.insert(Self.image(3), for: "other", message: nil)
    store.insert(Self.image(4), for: "newest", message: nil)
    // The oldest is pushed out unless a message claimed it: "gone" (its claim was evicted).
    #expect(store.isReady("mouth") && !store.isReady("gone"))
    store.release(["mouth"], message: 1)
    store.insert(Self.image(5), for: "late", message: nil)
    #expect(!store.isReady("mouth"))  // played: no longer owned
  }

  @Test("byte accounting follows inserts, replacements and refusals")
  func byteAccounting() {
    let store = OverlayImageStore(byteLimit: 2000)
    store.insert(Self.image(), for: "a", message: nil)
    #expect(store.statistics.bytes == 400)
    store.insert(RGBAImage(width: 20, height: 10), for: "a", message: nil)
    #expect(store.statistics.bytes == 800 && store.statistics.count == 1)
    #expect(!store.insert(RGBAImage(width: 30, height: 20), for: "big", message: nil))
    #expect(store.statistics.rejected == 1 && !store.isReady("big"))
    #expect(store.statistics.bytes == 800)
  }

  @Test("hits and misses are counted; isReady counts nothing")
  func hitsAndMisses() {
    let store = OverlayImageStore()
    store.insert(Self.image(), for: "a", message: 1)
    _ = store.image(for: "a")
    _ = store.image(for: "a")
    _ = store.image(for: "zzz")
    _ = store.isReady("a")
    #expect(store.statistics.hits == 2 && store.statistics.misses == 1)
  }

  @Test("evicting a message removes only images no other message uses")
  func evictMessage() {
    let store = OverlayImageStore()
    store.insert(Self.image(), for: "only1", message: 1)
    store.insert(Self.image(), for: "shared", message: 1)
    #expect(store.retain("shared", message: 2))
    store.insert(Self.image(), for: "unowned", message: nil)
    store.insert(Self.image(), for: "only2", message: 2)
    store.evict(message: 1)
    #expect(!store.isReady("only1"))
    #expect(store.isReady("shared") && store.isReady("unowned") && store.isReady("only2"))
    store.evict(message: 2)
    #expect(!store.isReady("shared") && !store.isReady("only2") && store.isReady("unowned"))
    #expect(store.statistics.bytes == 400 && store.statistics.removals == 3)
  }

  @Test("purge empties the store")
  func purge() {
    let store = OverlayImageStore()
    for i in 0..<5 { store.insert(Self.image(), for: "k\(i)", message: 1) }
    store.purge()
    #expect(store.statistics.bytes == 0 && store.statistics.count == 0)
    #expect(!store.isReady("k0") && store.image(for: "k4") == nil)
    store.insert(Self.image(), for: "k0", message: 1)
    #expect(store.statistics.count == 1)
  }

  @Test("every removal is reported: LRU eviction, message eviction, purge")
  func removalsAreReported() {
    let removed = EventLog<[String]>()
    let store = OverlayImageStore(byteLimit: 800) { removed.append($0) }
    store.insert(Self.image(), for: "a", message: 1)
    store.insert(Self.image(), for: "b", message: 2)
    _ = store.image(for: "a")
    store.insert(Self.image(), for: "c", message: 2)  // evicts b, the least recently used
    #expect(removed.all == [["b"]])
    store.evict(message: 1)
    #expect(removed.all == [["b"], ["a"]])
    store.insert(Self.image(), for: "d", message: nil)
    store.purge()
    #expect(removed.all.count == 3 && Set(removed.all[2]) == ["c", "d"])
    // Replacing an image is not a removal, and keeps its users.
    store.insert(Self.image(), for: "e", message: 3)
    store.insert(Self.image(7), for: "e", message: 4)
    #expect(removed.all.count == 3)
    store.evict(message: 3)
    #expect(store.isReady("e"))
    store.evict(message: 4)
    #expect(!store.isReady("e") && removed.all.last == ["e"])
    store.insert(Self.image(), for: "c", message: 5)
    store.insert(Self.image(), for: "d", message: 5)
    #expect(removed.all.count == 4)
    // Reads and readiness checks never report anything.
    _ = store.image(for: "c")
    _ = store.isReady("d")
    #expect(removed.all.count == 4)
  }

  @Test("concurrent requests to decode one key run the codec once")
  func decodeOnce() {
    let gate = Gate()
    let codec = FakeCodec(gate: gate)
    let store = OverlayImageStore()
    let results = EventLog<Result<RGBAImage, LIVAMediaError>>()
    let group = DispatchGroup()
    // The first request enters the codec and is held there.
    DispatchQueue.global().async(group: group) {
      store.decode(Data("k".utf8), for: "k", message: 1, codec: codec) { results.append($0) }
    }
    #expect(gate.waitEntered(1))
    // Seven more requests while it is held: each returns at once, without decoding.
    DispatchQueue.concurrentPerform(iterations: 7) { _ in
      store.decode(Data("k".utf8), for: "k", message: 2, codec: codec) { results.append($0) }
    }
    #expect(results.all.isEmpty)
    gate.open()
    #expect(results.wait { $0.count == 8 })
    #expect(group.wait(timeout: .now() + 10) == .success)
    #expect(codec.decoded == ["k"])
    #expect(results.all.allSatisfy { (try? $0.get())?.width == 2 })
    #expect(store.statistics.decodes == 1 && store.statistics.deduplicated == 7)
    // Both messages own it now.
    store.evict(message: 1)
    #expect(store.isReady("k"))
  }

  @Test("a decode whose every message was evicted meanwhile is not stored")
  func evictedWhileDecoding() {
    let gate = Gate()
    let store = OverlayImageStore()
    let results = EventLog<Result<RGBAImage, LIVAMediaError>>()
    DispatchQueue.global().async {
      store.decode(Data("k".utf8), for: "k", message: 1, codec: FakeCodec(gate: gate)) {
        results.append($0)
      }
    }
    #expect(gate.waitEntered(1))
    store.evict(message: 1)
    gate.open()
    #expect(results.wait { $0.count == 1 })
    if case .failure(let error) = results.all.first {
      #expect(error.code == .cancelled)
    } else {
      Issue.record("expected a cancelled result")
    }
    #expect(!store.isReady("k"))
  }

  @Test("decode failures are reported and counted")
  func decodeFailure() {
    let store = OverlayImageStore()
    let results = EventLog<Result<RGBAImage, LIVAMediaError>>()
    store.decode(Data("bad".utf8), for: "x", message: 1, codec: FakeCodec()) {
      results.append($0)
    }
    #expect(results.all.count == 1)
    #expect(store.statistics.decodeFailures == 1 && !store.isReady("x"))
  }

  @Test("concurrent readers and writers keep the accounting consistent")
  func concurrentReadersAndWriters() {
    let store = OverlayImageStore(byteLimit: 400 * 20)
    let codec = FakeCodec()
    DispatchQueue.concurrentPerform(iterations: 8) { worker in
      var generator = SplitMix64(seed: UInt64(worker + 1))
      for step in 0..<2000 {
        let key = "k\(generator.next() % 40)"
        switch (worker + step) % 5 {
        case 0: store.insert(Self.image(), for: key, message: worker % 3)
        case 1:
          store.decode(Data(key.utf8), for: key, message: worker % 3, codec: codec) { _ in }
        case 2: _ = store.isReady(key)
        case 3: if step % 97 == 0 { store.evict(message: worker % 3) }
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

@Suite("Overlay store: claims")
struct OverlayImageClaimTests {
  @Test("past the byte limit, images no message uses go first, however recent")
  func unclaimedGoFirst() {
    let image = RGBAImage(width: 10, height: 10, fill: RGBA(1, 2, 3))  // 400 bytes
    let store = OverlayImageStore(byteLimit: 1_200)
    store.insert(image, for: "claimed-old", message: 1)
    store.insert(image, for: "unclaimed", message: nil)
    store.insert(image, for: "claimed", message: 1)
    store.insert(image, for: "new", message: 2)
    #expect(store.isReady("claimed-old") && store.isReady("claimed") && store.isReady("new"))
    #expect(!store.isReady("unclaimed"))
    // Released by its message, an image is among the first to go.
    store.release(["claimed"], message: 1)
    store.insert(image, for: "newer", message: 2)
    #expect(!store.isReady("claimed") && store.isReady("claimed-old"))
  }

  @Test(
    "played images are kept for reuse within their own limit, oldest first out; fresh unclaimed ones and claimed ones stay"
  )
  func playedLimit() {
    let image = RGBAImage(width: 10, height: 10, fill: RGBA(1, 2, 3))  // 400 bytes
    let removed = Locked<[String]>([])
    let store = OverlayImageStore(byteLimit: 10_000, playedByteLimit: 800) { keys in
      removed.withLock { $0 += keys }
    }
    for key in ["a", "b", "c"] { store.insert(image, for: key, message: 1) }
    store.insert(image, for: "fresh", message: nil)  // decoded ahead, not yet claimed
    store.insert(image, for: "d", message: 2)
    store.release(["a", "b"], message: 1)
    #expect(store.isReady("a") && store.isReady("b"))  // 800 bytes played: within the limit
    store.release(["c"], message: 1)
    // 1,200 played: the least recently used of them goes, and the player is told.
    #expect(!store.isReady("a") && store.isReady("b") && store.isReady("c"))
    #expect(removed.withLock { $0 } == ["a"])
    #expect(store.isReady("fresh") && store.isReady("d"))
    // A played image claimed again is in use: it no longer counts, and is not trimmed.
    #expect(store.retain("b", message: 3))
    _ = store.image(for: "c")
    store.insert(image, for: "e", message: 2)
    store.release(["d", "e"], message: 2)
    // Played now: d, c (read since, so more recent) and e; d is the least recently used.
    #expect(store.isReady("b") && !store.isReady("d") && store.isReady("c") && store.isReady("e"))
    #expect(store.statistics.bytes == 400 * 4)  // b (claimed), fresh, c and e
  }
}
