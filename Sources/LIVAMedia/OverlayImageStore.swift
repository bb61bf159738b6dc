import Foundation
import Locking

/// Decoded overlay images keyed by overlay id (the protocol's content key,
/// `"{animation}/{sprite frame}/{sheet}"`), bounded by bytes.
///
/// - **Ready means decoded:** a key is readable only once its pixels are in the store.
/// - **Render-side reads never wait:** ``image(for:)`` and ``isReady(_:)`` are synchronous and
///   only take a short lock that no one holds across a decode; ``read(_:)`` does not even wait
///   for that lock. Decoding always happens
///   outside the lock, on the caller of ``decode(_:for:message:codec:limits:completion:)``.
/// - **Decode once:** while a key is being decoded, further requests for it wait for that
///   decode through a completion callback; no thread blocks and the codec runs once.
/// - **Bounded:** least-recently-used images are evicted once ``byteLimit`` is exceeded; an
///   image larger than the whole limit is refused.
/// - **Messages:** each image remembers which messages asked for it; ``evict(message:)`` drops
///   everything only an interrupted message used. ``purge()`` empties the store (memory
///   pressure).
/// - **Removals are reported:** every key that stops being ready (LRU eviction, message
///   eviction, purge) is passed to the `onRemove` callback, so a player that tracks readiness
///   (e.g. `LIVAEngine.imageEvicted(_:)`) never believes a removed image is drawable.
public final class OverlayImageStore: Sendable {
  /// Counters since creation (``Statistics/bytes`` and ``Statistics/count`` are current).
  public struct Statistics: Hashable, Sendable {
    /// ``image(for:)`` calls that found an image.
    public var hits = 0
    /// ``image(for:)`` calls that found nothing.
    public var misses = 0
    /// Images removed to stay under the byte limit.
    public var evictions = 0
    /// Images removed because every message using them was evicted, or by a purge.
    public var removals = 0
    /// Images refused because they alone exceed the byte limit.
    public var rejected = 0
    /// Codec runs started.
    public var decodes = 0
    /// Codec runs that failed.
    public var decodeFailures = 0
    /// Decode requests answered by an already running decode or an image already stored.
    public var deduplicated = 0
    /// Bytes of pixels held now.
    public var bytes = 0
    /// Images held now.
    public var count = 0
  }

  /// The most bytes of pixels held at once.
  public let byteLimit: Int

  /// The most bytes of pixels held of images every user has played and no one claimed since
  /// (kept for reuse, as a content-addressed sprite comes back in later messages); the oldest
  /// go first beyond it.
  public let playedByteLimit: Int

  private struct Entry {
    var key: String
    var image: RGBAImage
    /// Messages that use the image; `unowned` ones are only evicted by LRU or purge.
    var owners: Set<Int>
    var unowned: Bool
    /// Every message that used the image has played it (``release(_:message:)``) and none
    /// claimed it since: it is kept only for reuse, within ``playedByteLimit``.
    var played = false
    /// Neighbours in the recency list, as slot numbers (-1: none).
    var newer = -1
    var older = -1
  }

  private struct InFlight {
    var owners: Set<Int>
    var unowned: Bool
    var waiters: [@Sendable (Result<RGBAImage, LIVAMediaError>) -> Void]
  }

  /// Entries live in slots of an array, linked newest-to-oldest by slot number, so that a
  /// render-side hit costs one hash of its key and a few array writes.
  private struct State {
    var slotOfKey: [String: Int] = [:]
    var slots: [Entry?] = []
    var freeSlots: [Int] = []
    var newest = -1
    var oldest = -1
    var inFlight: [String: InFlight] = [:]
    var statistics = Statistics()
    /// Keys removed during the current locked operation, reported after the lock is released.
    var removed: [String] = []
    /// Images removed during the current locked operation, for ``recycle`` (only when set).
    var removedImages: [RGBAImage] = []
    var collectsImages = false
    /// The stored keys each message uses, so evicting a message costs only its own keys.
    var keysByMessage: [Int: Set<String>] = [:]
    /// Claims on keys neither stored nor being decoded yet (a plan that came before its
    /// images): the image is owned by them once stored. As many as the claimed keys of
    /// queued chunks; a release or an eviction of the message takes them back.
    var pendingOwners: [String: Set<Int>] = [:]

