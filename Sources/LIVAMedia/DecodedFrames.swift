import LIVAProtocol
import Locking

/// The base frames a ``BaseFrameStore`` holds decoded in memory: a locked ``ImageCache``
/// keyed by frame and version, so that a frame of a replaced version is never found as the
/// new one's, even when its decode finishes after the swap.
final class DecodedFrames: Sendable {
  /// A decoded frame: the frame, and the version of its animation it was decoded from.
  struct Key: Hashable, Sendable {
    var frame: BaseFrameRef
    var version: Int
  }

  private let cache: Locked<ImageCache<Key>>
  private let recycle: (@Sendable ([RGBAImage]) -> Void)?

  /// The most bytes of pixels held at once.
  let byteLimit: Int

  /// Holds at most `byteLimit` bytes; `recycle` gets the images that leave (after the lock is
  /// released), so that their pixel buffers can be filled again instead of freed.
  init(byteLimit: Int, recycle: (@Sendable ([RGBAImage]) -> Void)?) {
    let cache = ImageCache<Key>(byteLimit: byteLimit)
    self.byteLimit = cache.byteLimit
    self.cache = Locked(cache)
    self.recycle = recycle
  }

  /// Bytes of pixels held now.
  var bytes: Int { cache.withLock { $0.bytes } }

  /// The frame's image, marked recently used; nil when it is not in memory.
  func image(for key: Key) -> RGBAImage? {
    cache.withLock { $0.image(for: key) }
  }

  /// Stores a decoded frame, pushing out the least recently used beyond ``byteLimit``.
  func insert(_ image: RGBAImage, for key: Key) {
    mutate { $0.insert(image, for: key).evicted }
  }

  /// Evicts what storing a frame of `bytes` would, before it is decoded (see
  /// ``ImageCache/makeRoom(for:)``).
  func makeRoom(for bytes: Int) {
    mutate { $0.makeRoom(for: bytes) }
  }

  /// Removes every frame of `version`.
  func removeVersion(_ version: Int) {
    mutate { $0.removeAll { $0.version == version } }
  }

  /// Removes every frame but `keys`.
  func removeAll(keeping keys: Set<Key>) {
    mutate { $0.removeAll { !keys.contains($0) } }
  }

  /// Removes every frame.
  func removeAll() {
    mutate { $0.removeAll() }
  }

  /// Runs a mutation under the lock; the images it removed are recycled (or freed) after the
  /// lock is released.
  private func mutate(_ body: (inout ImageCache<Key>) -> [ImageCache<Key>.Removed]) {
    let removed = cache.withLock(body)
    if !removed.isEmpty, let recycle { recycle(removed.map(\.image)) }
  }
}
