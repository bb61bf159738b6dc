import Foundation
import Locking

/// Decoded overlay images keyed by overlay id (the protocol's content key,
/// `"{animation}/{sprite frame}/{sheet}"`), bounded by bytes: a locked `ImageCache` with the
/// claims of queued chunks and the decodes under way.
///
/// - **Ready means decoded:** a key is readable only once its pixels are in the store.
/// - **Render-side reads never wait for a decode:** ``image(for:)`` and ``isReady(_:)`` only
///   take a short lock that no one holds across a decode. Decoding always happens outside the
///   lock, on the caller of ``decode(_:for:codec:limits:completion:)``.
/// - **Decode once:** while a key is being decoded, further requests for it wait for that
///   decode through a completion callback; no thread blocks and the codec runs once.
/// - **Content, claimed by messages:** images belong to no message. A message ``claim(_:message:)``s
///   the keys its queued chunks draw; room is made from unclaimed images first (least recently
///   used first), and claimed ones go only when they alone exceed ``byteLimit``.
///   ``release(_:message:)`` (played) and ``withdrawClaims(message:)`` (interrupted) end
///   claims; played images are kept for reuse within ``playedByteLimit``.
/// - **Removals are reported:** every key that stops being ready (eviction, purge) is passed
///   to the observer set with ``observeRemovals(_:)``, so a player that tracks readiness (e.g.
///   `LIVAEngine.imageEvicted(_:)`) never believes a removed image is drawable.
public final class OverlayImageStore: Sendable {
  /// Counters since creation (``Statistics/bytes`` and ``Statistics/count`` are current).
  public struct Statistics: Hashable, Sendable {
    /// ``image(for:)`` calls that found an image.
    public var hits = 0
    /// ``image(for:)`` calls that found nothing.
    public var misses = 0
    /// Images removed to stay under the byte limit, or beyond ``playedByteLimit``.
    public var evictions = 0
    /// Images removed by ``purgeUnclaimed()``.
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

  /// The most bytes of pixels held of images every claim has played and no one claimed since
  /// (kept for reuse, as a content-addressed sprite comes back in later messages); the oldest
  /// go first beyond it.
  public let playedByteLimit: Int

  private typealias Completion = @Sendable (Result<RGBAImage, LIVAMediaError>) -> Void

  private struct State {
    var cache: ImageCache<String>
    /// The keys each message claims: a message's claim on a key is one pin, however often
    /// it is made.
    var claims: [Int: Set<String>] = [:]
    /// Keys being decoded, with the requests waiting for them.
    var decoding: [String: [Completion]] = [:]
    var statistics = Statistics()
    /// Told the keys of every removal.
    var observer: (@Sendable ([String]) -> Void)?
  }

  private let state: Locked<State>

  /// Creates a store holding at most `byteLimit` bytes of pixels (default 64 MiB: about
  /// 2,000 sprites of 100×80).
  ///
  /// - Parameter playedByteLimit: bytes of played images kept for reuse (see
  ///   ``playedByteLimit``); nil: up to `byteLimit`.
  public init(byteLimit: Int = 64 << 20, playedByteLimit: Int? = nil) {
    let cache = ImageCache<String>(byteLimit: byteLimit, releasedByteLimit: playedByteLimit)
    self.byteLimit = cache.byteLimit
    self.playedByteLimit = cache.releasedByteLimit
    self.state = Locked(State(cache: cache))
  }

  /// Sets the observer told the keys of images that were removed (to make room, beyond
  /// ``playedByteLimit``, or by ``purgeUnclaimed()``), replacing any before. It is called on
  /// the thread that caused the removal, after the store's lock is released; never from
  /// ``image(for:)`` or ``isReady(_:)``. Set after creation, so an owner can observe the store
  /// it holds.
  public func observeRemovals(_ observer: @escaping @Sendable ([String]) -> Void) {
    state.withLock { $0.observer = observer }
  }

  /// Runs a mutation under the lock, then reports the keys it removed with the lock released
  /// (the images' buffers are freed then too).
  private func mutate<R>(_ body: (inout State) -> (R, [ImageCache<String>.Removed])) -> R {
    let (result, removed, observer) = state.withLock { state in
      let (result, removed) = body(&state)
      state.statistics.bytes = state.cache.bytes
      state.statistics.count = state.cache.count
      return (result, removed, removed.isEmpty ? nil : state.observer)
    }
    if let observer { observer(removed.map(\.key)) }
    return result
  }

  // MARK: Render side

  /// The decoded image for `key`, or nil when it is not (yet) decoded. Never waits for a
  /// decode. Counts a hit or a miss and marks the image recently used.
  public func image(for key: String) -> RGBAImage? {
    state.withLock { state in
      let image = state.cache.image(for: key)
      if image == nil { state.statistics.misses += 1 } else { state.statistics.hits += 1 }
      return image
    }
  }