    /// Records that `message` (nil: no message in particular) uses the image in `slot`.
    mutating func addOwner(_ message: Int?, slot: Int) {
      if let message {
        slots[slot]!.owners.insert(message)
        slots[slot]!.played = false
        keysByMessage[message, default: []].insert(slots[slot]!.key)
      } else {
        slots[slot]!.unowned = true
      }
    }

    /// Marks the image in `slot` most recently used.
    mutating func touch(_ slot: Int) {
      guard newest != slot else { return }
      unlink(slot)
      pushNewest(slot)
    }

    mutating func unlink(_ slot: Int) {
      let newer = slots[slot]!.newer
      let older = slots[slot]!.older
      if newer >= 0 { slots[newer]!.older = older } else { newest = older }
      if older >= 0 { slots[older]!.newer = newer } else { oldest = newer }
      slots[slot]!.newer = -1
      slots[slot]!.older = -1
    }

    mutating func pushNewest(_ slot: Int) {
      slots[slot]!.older = newest
      slots[slot]!.newer = -1
      if newest >= 0 { slots[newest]!.newer = slot }
      newest = slot
      if oldest < 0 { oldest = slot }
    }

    /// Stores `entry` as the most recently used image.
    mutating func add(_ entry: Entry) {
      let slot: Int
      if let free = freeSlots.popLast() {
        slot = free
        slots[slot] = entry
      } else {
        slot = slots.count
        slots.append(entry)
      }
      slotOfKey[entry.key] = slot
      for owner in entry.owners { keysByMessage[owner, default: []].insert(entry.key) }
      pushNewest(slot)
      statistics.bytes += entry.image.byteCount
      statistics.count += 1
    }

    /// Removes `key`'s image and records the key as removed; returns the entry.
    @discardableResult
    mutating func remove(_ key: String) -> Entry? {
      guard let slot = slotOfKey.removeValue(forKey: key), let entry = slots[slot] else {
        return nil
      }
      unlink(slot)
      slots[slot] = nil
      freeSlots.append(slot)
      statistics.bytes -= entry.image.byteCount
      statistics.count -= 1
      removed.append(key)
      if collectsImages { removedImages.append(entry.image) }
      for owner in entry.owners {
        keysByMessage[owner]?.remove(key)
        if keysByMessage[owner]?.isEmpty == true { keysByMessage[owner] = nil }
      }
      return entry
    }
  }

  private let state = Locked(State())
  private let onRemove: (@Sendable ([String]) -> Void)?
  private let recycle: (@Sendable ([RGBAImage]) -> Void)?

  /// Creates a store holding at most `byteLimit` bytes of pixels (default 64 MiB: about
  /// 2,000 sprites of 100×80).
  ///
  /// - Parameter onRemove: called with the keys of images that were removed (by LRU eviction,
  ///   ``evict(message:)`` or ``purge()``), on the thread that caused the removal, after the
  ///   store's lock is released. Never called from ``image(for:)`` or ``isReady(_:)``.
  /// - Parameter playedByteLimit: bytes of played images kept for reuse (see
  ///   ``playedByteLimit``); nil: up to `byteLimit`.
  /// - Parameter recycle: called with the images removed, as `onRemove` is, so that their
  ///   pixel buffers can be filled again instead of freed (a 1280×768 frame is 3.9 MB: freeing
  ///   and allocating one per frame costs more in page faults than decoding it).
  public init(
    byteLimit: Int = 64 << 20, playedByteLimit: Int? = nil,
    onRemove: (@Sendable ([String]) -> Void)? = nil,
    recycle: (@Sendable ([RGBAImage]) -> Void)? = nil
  ) {
    self.byteLimit = byteLimit
    self.playedByteLimit = min(byteLimit, max(0, playedByteLimit ?? byteLimit))
    self.onRemove = onRemove
    self.recycle = recycle
    if recycle != nil { state.withLock { $0.collectsImages = true } }
  }

