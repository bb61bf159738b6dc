/// Decoded images by key, bounded by bytes, least recently used out first: the one cache model
/// behind ``OverlayImageStore`` and the base frames' memory of ``BaseFrameStore``.
///
/// A value with no lock and no clock: its owner locks it. Every mutation that removes images
/// returns them, so the owner can report their keys (or reuse their buffers) after unlocking.
///
/// - **Pins:** a pinned key is one something still needs (an overlay a queued chunk will
///   draw). Pins are counted per key, whether or not its image is stored yet: a pin taken
///   before the image arrives holds it once stored. Room is made from unpinned images first;
///   pinned ones go, least recently used first, only when the pinned images alone exceed
///   ``byteLimit`` (the budget is never exceeded).
/// - **Released:** an image whose last pin went with ``release(_:)`` (played) is kept for
///   reuse within ``releasedByteLimit``, the least recently used beyond it out first.
struct ImageCache<Key: Hashable> {
  /// An image removed from the cache.
  struct Removed {
    var key: Key
    var image: RGBAImage
  }

  private struct Entry {
    var key: Key
    var image: RGBAImage
    /// Its last pin went with ``release(_:)`` and no pin came since.
    var released = false
    /// Neighbours in the recency list, as slot numbers (-1: none).
    var newer = -1
    var older = -1
  }

  /// The most bytes of pixels held at once.
  let byteLimit: Int
  /// The most bytes of released images held.
  let releasedByteLimit: Int
  /// Bytes of pixels held now.
  private(set) var bytes = 0
  /// Bytes of released images held now.
  private(set) var releasedBytes = 0

  // Entries live in slots of an array, linked newest-to-oldest by slot number, so that a hit
  // costs one hash of its key and a few array writes.
  private var slotOfKey: [Key: Int] = [:]
  private var slots: [Entry?] = []
  private var freeSlots: [Int] = []
  private var newest = -1
  private var oldest = -1
  private var pins: [Key: Int] = [:]

  /// An empty cache of at most `byteLimit` bytes, `releasedByteLimit` of them released images
  /// (nil: up to `byteLimit`).
  init(byteLimit: Int, releasedByteLimit: Int? = nil) {
    self.byteLimit = max(0, byteLimit)
    self.releasedByteLimit = min(self.byteLimit, max(0, releasedByteLimit ?? self.byteLimit))
  }

  /// Images held now.
  var count: Int { slotOfKey.count }

  /// Whether `key`'s image is held. Changes nothing.
  func contains(_ key: Key) -> Bool { slotOfKey[key] != nil }

  /// `key`'s image without marking it used; nil when it is not held.
  func peek(_ key: Key) -> RGBAImage? { slotOfKey[key].flatMap { slots[$0]?.image } }

  /// `key`'s image, marked most recently used; nil when it is not held.
  mutating func image(for key: Key) -> RGBAImage? {
    guard let slot = slotOfKey[key], let image = slots[slot]?.image else { return nil }
    touch(slot)
    return image
  }

  /// Stores `image` for `key` as the most recently used image (replacing any image of `key`,
  /// keeping its pins), then evicts what no longer fits, never `key` itself. An image larger
  /// than ``byteLimit`` is refused: `stored` is false and nothing changes.
  mutating func insert(_ image: RGBAImage, for key: Key) -> (stored: Bool, evicted: [Removed]) {
    guard image.byteCount <= byteLimit else { return (false, []) }
    remove(key)
    let slot: Int
    let entry = Entry(key: key, image: image)
    if let free = freeSlots.popLast() {
      slot = free
      slots[slot] = entry
    } else {
      slot = slots.count
      slots.append(entry)
    }
    slotOfKey[key] = slot
    pushNewest(slot)
    bytes += image.byteCount
    return (true, evict(toFit: byteLimit, sparing: key))
  }

  /// Adds a pin to `key`: its image is kept before any unpinned one, and is no longer
  /// released.
  mutating func pin(_ key: Key) {
    pins[key, default: 0] += 1
    if let slot = slotOfKey[key] { setReleased(slot, false) }
  }

