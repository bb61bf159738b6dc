import Testing

@testable import LIVAMedia

@Suite("ImageCache")
struct ImageCacheTests {
  /// A 10×10 image: 400 bytes.
  static func image(_ tag: UInt8 = 0) -> RGBAImage {
    RGBAImage(width: 10, height: 10, fill: RGBA(tag, tag, tag, 255))
  }

  /// A cache of `images` 400-byte images, `released` of them released.
  static func cache(_ images: Int, released: Int? = nil) -> ImageCache<String> {
    ImageCache(byteLimit: 400 * images, releasedByteLimit: released.map { 400 * $0 })
  }

  static func held(_ cache: ImageCache<String>, _ keys: [String]) -> [String] {
    keys.filter { cache.contains($0) }
  }

  @Test("least recently used images are evicted first; reads refresh recency, peeks do not")
  func lruOrder() {
    var cache = Self.cache(3)
    for key in ["a", "b", "c"] { #expect(cache.insert(Self.image(), for: key).evicted.isEmpty) }
    #expect(cache.image(for: "a") != nil)  // a is now the most recent
    #expect(cache.peek("b") != nil)  // b stays the least recent
    #expect(cache.insert(Self.image(), for: "d").evicted.map(\.key) == ["b"])
    #expect(cache.insert(Self.image(), for: "e").evicted.map(\.key) == ["c"])
    #expect(Self.held(cache, ["a", "b", "c", "d", "e"]) == ["a", "d", "e"])
    #expect(cache.bytes == 1200 && cache.count == 3)
  }

  @Test("byte accounting follows inserts, replacements and refusals")
  func byteAccounting() {
    var cache = ImageCache<String>(byteLimit: 2000)
    _ = cache.insert(Self.image(), for: "a")
    #expect(cache.bytes == 400)
    // A replacement is not an eviction.
    let replaced = cache.insert(RGBAImage(width: 20, height: 10), for: "a")
    #expect(replaced.stored && replaced.evicted.isEmpty)
    #expect(cache.bytes == 800 && cache.count == 1)
    let refused = cache.insert(RGBAImage(width: 30, height: 20), for: "big")
    #expect(!refused.stored && refused.evicted.isEmpty && !cache.contains("big"))
    #expect(cache.bytes == 800)
  }

  @Test("past the byte limit, unpinned images go first however recent; the newest is spared")
  func unpinnedGoFirst() {
    var cache = Self.cache(3)
    cache.pin("pinned-old")
    _ = cache.insert(Self.image(), for: "pinned-old")
    _ = cache.insert(Self.image(), for: "unpinned")
    cache.pin("pinned")
    _ = cache.insert(Self.image(), for: "pinned")
    #expect(cache.insert(Self.image(), for: "new").evicted.map(\.key) == ["unpinned"])
    // Only pinned images and the new one: the least recently used pinned one goes (the budget
    // is never exceeded), the one just stored never.
    #expect(cache.insert(Self.image(), for: "newer").evicted.map(\.key) == ["new"])
    cache.pin("newest")
    #expect(cache.insert(Self.image(), for: "newest").evicted.map(\.key) == ["newer"])
    cache.pin("last")
    #expect(cache.insert(Self.image(), for: "last").evicted.map(\.key) == ["pinned-old"])
    #expect(cache.bytes == 1200)
  }

  @Test("a pin taken before its image is stored holds the image once it is; pins are counted")
  func pinBeforeStore() {
    var cache = Self.cache(2)
    cache.pin("mouth")
    cache.pin("mouth")
    _ = cache.insert(Self.image(), for: "mouth")
    _ = cache.insert(Self.image(), for: "other")
    #expect(cache.insert(Self.image(), for: "newest").evicted.map(\.key) == ["other"])
    cache.unpin(["mouth"])  // one pin left
    #expect(cache.insert(Self.image(), for: "later").evicted.map(\.key) == ["newest"])
    cache.unpin(["mouth", "never-pinned"])  // none left; a key with none is skipped
    #expect(cache.insert(Self.image(), for: "last").evicted.map(\.key) == ["mouth"])
    _ = cache.removeAll()
    cache.pin("never-pinned")  // one pin: the unpin before took none
    _ = cache.insert(Self.image(), for: "never-pinned")
    _ = cache.insert(Self.image(), for: "y")
    #expect(cache.insert(Self.image(), for: "z").evicted.map(\.key) == ["y"])
  }

  @Test(
    "released images are kept within their own limit, least recently used out first; unpinned and pinned ones stay"
  )
  func releasedLimit() {
    var cache = Self.cache(25, released: 2)
    for key in ["a", "b", "c", "d"] {
      cache.pin(key)
      _ = cache.insert(Self.image(), for: key)
    }
    _ = cache.insert(Self.image(), for: "fresh")  // decoded ahead, not yet pinned
    #expect(cache.release(["a", "b"]).isEmpty)  // 800 bytes released: within the limit
    #expect(cache.releasedBytes == 800)
    #expect(cache.release(["c"]).map(\.key) == ["a"])
    #expect(Self.held(cache, ["a", "b", "c", "d", "fresh"]) == ["b", "c", "d", "fresh"])
    // Pinned again, a released image no longer counts and is not trimmed.
    cache.pin("b")
    #expect(cache.releasedBytes == 400)
    _ = cache.image(for: "c")
    cache.pin("e")
    _ = cache.insert(Self.image(), for: "e")
    // Released now: d, c (read since, so more recent) and e; d is the least recently used.
    #expect(cache.release(["d", "e"]).map(\.key) == ["d"])
    #expect(Self.held(cache, ["b", "c", "d", "e", "fresh"]) == ["b", "c", "e", "fresh"])
    // A key still pinned by another is not released; an unpin does not release.
    cache.pin("b")
    #expect(cache.release(["b"]).isEmpty && cache.releasedBytes == 800)
    cache.unpin(["b"])
    #expect(cache.releasedBytes == 800)
  }

  @Test("removals: by key, of unpinned images, all of them, and room made ahead; pins stay")
  func removals() {
    var cache = Self.cache(4)
    for key in ["a", "b", "c", "d"] { _ = cache.insert(Self.image(), for: key) }
    cache.pin("c")
    #expect(cache.makeRoom(for: 800).map(\.key) == ["a", "b"])
    #expect(cache.removeAll { $0 == "d" }.map(\.key) == ["d"])
    _ = cache.insert(Self.image(), for: "e")
    #expect(cache.removeUnpinned().map(\.key) == ["e"])
    #expect(cache.removeAll().map(\.key) == ["c"])
    #expect(cache.bytes == 0 && cache.count == 0)
    _ = cache.insert(Self.image(), for: "c")
    #expect(cache.removeUnpinned().isEmpty && cache.count == 1)  // its pin stayed
  }
}