  /// Runs a mutation under the lock, then reports the keys it removed with the lock released.
  private func mutate<R>(_ body: (inout State) -> R) -> R {
    let (result, removed, images) = state.withLock { state in
      let result = body(&state)
      defer {
        state.removed.removeAll(keepingCapacity: true)
        state.removedImages.removeAll(keepingCapacity: true)
      }
      return (result, state.removed, state.removedImages)
    }
    if !removed.isEmpty, let onRemove { onRemove(removed) }
    if !images.isEmpty, let recycle { recycle(images) }
    return result
  }

  // MARK: Render side

  /// The decoded image for `key`, or nil when it is not (yet) decoded. Never waits for a
  /// decode. Counts a hit or a miss and marks the image recently used.
  public func image(for key: String) -> RGBAImage? {
    state.withLock { state in
      guard let slot = state.slotOfKey[key], let image = state.slots[slot]?.image else {
        state.statistics.misses += 1
        return nil
      }
      state.statistics.hits += 1
      state.touch(slot)
      return image
    }
  }

  /// The outcome of ``read(_:)``.
  public enum Read: Sendable {
    /// The decoded image.
    case image(RGBAImage)
    /// The key is not decoded (yet): a planned hold.
    case notReady
    /// Another thread held the store's lock at that instant; nothing was waited for. Hold
    /// (or use the last image drawn) and read again on the next tick.
    case busy
  }

  /// Like ``image(for:)``, but never blocks, not even on the store's lock: if another thread
  /// holds it at that instant (a writer's microseconds of bookkeeping, or longer when the
  /// scheduler preempted that writer), it returns ``Read/busy`` at once.
  ///
  /// The trade-off, measured on 2 shared cores with a decoder running nonstop (a worst-case
  /// flood): reads at 1 kHz were busy about 5% of the time, while ``image(for:)`` waited a
  /// few microseconds typically and up to milliseconds in the worst samples. At a real
  /// session's few dozen decodes a second both effects are rare. Prefer ``image(for:)``;
  /// use this for a render loop whose policy is never to block.
  public func read(_ key: String) -> Read {
    // One attempt, no spin: on an oversubscribed device, spinning competes for the CPU with
    // the (often preempted) holder and made reads slower, not less often busy, in measurements.
    let result = state.withLockIfAvailable { state -> Read in
      guard let slot = state.slotOfKey[key], let image = state.slots[slot]?.image else {
        state.statistics.misses += 1
        return .notReady
      }
      state.statistics.hits += 1
      state.touch(slot)
      return .image(image)
    }
    return result ?? .busy
  }

  /// Runs `body` while holding the store's lock (tests use it to show ``read(_:)`` does not
  /// wait for the lock).
  func whileLocked<R>(_ body: () -> R) -> R {
    state.withLock { _ in body() }
  }

  /// Whether `key` is decoded and readable now. Never waits; changes no statistics.
  public func isReady(_ key: String) -> Bool {
    state.withLock { $0.slotOfKey[key] != nil }
  }

  /// Current statistics.
  public var statistics: Statistics { state.withLock { $0.statistics } }

  // MARK: Ingest side

  /// Stores an already decoded image for `key`, used by `message` (nil: by no message in
  /// particular). Returns false when the image alone exceeds ``byteLimit``.
  @discardableResult
  public func insert(_ image: RGBAImage, for key: String, message: Int?) -> Bool {
    mutate {
      insertLocked(&$0, image, key, owners: message.map { [$0] } ?? [], unowned: message == nil)
    }
  }

  /// Adds `message` as a user of `key` when it is already stored; returns whether it is.
  /// Lets an ingest pipeline skip work for images a previous message already decoded.
  /// Otherwise the claim waits for the image: once stored (by any path), `message` owns it.
  public func retain(_ key: String, message: Int?) -> Bool {
    state.withLock { state in
      guard let slot = state.slotOfKey[key] else {
        if let message {
          if state.inFlight[key] != nil {
            state.inFlight[key]?.owners.insert(message)
          } else {
            state.pendingOwners[key, default: []].insert(message)
          }
        }
        return false
      }
      state.addOwner(message, slot: slot)
      state.statistics.deduplicated += 1
      return true
    }
  }