  /// Takes a pin from each of `keys` (keys with none are skipped); an image left with none
  /// is an ordinary unpinned one, not released.
  mutating func unpin(_ keys: some Sequence<Key>) {
    for key in keys { _ = takePin(key) }
  }

  /// Takes a pin from each of `keys`, as ``unpin(_:)`` does; an image left with none is
  /// released. Returns the released images removed to fit ``releasedByteLimit``.
  mutating func release(_ keys: some Sequence<Key>) -> [Removed] {
    for key in keys where takePin(key) == 0 {
      if let slot = slotOfKey[key] { setReleased(slot, true) }
    }
    var removed: [Removed] = []
    var slot = oldest
    while releasedBytes > releasedByteLimit, slot >= 0, let entry = slots[slot] {
      slot = entry.newer
      if entry.released, let gone = remove(entry.key) { removed.append(gone) }
    }
    return removed
  }

  /// Evicts what storing an image of `bytes` would, before it is made: the buffer of an
  /// image evicted now can be filled by the decode that makes it.
  mutating func makeRoom(for bytes: Int) -> [Removed] {
    evict(toFit: max(0, byteLimit - bytes), sparing: nil)
  }

  /// Removes every image whose key matches `drop`; pins stay.
  mutating func removeAll(where drop: (Key) -> Bool) -> [Removed] {
    slotOfKey.keys.filter(drop).compactMap { remove($0) }
  }

  /// Removes every image with no pin.
  mutating func removeUnpinned() -> [Removed] {
    slotOfKey.keys.filter { pins[$0] == nil }.compactMap { remove($0) }
  }

  /// Removes every image; pins stay.
  mutating func removeAll() -> [Removed] {
    let removed = slots.compactMap { $0.map { Removed(key: $0.key, image: $0.image) } }
    slotOfKey = [:]
    slots = []
    freeSlots = []
    newest = -1
    oldest = -1
    bytes = 0
    releasedBytes = 0
    return removed
  }

  /// Takes one pin from `key`; returns the pins left, or nil when it had none.
  private mutating func takePin(_ key: Key) -> Int? {
    guard let count = pins[key] else { return nil }
    pins[key] = count > 1 ? count - 1 : nil
    return count - 1
  }

  /// Evicts until the images fit `limit` bytes: unpinned images first, least recently used
  /// first; then the least recently used of the rest; never `key`.
  private mutating func evict(toFit limit: Int, sparing key: Key?) -> [Removed] {
    var removed: [Removed] = []
    for pass in [false, true] {
      var slot = oldest
      while bytes > limit, slot >= 0, let entry = slots[slot] {
        slot = entry.newer
        if entry.key != key, pass || pins[entry.key] == nil, let gone = remove(entry.key) {
          removed.append(gone)
        }
      }
    }
    return removed
  }

  @discardableResult
  private mutating func remove(_ key: Key) -> Removed? {
    guard let slot = slotOfKey.removeValue(forKey: key), let entry = slots[slot] else {
      return nil
    }
    setReleased(slot, false)
    unlink(slot)
    slots[slot] = nil
    freeSlots.append(slot)
    bytes -= entry.image.byteCount
    return Removed(key: key, image: entry.image)
  }

  private mutating func setReleased(_ slot: Int, _ released: Bool) {
    guard slots[slot]!.released != released else { return }
    slots[slot]!.released = released
    releasedBytes += (released ? 1 : -1) * slots[slot]!.image.byteCount
  }

  private mutating func touch(_ slot: Int) {
    guard newest != slot else { return }
    unlink(slot)
    pushNewest(slot)
  }

  private mutating func unlink(_ slot: Int) {
    let newer = slots[slot]!.newer
    let older = slots[slot]!.older
    if newer >= 0 { slots[newer]!.older = older } else { newest = older }
    if older >= 0 { slots[older]!.newer = newer } else { oldest = newer }
    slots[slot]!.newer = -1
    slots[slot]!.older = -1
  }

  private mutating func pushNewest(_ slot: Int) {
    slots[slot]!.older = newest
    slots[slot]!.newer = -1
    if newest >= 0 { slots[newest]!.newer = slot }
    newest = slot
    if oldest < 0 { oldest = slot }
  }
}
