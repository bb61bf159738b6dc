import Foundation

/// Decoded overlay images keyed by overlay id (the protocol's content key,
/// `"{animation}/{sprite frame}/{sheet}"`), bounded by bytes.
///
/// - **Ready means decoded:** a key is readable only once its pixels are in the store.
/// - **Render-side reads never wait:** ``image(for:)`` and ``isReady(_:)`` are synchronous and
///   only take a short lock that no one holds across a decode. Decoding always happens
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

  private struct Entry {
    var image: RGBAImage
    /// Messages that use the image; nil entries (`unowned`) are only evicted by LRU or purge.
    var owners: Set<Int>
    var unowned: Bool
    var newer: String?
    var older: String?
  }

  private struct InFlight {
    var owners: Set<Int>
    var unowned: Bool
    var waiters: [@Sendable (Result<RGBAImage, LIVAMediaError>) -> Void]
  }

  private struct State {
    var entries: [String: Entry] = [:]
    var newest: String?
    var oldest: String?
    var inFlight: [String: InFlight] = [:]
    var statistics = Statistics()
    /// Keys removed during the current locked operation, reported after the lock is released.
    var removed: [String] = []
    /// The stored keys each message uses, so evicting a message costs only its own keys.
    var keysByMessage: [Int: Set<String>] = [:]

    /// Records that `message` (nil: no message in particular) uses the stored `key`.
    mutating func addOwner(_ message: Int?, to key: String) {
      guard entries[key] != nil else { return }
      if let message {
        entries[key]?.owners.insert(message)
        keysByMessage[message, default: []].insert(key)
      } else {
        entries[key]?.unowned = true
      }
    }

    mutating func unlink(_ key: String) {
      guard let entry = entries[key] else { return }
      if let newer = entry.newer {
        entries[newer]?.older = entry.older
      } else {
        newest = entry.older
      }
      if let older = entry.older {
        entries[older]?.newer = entry.newer
      } else {
        oldest = entry.newer
      }
      entries[key]?.newer = nil
      entries[key]?.older = nil
    }

    mutating func pushNewest(_ key: String) {
      entries[key]?.older = newest
      entries[key]?.newer = nil
      if let newest { entries[newest]?.newer = key }
      newest = key
      if oldest == nil { oldest = key }
    }

    mutating func remove(_ key: String) {
      unlink(key)
      if let entry = entries.removeValue(forKey: key) {
        statistics.bytes -= entry.image.byteCount
        statistics.count -= 1
        removed.append(key)
        for owner in entry.owners {
          keysByMessage[owner]?.remove(key)
          if keysByMessage[owner]?.isEmpty == true { keysByMessage[owner] = nil }
        }
      }
    }
  }

  private let state = Locked(State())
  private let onRemove: (@Sendable ([String]) -> Void)?

  /// Creates a store holding at most `byteLimit` bytes of pixels (default 64 MiB: about
  /// 2,000 sprites of 100×80).
  ///
  /// - Parameter onRemove: called with the keys of images that were removed (by LRU eviction,
  ///   ``evict(message:)`` or ``purge()``), on the thread that caused the removal, after the
  ///   store's lock is released. Never called from ``image(for:)`` or ``isReady(_:)``.
  public init(byteLimit: Int = 64 << 20, onRemove: (@Sendable ([String]) -> Void)? = nil) {
    self.byteLimit = byteLimit
    self.onRemove = onRemove
  }

  /// Runs a mutation under the lock, then reports the keys it removed with the lock released.
  private func mutate<R>(_ body: (inout State) -> R) -> R {
    let (result, removed) = state.withLock { state in
      let result = body(&state)
      defer { state.removed.removeAll(keepingCapacity: true) }
      return (result, state.removed)
    }
    if !removed.isEmpty, let onRemove { onRemove(removed) }
    return result
  }

  // MARK: Render side

  /// The decoded image for `key`, or nil when it is not (yet) decoded. Never waits for a
  /// decode. Counts a hit or a miss and marks the image recently used.
  public func image(for key: String) -> RGBAImage? {
    state.withLock { state in
      guard let image = state.entries[key]?.image else {
        state.statistics.misses += 1
        return nil
      }
      state.statistics.hits += 1
      if state.newest != key {
        state.unlink(key)
        state.pushNewest(key)
      }
      return image
    }
  }

  /// Whether `key` is decoded and readable now. Never waits; changes no statistics.
  public func isReady(_ key: String) -> Bool {
    state.withLock { $0.entries[key] != nil }
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
  public func retain(_ key: String, message: Int?) -> Bool {
    state.withLock { state in
      guard state.entries[key] != nil else { return false }
      state.addOwner(message, to: key)
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
      if let entry = state.entries[key] {
        state.addOwner(message, to: key)
        state.statistics.deduplicated += 1
        return .ready(entry.image)
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
      for key in state.keysByMessage.removeValue(forKey: message) ?? [] {
        guard let entry = state.entries[key] else { continue }
        state.entries[key]?.owners.remove(message)
        if entry.owners.count == 1 && !entry.unowned {
          state.remove(key)
          state.statistics.removals += 1
        }
      }
    }
  }

  /// Removes every stored image (e.g. on memory pressure). Decodes under way still complete.
  public func purge() {
    // Take the entries out under the lock; their pixel buffers are freed after it is released.
    let dropped = mutate { state in
      let dropped = state.entries
      state.statistics.removals += dropped.count
      state.removed.append(contentsOf: dropped.keys)
      state.entries = [:]
      state.keysByMessage = [:]
      state.newest = nil
      state.oldest = nil
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
    var owners = owners
    var unowned = unowned
    if let previous = state.entries[key] {
      // A replacement, not a removal: keep its users and do not report the key.
      owners.formUnion(previous.owners)
      unowned = unowned || previous.unowned
      state.remove(key)
      state.removed.removeLast()
    }
    state.entries[key] = Entry(image: image, owners: owners, unowned: unowned)
    for owner in owners { state.keysByMessage[owner, default: []].insert(key) }
    state.pushNewest(key)
    state.statistics.bytes += image.byteCount
    state.statistics.count += 1
    while state.statistics.bytes > byteLimit, let oldest = state.oldest, oldest != key {
      state.remove(oldest)
      state.statistics.evictions += 1
    }
    return true
  }
}