  /// Makes `key` ready, decoding `data` with `codec` **on the calling thread** unless the key
  /// is already stored or being decoded by another caller; then `completion` runs when that
  /// other decode ends (on its thread). `completion` gets the stored image, or the decode
  /// error, or `cancelled` when every message using the key was evicted meanwhile, or
  /// `limitExceeded` when the image alone is larger than the store.
  ///
  /// Call it from an ingest worker, never from the render thread.
  public func decode(
    _ data: Data, for key: String, message: Int?, codec: any ImageCodec,
    limits: DecodeLimits = DecodeLimits(),
    completion: @escaping @Sendable (Result<RGBAImage, LIVAMediaError>) -> Void
  ) {
    enum Start {
      case ready(RGBAImage)
      case joined
      case decode
    }
    let start: Start = state.withLock { state in
      if let slot = state.slotOfKey[key], let image = state.slots[slot]?.image {
        state.addOwner(message, slot: slot)
        state.statistics.deduplicated += 1
        return .ready(image)
      }
      if state.inFlight[key] != nil {
        if let message {
          state.inFlight[key]?.owners.insert(message)
        } else {
          state.inFlight[key]?.unowned = true
        }
        state.inFlight[key]?.waiters.append(completion)
        state.statistics.deduplicated += 1
        return .joined
      }
      state.inFlight[key] = InFlight(
        owners: message.map { [$0] } ?? [], unowned: message == nil, waiters: [completion])
      state.statistics.decodes += 1
      return .decode
    }
    switch start {
    case .ready(let image):
      completion(.success(image))
      return
    case .joined:
      return
    case .decode:
      break
    }
    // The decode runs with no lock held.
    let decoded = Result { () throws(LIVAMediaError) in try codec.decode(data, limits: limits) }
    let (result, waiters) = mutate { state in
      let flight = state.inFlight.removeValue(forKey: key)
      let waiters = flight?.waiters ?? []
      switch decoded {
      case .failure(let error):
        state.statistics.decodeFailures += 1
        return (Result<RGBAImage, LIVAMediaError>.failure(error), waiters)
      case .success(let image):
        guard let flight, flight.unowned || !flight.owners.isEmpty else {
          return (
            .failure(LIVAMediaError(.cancelled, "\(key): its messages were evicted")), waiters
          )
        }
        guard insertLocked(&state, image, key, owners: flight.owners, unowned: flight.unowned)
        else {
          return (
            .failure(
              LIVAMediaError(
                .limitExceeded, "\(key): \(image.byteCount) bytes exceed the store's \(byteLimit)")),
            waiters
          )
        }
        return (.success(image), waiters)
      }
    }
    for waiter in waiters { waiter(result) }
  }

  /// Forgets `message` as a user of every image; images no other message uses are removed
  /// (including those still decoding: they will not be stored).
  public func evict(message: Int) {
    mutate { state in
      for key in Array(state.inFlight.keys) {
        state.inFlight[key]?.owners.remove(message)
      }
      for key in Array(state.pendingOwners.keys) {
        state.pendingOwners[key]?.remove(message)
        if state.pendingOwners[key]?.isEmpty == true { state.pendingOwners[key] = nil }
      }
      for key in state.keysByMessage.removeValue(forKey: message) ?? [] {
        guard let slot = state.slotOfKey[key] else { continue }
        state.slots[slot]!.owners.remove(message)
        if state.slots[slot]!.owners.isEmpty && !state.slots[slot]!.unowned {
          state.remove(key)
          state.statistics.removals += 1
        }
      }
    }
  }

  /// Forgets `message` as a user of `keys` (a chunk played to its end): an image no message
  /// uses any more stays until the byte limit or a purge needs its room, and goes before any
  /// image a message still uses.
  /// Played images beyond ``playedByteLimit`` are removed, the least recently used first.
  public func release(_ keys: some Sequence<String>, message: Int) {
    mutate { state in
      for key in keys {
        state.pendingOwners[key]?.remove(message)
        if state.pendingOwners[key]?.isEmpty == true { state.pendingOwners[key] = nil }
        state.inFlight[key]?.owners.remove(message)
        guard let slot = state.slotOfKey[key] else { continue }
        state.slots[slot]!.owners.remove(message)
        if state.slots[slot]!.owners.isEmpty { state.slots[slot]!.played = true }
        state.keysByMessage[message]?.remove(key)
      }
      if state.keysByMessage[message]?.isEmpty == true { state.keysByMessage[message] = nil }
      trimPlayed(&state)
    }
  }

