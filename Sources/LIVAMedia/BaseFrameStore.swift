import Foundation
import LIVAProtocol

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Base animations (the avatar's full frames) cached on disk, and a bounded set of decoded
/// frames in memory.
///
/// Layout, as the first SDK had it: `<root>/<animation>/frame_%04d.png`, plus
/// `<root>/<animation>/manifest.json` holding the manifest's `version` and the frame count.
///
/// - **Complete or absent:** `manifest.json` is written last, when every frame is on disk;
///   without it an animation does not exist for readers. An animation whose version differs
///   from the server's manifest is stale and is fetched again.
/// - **Atomic writes:** every file is written to a temporary name in the same directory,
///   flushed with `fsync`, then renamed over the final name, so a crash mid-write never leaves
///   a half frame under a frame's name. Leftover temporary files are deleted on start.
/// - **Safe names:** only ``LIVAProtocol/AnimationName`` values reach the file system; its
///   grammar (lowercase letters, digits, `_`) cannot express `/`, `..` or any other escape.
/// - **Bounded disk:** above ``diskByteLimit`` whole animations are evicted, least recently
///   used first, never the idle loop's two halves (``protected``).
/// - **Bounded memory:** decoded frames live in a byte-bounded LRU (``memoryByteLimit``).
/// - **Instant first frame:** ``idleFirstFrame()`` loads frame 0 of `idle_1_s_idle_1_e`
///   synchronously; other animations load lazily, in ``priorityOrder``.
/// - **Render path:** ``decodedFrame(_:of:)`` only reads memory; ``frame(_:of:)`` and
///   ``preload(_:frames:)`` may read and decode files and belong on a worker.
public final class BaseFrameStore: Sendable {
  /// What the server's `base_animations_manifest` says about one animation, as the store
  /// compares it (LIVAProtocol's `BaseAnimationInfo` with a version that is never nil).
  public struct ManifestEntry: Hashable, Sendable {
    /// The number of frames.
    public var frames: Int
    /// The version; a cached copy with another version is stale. Empty when the manifest had
    /// none.
    public var version: String

    /// Creates an entry.
    public init(frames: Int, version: String) {
      self.frames = frames
      self.version = version
    }
  }

  /// What to download after comparing the server's manifest with the cache.
  public struct FetchPlan: Hashable, Sendable {
    /// Animations missing or stale, in ``BaseFrameStore/priorityOrder`` (others after, sorted).
    public var animations: [AnimationName]
    /// Names refused: not valid animation names (never touched on disk), or with a frame
    /// count outside `1...maximumFrameCount`.
    public var rejectedNames: [String]
  }

  /// Counters and sizes.
  public struct Statistics: Hashable, Sendable {
    /// Bytes of all files under the root that the store knows of.
    public var diskBytes = 0
    /// Complete animations on disk.
    public var animations = 0
    /// Animations evicted to stay under the disk limit.
    public var evictions = 0
    /// Decoded frames served from memory.
    public var memoryHits = 0
    /// Frames read and decoded from disk.
    public var diskLoads = 0
    /// Bytes of decoded frames held in memory.
    public var memoryBytes = 0
  }

  /// The load order of a production avatar's animations (protocol.md).
  public static let priorityOrder: [AnimationName] = [
    "idle_1_s_idle_1_e", "idle_1_e_idle_1_s",
    "idle_1_e_talking_1_s", "talking_1_s_talking_1_e", "talking_1_e_idle_1_s",
    "talking_1_e_talking_1_s",
    "idle_1_e_talking_2_s", "talking_2_s_talking_2_e", "talking_2_e_idle_1_s",
    "talking_2_e_talking_2_s",
    "talking_1_e_talking_2_s", "talking_2_e_talking_1_s",
    "idle_1_e_hi_1_s", "hi_1_s_hi_1_e", "hi_1_e_idle_1_s",
  ].compactMap { try? AnimationName(parsing: $0) }

  /// The most frames an animation may have (the file name has four digits).
  public static let maximumFrameCount = 10_000

  /// The cache directory.
  public let root: URL
  /// The most bytes kept on disk before whole animations are evicted.
  public let diskByteLimit: Int
  /// The most bytes of decoded frames kept in memory.
  public var memoryByteLimit: Int { decoded.byteLimit }
  /// Animations never evicted for space (the idle loop).
  public let protected: Set<AnimationName>

  private struct DiskAnimation {
    var version: String?  // nil while downloading
    var frameCount: Int
    var bytes: Int
    var lastUsed: Int
    var id: Int
    /// Whether the manifest's modification date was refreshed this session (it carries the
    /// recency order to the next launch).
    var touchedOnDisk = false
  }

  private struct State {
    var animations: [AnimationName: DiskAnimation] = [:]
    var tick = 0
    var nextID = 0
    var statistics = Statistics()

    mutating func entry(_ name: AnimationName) -> DiskAnimation {
      if let existing = animations[name] { return existing }
      nextID += 1
      let entry = DiskAnimation(version: nil, frameCount: 0, bytes: 0, lastUsed: 0, id: nextID)
      animations[name] = entry
      return entry
    }
  }

  private struct DiskManifest: Codable {
    var version: String
    var frames: Int
  }

  private let codec: any ImageCodec
  private let decoded: OverlayImageStore
  private let state = Locked(State())
  /// Frames asked for by ``prefetch(_:scheduler:)`` and not brought in yet, most urgent first,
  /// and whether a worker is bringing them in.
  private let prefetching = Locked((pending: [(AnimationName, Int)](), running: false))

  /// Opens (creating if needed) the cache at `root`: indexes complete animations, deletes
  /// incomplete downloads and leftover temporary files.
  public init(
    root: URL, codec: any ImageCodec = SystemImageCodec(), diskByteLimit: Int = 512 << 20,
    memoryByteLimit: Int = 32 << 20,
    protected: Set<AnimationName> = [.idleForward, .idleBack]
  ) throws(LIVAMediaError) {
    self.root = root
    self.codec = codec
    self.diskByteLimit = diskByteLimit
    self.decoded = OverlayImageStore(byteLimit: memoryByteLimit)
    self.protected = protected
    let files = FileManager.default
    do {
      try files.createDirectory(at: root, withIntermediateDirectories: true)
    } catch {
      throw LIVAMediaError(
        .ioFailure, "cannot create the cache directory: \(error)", source: root.path)
    }
    let names = (try? files.contentsOfDirectory(atPath: root.path)) ?? []
    var found: [(AnimationName, DiskManifest, Int, Date)] = []
    for directory in names {
      // Directories that are not animation names are not ours to read or delete.
      guard let name = try? AnimationName(parsing: directory) else { continue }
      let folder = root.appendingPathComponent(name.rawValue, isDirectory: true)
      let manifestURL = folder.appendingPathComponent("manifest.json")
      guard let data = try? Data(contentsOf: manifestURL),
        let manifest = try? JSONDecoder().decode(DiskManifest.self, from: data),
        (1...Self.maximumFrameCount).contains(manifest.frames)
      else {
        try? files.removeItem(at: folder)  // an interrupted download
        continue
      }
      var bytes = 0
      for file in (try? files.contentsOfDirectory(atPath: folder.path)) ?? [] {
        let url = folder.appendingPathComponent(file)
        if file.hasPrefix(".") {
          try? files.removeItem(at: url)  // a temporary file from an interrupted write
          continue
        }
        bytes += Self.fileSize(url)
      }
      let date =
        (try? files.attributesOfItem(atPath: manifestURL.path)[.modificationDate] as? Date)
        ?? .distantPast
      found.append((name, manifest, bytes, date))
    }
    state.withLock { state in
      // Oldest manifest first: a manifest's date is its download or its last session's first
      // use, whichever is later.
      for (name, manifest, bytes, _) in found.sorted(by: { $0.3 < $1.3 }) {
        state.tick += 1
        state.nextID += 1
        state.animations[name] = DiskAnimation(
          version: manifest.version, frameCount: manifest.frames, bytes: bytes,
          lastUsed: state.tick, id: state.nextID)
        state.statistics.diskBytes += bytes
        state.statistics.animations += 1
      }
    }
  }

  // MARK: Manifest

  /// Compares the server's `base_animations_manifest`, as LIVAProtocol decodes it, with the
  /// cache: what is missing or stale, in priority order. A cached copy is stale when its
  /// version or frame count differs; a manifest without a version trusts a cached copy of the
  /// same frame count that was stored without one.
  public func plan(for manifest: [AnimationName: BaseAnimationInfo]) -> FetchPlan {
    plan(manifest.mapValues { ManifestEntry(frames: $0.frameCount, version: $0.version ?? "") })
  }

  /// Compares a manifest keyed by raw names with the cache: what is missing or stale, in
  /// priority order, and which names were refused (invalid names never reach the disk).
  public func plan(for manifest: [String: ManifestEntry]) -> FetchPlan {
    var rejected: [String] = []
    var valid: [AnimationName: ManifestEntry] = [:]
    for (text, entry) in manifest {
      if let name = try? AnimationName(parsing: text) {
        valid[name] = entry
      } else {
        rejected.append(text)
      }
    }
    var result = plan(valid)
    result.rejectedNames = (result.rejectedNames + rejected).sorted()
    return result
  }

  private func plan(_ manifest: [AnimationName: ManifestEntry]) -> FetchPlan {
    var rejected: [String] = []
    var wanted: [AnimationName] = []
    state.withLock { state in
      for (name, entry) in manifest {
        guard (1...Self.maximumFrameCount).contains(entry.frames) else {
          rejected.append(name.rawValue)
          continue
        }
        let cached = state.animations[name]
        if cached?.version != entry.version || cached?.frameCount != entry.frames {
          wanted.append(name)
        }
      }
    }
    let rank = Dictionary(
      Self.priorityOrder.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    wanted.sort { (rank[$0] ?? Int.max, $0.rawValue) < (rank[$1] ?? Int.max, $1.rawValue) }
    return FetchPlan(animations: wanted, rejectedNames: rejected.sorted())
  }

  /// Parses an animation name from the wire; a hostile or malformed name is an
  /// ``LIVAMediaError/Code-swift.struct/invalidName`` error.
  public static func animationName(_ text: String) throws(LIVAMediaError) -> AnimationName {
    do {
      return try AnimationName(parsing: text)
    } catch {
      throw LIVAMediaError(.invalidName, error.message, source: "animation name")
    }
  }

  // MARK: Writing

  /// Starts (or restarts) downloading `animation`: any cached copy becomes unavailable at
  /// once and its files are deleted.
  public func beginDownload(_ animation: AnimationName, frames: Int) throws(LIVAMediaError) {
    guard (1...Self.maximumFrameCount).contains(frames) else {
      throw LIVAMediaError(
        .invalidArgument, "\(frames) frames is outside 1...\(Self.maximumFrameCount)",
        source: animation.rawValue)
    }
    removeFromDisk(animation)
    let folder = directory(animation)
    do {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    } catch {
      throw LIVAMediaError(.ioFailure, "cannot create \(folder.path): \(error)")
    }
    state.withLock { state in
      var entry = state.entry(animation)
      entry.frameCount = frames
      entry.version = nil
      entry.bytes = 0
      state.animations[animation] = entry
    }
  }

  /// Writes frame `index` of an animation being downloaded. PNG bytes are written as they
  /// are; WebP or JPEG bytes are decoded and re-encoded as PNG (the cache's layout).
  public func storeFrame(_ data: Data, index: Int, of animation: AnimationName)
    throws(LIVAMediaError)
  {
    let downloading = state.withLock { state -> Int? in
      guard let entry = state.animations[animation], entry.version == nil else { return nil }
      return entry.frameCount
    }
    guard let frameCount = downloading else {
      throw LIVAMediaError(
        .invalidArgument, "no download of \(animation) was begun", source: animation.rawValue)
    }
    guard (0..<frameCount).contains(index) else {
      throw LIVAMediaError(
        .invalidArgument, "frame \(index) is outside 0..<\(frameCount)",
        source: animation.rawValue)
    }
    let png: Data
    switch ImageFormat(sniffing: data) {
    case .png: png = data
    case .webp, .jpeg: png = try codec.encode(try codec.decode(data), as: .png)
    case nil:
      throw LIVAMediaError(
        .unsupportedFormat, "frame \(index) is not an image", source: animation.rawValue)
    }
    let url = frameURL(animation, index)
    let previous = Self.fileSize(url)
    try Self.writeAtomically(png, to: url)
    state.withLock { state in
      state.animations[animation]?.bytes += png.count - previous
      state.statistics.diskBytes += png.count - previous
    }
  }

  /// Writes a `receive_base_frame` of an animation being downloaded (see
  /// ``storeFrame(_:index:of:)``).
  public func store(_ frame: BaseFrame) throws(LIVAMediaError) {
    try storeFrame(frame.image.data, index: frame.frameIndex, of: frame.animationName)
  }

  /// Completes a download: checks every frame is on disk, writes the manifest (making the
  /// animation available), then evicts least recently used animations above the disk limit.
  /// `version` is the manifest's; nil (none in the manifest) is kept as an empty version.
  public func finishDownload(_ animation: AnimationName, version: String?)
    throws(LIVAMediaError)
  {
    let version = version ?? ""
    guard let entry = state.withLock({ $0.animations[animation] }), entry.version == nil else {
      throw LIVAMediaError(
        .invalidArgument, "no download of \(animation) was begun", source: animation.rawValue)
    }
    for index in 0..<entry.frameCount
    where !FileManager.default.fileExists(atPath: frameURL(animation, index).path) {
      throw LIVAMediaError(
        .invalidArgument, "frame \(index) of \(animation) is missing", source: animation.rawValue)
    }
    let manifest = DiskManifest(version: version, frames: entry.frameCount)
    let data: Data
    do {
      data = try JSONEncoder().encode(manifest)
    } catch {
      throw LIVAMediaError(.ioFailure, "cannot encode the manifest: \(error)")
    }
    try Self.writeAtomically(data, to: directory(animation).appendingPathComponent("manifest.json"))
    let victims: [AnimationName] = state.withLock { state in
      state.tick += 1
      state.animations[animation]?.version = version
      state.animations[animation]?.lastUsed = state.tick
      state.animations[animation]?.bytes += data.count
      state.statistics.diskBytes += data.count
      state.statistics.animations += 1
      var victims: [AnimationName] = []
      var total = state.statistics.diskBytes
      let candidates = state.animations
        .filter { $0.key != animation && $0.value.version != nil && !protected.contains($0.key) }
        .sorted { $0.value.lastUsed < $1.value.lastUsed }
      for (name, candidate) in candidates where total > diskByteLimit {
        victims.append(name)
        total -= candidate.bytes
      }
      return victims
    }
    for victim in victims {
      removeFromDisk(victim)
      state.withLock { $0.statistics.evictions += 1 }
    }
  }

  // MARK: Reading

  /// Whether `animation` is completely on disk.
  public func isAvailable(_ animation: AnimationName) -> Bool {
    state.withLock { $0.animations[animation]?.version != nil }
  }

  /// The version and frame count of a complete cached animation.
  public func cachedEntry(_ animation: AnimationName) -> ManifestEntry? {
    state.withLock { state in
      guard let entry = state.animations[animation], let version = entry.version else {
        return nil
      }
      return ManifestEntry(frames: entry.frameCount, version: version)
    }
  }

  /// Frame `index` of a complete animation, from memory or else read and decoded from disk
  /// (synchronously, on the caller's thread). Throws when the animation is not available, the
  /// index is out of range, or the file is damaged.
  public func frame(_ index: Int, of animation: AnimationName) throws(LIVAMediaError)
    -> RGBAImage
  {
    let (entry, firstUse): (DiskAnimation?, Bool) = state.withLock { state in
      guard let entry = state.animations[animation], entry.version != nil else {
        return (nil, false)
      }
      state.tick += 1
      state.animations[animation]?.lastUsed = state.tick
      state.animations[animation]?.touchedOnDisk = true
      return (entry, !entry.touchedOnDisk)
    }
    guard let entry else {
      throw LIVAMediaError(
        .invalidArgument, "\(animation) is not cached", source: animation.rawValue)
    }
    if firstUse {
      // Once per animation and session: the next launch orders animations by this date.
      try? FileManager.default.setAttributes(
        [.modificationDate: Date()],
        ofItemAtPath: directory(animation).appendingPathComponent("manifest.json").path)
    }
    guard (0..<entry.frameCount).contains(index) else {
      throw LIVAMediaError(
        .invalidArgument, "frame \(index) is outside 0..<\(entry.frameCount)",
        source: animation.rawValue)
    }
    let key = "\(animation.rawValue)/\(index)"
    if let image = decoded.image(for: key) {
      state.withLock { $0.statistics.memoryHits += 1 }
      return image
    }
    let url = frameURL(animation, index)
    guard let data = try? Data(contentsOf: url) else {
      throw LIVAMediaError(.ioFailure, "cannot read frame \(index)", source: url.path)
    }
    var image: RGBAImage
    do {
      image = try codec.decode(data)
    } catch {
      var located = error
      located.source = url.path
      throw located
    }
    decoded.insert(image, for: key, message: entry.id)
    state.withLock { $0.statistics.diskLoads += 1 }
    return image
  }

  /// Frame `index` of `animation` if it is decoded in memory now; never touches the disk and
  /// never decodes, so the render path may call it. A nil is a planned hold: call
  /// ``preload(_:frames:)`` (or ``frame(_:of:)``) from a worker to bring frames in.
  public func decodedFrame(_ index: Int, of animation: AnimationName) -> RGBAImage? {
    decoded.image(for: "\(animation.rawValue)/\(index)")
  }

  /// Reads and decodes frames of a cached animation into memory, on the calling thread (a
  /// worker, never the render thread). Frames beyond ``memoryByteLimit`` push out the least
  /// recently used ones, so preload what the next seconds of playback need.
  public func preload(_ animation: AnimationName, frames: Range<Int>? = nil)
    throws(LIVAMediaError)
  {
    guard let count = cachedEntry(animation)?.frames else {
      throw LIVAMediaError(
        .invalidArgument, "\(animation) is not cached", source: animation.rawValue)
    }
    let range = (frames ?? 0..<count).clamped(to: 0..<count)
    for index in range { _ = try frame(index, of: animation) }
  }

  /// Brings a window of frames into memory on a worker of `scheduler`, most urgent first, and
  /// then marks them recently used (the most urgent last), so that the byte-bounded memory
  /// (``memoryByteLimit``) lets go of frames behind the playhead, never of the window ahead.
  /// A window larger than the memory is cut where it stops fitting: its less urgent end is not
  /// decoded rather than pushing out its more urgent start.
  /// A new call replaces whatever the previous one had not reached yet. Returns at once.
  public func prefetch(_ frames: [(AnimationName, Int)], scheduler: any DecodeScheduler) {
    let start = prefetching.withLock { work -> Bool in
      work.pending = frames
      guard !work.running else { return false }
      work.running = true
      return true
    }
    if start { scheduler.schedule { self.drainPrefetch() } }
  }

  /// Whether no prefetch is pending or running.
  public var isPrefetchIdle: Bool { prefetching.withLock { !$0.running && $0.pending.isEmpty } }

  private func drainPrefetch() {
    while true {
      let window = prefetching.withLock { work -> [(AnimationName, Int)]? in
        guard !work.pending.isEmpty else {
          work.running = false
          return nil
        }
        defer { work.pending = [] }
        return work.pending
      }
      guard let window else { return }
      // Bytes of this window in memory so far, and the size of one frame once known: what
      // would not fit is not decoded (it would push out the window's own, more urgent frames).
      var bytes = 0
      var frameSize = 0
      for (name, index) in window {
        if let image = decodedFrame(index, of: name) {
          bytes += image.byteCount
          frameSize = max(frameSize, image.byteCount)
          continue
        }
        if frameSize > 0, bytes + frameSize > decoded.byteLimit { break }
        if let image = try? frame(index, of: name) {
          bytes += image.byteCount
          frameSize = max(frameSize, image.byteCount)
        }
        // A newer window replaces this one: go on with it at once.
        if prefetching.withLock({ !$0.pending.isEmpty }) { break }
      }
      for (name, index) in window.reversed() { _ = decodedFrame(index, of: name) }
    }
  }

  /// Frame 0 of the idle loop (`idle_1_s_idle_1_e`) when cached: the instant first frame.
  public func idleFirstFrame() -> RGBAImage? {
    try? frame(0, of: .idleForward)
  }

  /// Current statistics.
  public var statistics: Statistics {
    var statistics = state.withLock { $0.statistics }
    statistics.memoryBytes = decoded.statistics.bytes
    return statistics
  }

  /// Drops every decoded frame held in memory (memory pressure); the disk is untouched.
  public func purgeMemory() {
    decoded.purge()
  }

  /// Drops every decoded frame except `frames` (memory pressure: keep what is on screen and
  /// idle frame 0, or the window ahead); the disk is untouched.
  public func purgeMemory(keeping frames: [(AnimationName, Int)]) {
    decoded.purge(keeping: Set(frames.map { "\($0.0.rawValue)/\($0.1)" }))
  }

  // MARK: Files

  private func directory(_ animation: AnimationName) -> URL {
    root.appendingPathComponent(animation.rawValue, isDirectory: true)
  }

  private func frameURL(_ animation: AnimationName, _ index: Int) -> URL {
    let number = String(index)
    let padded = String(repeating: "0", count: max(0, 4 - number.count)) + number
    return directory(animation).appendingPathComponent("frame_\(padded).png")
  }

  /// Makes `animation` unavailable (manifest first), deletes its files and decoded frames.
  private func removeFromDisk(_ animation: AnimationName) {
    let folder = directory(animation)
    try? FileManager.default.removeItem(at: folder.appendingPathComponent("manifest.json"))
    try? FileManager.default.removeItem(at: folder)
    let removed = state.withLock { state -> DiskAnimation? in
      guard let entry = state.animations.removeValue(forKey: animation) else { return nil }
      state.statistics.diskBytes -= entry.bytes
      if entry.version != nil { state.statistics.animations -= 1 }
      return entry
    }
    if let removed { decoded.evict(message: removed.id) }
  }

  private static func fileSize(_ url: URL) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int) ?? 0
  }

  /// Writes `data` to a temporary file next to `url`, flushes it, and renames it over `url`.
  static func writeAtomically(_ data: Data, to url: URL) throws(LIVAMediaError) {
    let temporary = url.deletingLastPathComponent()
      .appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
    let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
    guard descriptor >= 0 else {
      throw LIVAMediaError(.ioFailure, "cannot create a temporary file", source: temporary.path)
    }
    var written = 0
    let complete = data.withUnsafeBytes { raw -> Bool in
      while written < raw.count {
        let result = write(descriptor, raw.baseAddress! + written, raw.count - written)
        if result < 0 {
          if errno == EINTR { continue }
          return false
        }
        written += result
      }
      return fsync(descriptor) == 0
    }
    close(descriptor)
    guard complete, rename(temporary.path, url.path) == 0 else {
      unlink(temporary.path)
      throw LIVAMediaError(.ioFailure, "cannot write \(url.lastPathComponent)", source: url.path)
    }
  }
}