  /// Whether `key` is decoded and readable now. Never waits for a decode; changes no
  /// statistics.
  public func isReady(_ key: String) -> Bool {
    state.withLock { $0.cache.contains(key) }
  }

  /// Current statistics.
  public var statistics: Statistics { state.withLock { $0.statistics } }

  // MARK: Ingest side

  /// Stores an already decoded image for `key`. Returns false when the image alone exceeds
  /// ``byteLimit``.
  @discardableResult
  public func insert(_ image: RGBAImage, for key: String) -> Bool {
    mutate { state in
      let (stored, evicted) = state.cache.insert(image, for: key)
      if !stored { state.statistics.rejected += 1 }
      state.statistics.evictions += evicted.count
      return (stored, evicted)
    }
  }

  /// Makes `key` ready, decoding `data` with `codec` **on the calling thread** unless the key
  /// is already stored or being decoded by another caller; then `completion` runs when that
  /// other decode ends (on its thread). `completion` gets the stored image, or the decode
  /// error, or `limitExceeded` when the image alone is larger than the store.
  ///
  /// Call it from an ingest worker, never from the render thread.
  public func decode(
    _ data: Data, for key: String, codec: any ImageCodec,
    limits: DecodeLimits = DecodeLimits(),
    completion: @escaping @Sendable (Result<RGBAImage, LIVAMediaError>) -> Void
  ) {
    let stored: RGBAImage?? = state.withLock { state in
      if let image = state.cache.peek(key) {
        state.statistics.deduplicated += 1
        return .some(image)
      }
      if state.decoding[key] != nil {
        state.decoding[key]?.append(completion)
        state.statistics.deduplicated += 1
        return .some(nil)
      }
      state.decoding[key] = [completion]
      state.statistics.decodes += 1
      return nil
    }
    switch stored {
    case .some(.some(let image)): return completion(.success(image))
    case .some(.none): return  // joined the decode under way
    case .none: break
    }
    // The decode runs with no lock held.
    let decoded = Result { () throws(LIVAMediaError) in try codec.decode(data, limits: limits) }
    let (result, waiters) = mutate { state in
      let waiters = state.decoding.removeValue(forKey: key) ?? []
      switch decoded {
      case .failure(let error):
        state.statistics.decodeFailures += 1
        return ((Result<RGBAImage, LIVAMediaError>.failure(error), waiters), [])
      case .success(let image):
        let (stored, evicted) = state.cache.insert(image, for: key)
        state.statistics.evictions += evicted.count
        guard stored else {
          state.statistics.rejected += 1
          let error = LIVAMediaError(
            .limitExceeded, "\(key): \(image.byteCount) bytes exceed the store's \(byteLimit)")
          return ((.failure(error), waiters), [])
        }
        return ((.success(image), waiters), evicted)
      }
    }
    for waiter in waiters { waiter(result) }
  }

  // MARK: Claims

  /// Claims `keys` for `message` (a chunk of it is queued and will draw them): they are kept
  /// before any unclaimed image. A key not stored yet is held once it is. Claiming a key the
  /// message already claims changes nothing.
  public func claim(_ keys: some Sequence<String>, message: Int) {
    state.withLock { state in
      for key in keys where state.claims[message, default: []].insert(key).inserted {
        state.cache.pin(key)
      }
    }
  }

  /// Ends `message`'s claims on `keys` (its chunks that drew them played): an image no
  /// message claims any more is kept for reuse within ``playedByteLimit`` (the least recently
  /// used beyond it go) and goes before any claimed image when room is needed.
  public func release(_ keys: some Sequence<String>, message: Int) {
    mutate { state in
      var released: [String] = []
      for key in keys where state.claims[message]?.remove(key) != nil { released.append(key) }
      if state.claims[message]?.isEmpty == true { state.claims[message] = nil }
      let evicted = state.cache.release(released)
      state.statistics.evictions += evicted.count
      return ((), evicted)
    }
  }

  /// Ends every claim of `message` (interrupted): images no other message claims stay, and
  /// are the first to go when room is needed.
  public func withdrawClaims(message: Int) {
    state.withLock { state in
      state.cache.unpin(state.claims.removeValue(forKey: message) ?? [])
    }
  }

  /// Removes every stored image no message claims (memory pressure: played images, kept only
  /// for reuse, and images decoded ahead of their plan).
  public func purgeUnclaimed() {
    mutate { state in
      let removed = state.cache.removeUnpinned()
      state.statistics.removals += removed.count
      return ((), removed)
    }
  }
}