  /// Removes the least recently used played images until those left fit ``playedByteLimit``.
  private func trimPlayed(_ state: inout State) {
    var bytes = 0
    var slot = state.oldest
    while slot >= 0, let entry = state.slots[slot] {
      if entry.played && entry.owners.isEmpty { bytes += entry.image.byteCount }
      slot = entry.newer
    }
    slot = state.oldest
    while bytes > playedByteLimit, slot >= 0, let entry = state.slots[slot] {
      let newer = entry.newer
      if entry.played && entry.owners.isEmpty {
        bytes -= entry.image.byteCount
        state.remove(entry.key)
        state.statistics.evictions += 1
      }
      slot = newer
    }
  }

  /// Removes every stored image no message uses any more (memory pressure: the images of
  /// messages already played, kept only for reuse).
  public func purgeUnowned() {
    purge { _, owners in owners.isEmpty }
  }

  /// Removes every stored image except `keys` (memory pressure).
  public func purge(keeping keys: Set<String>) {
    purge { key, _ in !keys.contains(key) }
  }

  private func purge(where drop: (String, Set<Int>) -> Bool) {
    // The entries leave under the lock; their pixel buffers are freed after it is released.
    let dropped = mutate { state -> [Entry] in
      let keys = state.slotOfKey.compactMap { key, slot in
        drop(key, state.slots[slot]!.owners) ? key : nil
      }
      state.statistics.removals += keys.count
      return keys.compactMap { state.remove($0) }
    }
    _ = dropped
  }

  /// Removes every stored image (e.g. on memory pressure). Decodes under way still complete.
  public func purge() {
    // Take the entries out under the lock; their pixel buffers are freed after it is released.
    let dropped = mutate { state in
      let dropped = state.slots
      if state.collectsImages { state.removedImages += dropped.compactMap { $0?.image } }
      state.statistics.removals += state.slotOfKey.count
      state.removed.append(contentsOf: state.slotOfKey.keys)
      state.slotOfKey = [:]
      state.slots = []
      state.freeSlots = []
      state.keysByMessage = [:]
      state.newest = -1
      state.oldest = -1
      state.statistics.bytes = 0
      state.statistics.count = 0
      return dropped
    }
    _ = consume dropped
  }

  private func insertLocked(
    _ state: inout State, _ image: RGBAImage, _ key: String, owners: Set<Int>, unowned: Bool
  ) -> Bool {
    guard image.byteCount <= byteLimit else {
      state.statistics.rejected += 1
      return false
    }
    var owners = owners.union(state.pendingOwners.removeValue(forKey: key) ?? [])
    var unowned = unowned
    if let previous = state.remove(key) {
      // A replacement, not a removal: keep its users and do not report the key.
      owners.formUnion(previous.owners)
      unowned = unowned || previous.unowned
      state.removed.removeLast()
    }
    state.add(Entry(key: key, image: image, owners: owners, unowned: unowned))
    Self.evict(&state, toFit: byteLimit, sparing: key)
    return true
  }

  /// Evicts until the images fit `limit` bytes: images no message uses go first, oldest
  /// first; then the oldest of the rest; never `key`.
  private static func evict(_ state: inout State, toFit limit: Int, sparing key: String?) {
    var candidate = state.oldest
    while state.statistics.bytes > limit, candidate >= 0 {
      let entry = state.slots[candidate]!
      let newer = entry.newer
      if entry.owners.isEmpty && entry.key != key {
        state.remove(entry.key)
        state.statistics.evictions += 1
      }
      candidate = newer
    }
    while state.statistics.bytes > limit, state.oldest >= 0,
      let oldest = state.slots[state.oldest]?.key, oldest != key
    {
      state.remove(oldest)
      state.statistics.evictions += 1
    }
  }

  /// Evicts what inserting an image of `bytes` would, before it is made: the decode that
  /// makes it can then fill a buffer an evicted image leaves (`recycle`) rather than hold a new
  /// one beside the full store.
  public func makeRoom(for bytes: Int) {
    mutate { Self.evict(&$0, toFit: max(0, byteLimit - bytes), sparing: nil) }
  }
}
