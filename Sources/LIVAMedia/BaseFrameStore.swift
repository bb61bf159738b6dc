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
/// Layout: each downloaded version of an animation in a directory of its own,
/// `<root>/<animation>/v-<unique>/frame_%04d.png`, and `<root>/<animation>/manifest.json`
/// naming the complete one (its directory, the manifest's `version` and the frame count).
/// A frame file holds the bytes as the server sent them, PNG, WebP or JPEG: readers
/// recognise the format by its first bytes, not by the name (which keeps the `.png` of the
/// older layout, so caches written before stay readable).
///
/// - **Complete or absent:** `manifest.json` is written last, when every frame is on disk;
///   without it an animation does not exist for readers. An animation whose version differs
///   from the server's manifest is stale and is fetched again.
/// - **Staged versions:** a download goes into a new version directory beside the cached one,
///   which stays available and keeps being drawn; when the download completes with every
///   frame, renaming `manifest.json` swaps the new version in at once (the old one's files and
///   decoded frames go). A download that fails, is begun again or is cut off (the app quits)
///   leaves the old version in place; its directory is deleted.
/// - **Shared roots:** several stores (clients in one process or several) may use one root. A
///   store holds a shared `flock` on the `lock` file of each version it draws and an exclusive
///   one on its downloads; a directory is deleted only by whoever gets the exclusive lock, and
///   never while the manifest names it, so no store deletes another's download or the frames
///   another draws (a replaced version goes when its last user lets go of it). Swaps are
///   renames of `manifest.json`: the last complete download wins for stores opened later.
/// - **Atomic writes:** every file is written to a temporary name in the same directory,
///   flushed with `fsync`, then renamed over the final name, so a crash mid-write never leaves
///   a half frame under a frame's name. Leftover temporary files are deleted on start.
/// - **Safe names:** only ``LIVAProtocol/AnimationName`` values reach the file system; its
///   grammar (lowercase letters, digits, `_`) cannot express `/`, `..` or any other escape.
/// - **Bounded disk:** above ``diskByteLimit`` whole animations are evicted, least recently
///   used first, never the idle loop's two halves (``protected``).
/// - **Bounded memory:** decoded frames live in a byte-bounded LRU (``memoryByteLimit``).
/// - **Instant first frame:** ``idleFirstFrame()`` loads frame 0 of `idle_1_s_idle_1_e`
///   synchronously; other animations load lazily, in ``priorityOrder``. That frame is also
///   kept decoded on disk (`frame_0000.rgba` beside its PNG, written the first time it is
///   decoded), so a session starts by reading it instead of decoding it; a damaged copy is
///   decoded again and rewritten.
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

  /// The load order of a production avatar's animations (docs/Protocol.md).
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

  /// A complete version on disk: the one drawn.
  private struct Version {
    var version: String
    var frameCount: Int
    /// Its directory's name under the animation's.
    var directory: String
    var bytes: Int
    /// The owner id of its decoded frames (and part of their keys).
    var id: Int
    /// The descriptor holding a shared lock on its `lock` file while this store draws it.
    var lock: Int32
  }

  /// A version being downloaded, beside the complete one.
  private struct Staging {
    var frameCount: Int
    var directory: String
    var bytes: Int
    /// The descriptor holding an exclusive lock on its `lock` file.
    var lock: Int32
  }

  private struct DiskAnimation {
    var current: Version?
    var staging: Staging?
    var lastUsed = 0
    /// Whether the manifest's modification date was refreshed this session (it carries the
    /// recency order to the next launch).
    var touchedOnDisk = false
  }

  private struct State {
    var animations: [AnimationName: DiskAnimation] = [:]
    var tick = 0
    var nextID = 0
    var statistics = Statistics()
  }

  /// `<root>/<animation>/manifest.json`: the complete version.
  private struct DiskManifest: Codable {
    var version: String
    var frames: Int
    /// The version's directory under the animation's.
    var directory: String?
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
    var found: [(AnimationName, DiskManifest, String, Int, Int32, Date)] = []
    for directory in names {
      // Directories that are not animation names are not ours to read or delete.
      guard let name = try? AnimationName(parsing: directory) else { continue }
      let folder = root.appendingPathComponent(name.rawValue, isDirectory: true)
      let manifestURL = folder.appendingPathComponent("manifest.json", isDirectory: false)
      let manifest = (try? Data(contentsOf: manifestURL)).flatMap {
        try? JSONDecoder().decode(DiskManifest.self, from: $0)
      }
      var complete = manifest.flatMap { manifest -> String? in
        guard (1...Self.maximumFrameCount).contains(manifest.frames),
          let directory = manifest.directory, Self.isVersionDirectory(directory)
        else { return nil }
        return directory
      }
      // Drawn from now on: shared-locked, so that no other store deletes it.
      var lock: Int32?
      if let current = complete {
        lock = Self.lock(
          folder.appendingPathComponent(current, isDirectory: true), exclusive: false)
        if lock == nil { complete = nil }  // being deleted, or damaged
      }
      var bytes = 0
      for file in (try? files.contentsOfDirectory(atPath: folder.path)) ?? [] {
        let url = folder.appendingPathComponent(file, isDirectory: false)
        if file == "manifest.json" {
          if complete != nil { bytes += Self.fileSize(url) }
        } else if file == complete {
          for frame in (try? files.contentsOfDirectory(atPath: url.path)) ?? [] {
            let frameURL = url.appendingPathComponent(frame, isDirectory: false)
            if frame.hasPrefix(".") {
              try? files.removeItem(at: frameURL)  // a temporary file of an interrupted write
            } else {
              bytes += Self.fileSize(frameURL)
            }
          }
        } else if Self.isVersionDirectory(file) {
          // An interrupted download or a replaced version: unless a store uses it.
          if file != manifest?.directory { Self.removeIfUnused(url) }
        } else if file.hasPrefix(".") {
          // A download being set up, or what one left: only once it is old.
          if Self.isOld(url) { try? files.removeItem(at: url) }
        } else if file.hasPrefix("frame_") {
          try? files.removeItem(at: url)  // the older layout's frames
        }
      }
      guard let manifest, let complete, let lock else {
        rmdir(folder.path)  // only when empty
        continue
      }
      let date = Self.status(manifestURL)?.modified ?? .distantPast
      found.append((name, manifest, complete, bytes, lock, date))
    }
    state.withLock { state in
      // Oldest manifest first: a manifest's date is its download or its last session's first
      // use, whichever is later.
      for (name, manifest, directory, bytes, lock, _) in found.sorted(by: { $0.5 < $1.5 }) {
        state.tick += 1
        state.nextID += 1
        state.animations[name] = DiskAnimation(
          current: Version(
            version: manifest.version, frameCount: manifest.frames, directory: directory,
            bytes: bytes, id: state.nextID, lock: lock),
          lastUsed: state.tick)
        state.statistics.diskBytes += bytes
        state.statistics.animations += 1
      }
    }
  }

  deinit {
    // Downloads not complete go; the locks of the versions drawn are let go.
    let animations = state.withLock { $0.animations }
    for (name, entry) in animations {
      if let staging = entry.staging {
        try? FileManager.default.removeItem(
          at: directory(name).appendingPathComponent(staging.directory, isDirectory: true))
        close(staging.lock)
      }
      if let current = entry.current { close(current.lock) }
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
        let cached = state.animations[name]?.current
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

  /// The cache directory of one avatar under `root`: frames of another server, agent or
  /// resolution are another avatar's and must never be drawn, so each gets its own directory.
  /// Its name is readable (host, agent and resolution, sanitized to `[a-z0-9._-]`, shortened)
  /// and made unique by a 64-bit FNV-1a hash of the exact values (the server with its scheme,
  /// port and path, lowercased, `ws`/`wss` read as `http`/`https`, without a trailing `/`). It
  /// is one path component: no input can reach outside `root`. Stable across releases.
  public static func cacheDirectory(
    in root: URL, server: String, agentID: String, resolution: Int
  ) -> URL {
    var canonical = server.lowercased()
    while canonical.hasSuffix("/") { canonical.removeLast() }
    if canonical.hasPrefix("ws://") {
      canonical = "http://" + canonical.dropFirst(5)
    } else if canonical.hasPrefix("wss://") {
      canonical = "https://" + canonical.dropFirst(6)
    }
    var host = Substring(canonical)
    if let scheme = host.range(of: "://") { host = host[scheme.upperBound...] }
    func sanitized(_ text: some StringProtocol) -> String {
      let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789._-")
      return String(text.lowercased().prefix(40).map { allowed.contains($0) ? $0 : "_" })
    }
    var name =
      "\(sanitized(host))-\(sanitized(agentID))-\(resolution)-"
      + fnv1a64Hex("\(canonical)\n\(agentID)\n\(resolution)")
    if name.hasPrefix(".") { name = "_" + name.dropFirst() }
    return root.appendingPathComponent(name, isDirectory: true)
  }

  /// The 64-bit FNV-1a hash of `text`'s UTF-8 bytes, as 16 lowercase hex digits.
  static func fnv1a64Hex(_ text: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 {
      hash ^= UInt64(byte)
      hash &*= 0x0000_0100_0000_01b3
    }
    let digits = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
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

  /// Starts (or restarts) downloading `animation` into a new version beside the cached one,
  /// which stays available until ``finishDownload(_:version:)`` swaps the new one in. A
  /// download of it already begun is discarded.
  public func beginDownload(_ animation: AnimationName, frames: Int) throws(LIVAMediaError) {
    guard (1...Self.maximumFrameCount).contains(frames) else {
      throw LIVAMediaError(
        .invalidArgument, "\(frames) frames is outside 1...\(Self.maximumFrameCount)",
        source: animation.rawValue)
    }
    abandonDownload(animation)
    // Set up under a hidden name, locked, then renamed: no other store ever sees it unlocked.
    let directory = "v-" + UUID().uuidString.lowercased()
    let parent = self.directory(animation)
    let setup = parent.appendingPathComponent("." + directory, isDirectory: true)
    let folder = parent.appendingPathComponent(directory, isDirectory: true)
    do {
      try FileManager.default.createDirectory(at: setup, withIntermediateDirectories: true)
    } catch {
      throw LIVAMediaError(.ioFailure, "cannot create \(setup.path): \(error)")
    }
    guard let lock = Self.lock(setup, exclusive: true, create: true) else {
      try? FileManager.default.removeItem(at: setup)
      throw LIVAMediaError(.ioFailure, "cannot lock a new download", source: setup.path)
    }
    guard rename(setup.path, folder.path) == 0 else {
      try? FileManager.default.removeItem(at: setup)
      close(lock)
      throw LIVAMediaError(.ioFailure, "cannot create \(folder.path)", source: folder.path)
    }
    state.withLock { state in
      state.animations[animation, default: DiskAnimation()].staging = Staging(
        frameCount: frames, directory: directory, bytes: 0, lock: lock)
    }
  }

  /// Whether a download of `animation` was begun and has not completed or failed.
  public func isDownloading(_ animation: AnimationName) -> Bool {
    state.withLock { $0.animations[animation]?.staging != nil }
  }

  /// Discards a download begun and not complete (its frames are deleted); the cached version,
  /// if any, stays. Does nothing when none was begun.
  public func abandonDownload(_ animation: AnimationName) {
    let staging = state.withLock { state -> Staging? in
      guard let staging = state.animations[animation]?.staging else { return nil }
      state.animations[animation]?.staging = nil
      state.statistics.diskBytes -= staging.bytes
      if state.animations[animation]?.current == nil { state.animations[animation] = nil }
      return staging
    }
    guard let staging else { return }
    try? FileManager.default.removeItem(
      at: directory(animation).appendingPathComponent(staging.directory, isDirectory: true))
    close(staging.lock)
  }

  /// Writes frame `index` of an animation being downloaded: the encoded bytes as they came
  /// (PNG, WebP or JPEG, recognised by their first bytes), never decoded or re-encoded here,
  /// so the socket task that calls this only writes a file; ``frame(_:of:)`` decodes the
  /// frame when it is needed (bytes that turn out damaged fail there, as a damaged file
  /// would). Bytes that are no image at all are refused.
  public func storeFrame(_ data: Data, index: Int, of animation: AnimationName)
    throws(LIVAMediaError)
  {
    guard let staging = state.withLock({ $0.animations[animation]?.staging }) else {
      throw LIVAMediaError(
        .invalidArgument, "no download of \(animation) was begun", source: animation.rawValue)
    }
    guard (0..<staging.frameCount).contains(index) else {
      throw LIVAMediaError(
        .invalidArgument, "frame \(index) is outside 0..<\(staging.frameCount)",
        source: animation.rawValue)
    }
    guard ImageFormat(sniffing: data) != nil else {
      throw LIVAMediaError(
        .unsupportedFormat, "frame \(index) is not an image", source: animation.rawValue)
    }
    let url = frameURL(animation, staging.directory, index)
    let previous = Self.fileSize(url)
    try Self.writeAtomically(data, to: url)
    state.withLock { state in
      // Counted only while this download is still the one begun.
      guard state.animations[animation]?.staging?.directory == staging.directory else { return }
      state.animations[animation]?.staging?.bytes += data.count - previous
      state.statistics.diskBytes += data.count - previous
    }
  }

  /// Writes a `receive_base_frame` of an animation being downloaded (see
  /// ``storeFrame(_:index:of:)``).
  public func store(_ frame: BaseFrame) throws(LIVAMediaError) {
    try storeFrame(frame.image.data, index: frame.frameIndex, of: frame.animationName)
  }

  /// Completes a download: checks every frame is on disk, writes the manifest (swapping the
  /// new version in at once: the old one's files and decoded frames go), then evicts least
  /// recently used animations above the disk limit. `version` is the manifest's; nil (none in
  /// the manifest) is kept as an empty version.
  ///
  /// - Throws: when no download was begun, or a frame is missing: then the download is
  ///   discarded and the cached version (if any) stays; begin it again to retry.
  public func finishDownload(_ animation: AnimationName, version: String?)
    throws(LIVAMediaError)
  {
    let version = version ?? ""
    guard let staging = state.withLock({ $0.animations[animation]?.staging }) else {
      throw LIVAMediaError(
        .invalidArgument, "no download of \(animation) was begun", source: animation.rawValue)
    }
    for index in 0..<staging.frameCount
    where !FileManager.default.fileExists(
      atPath: frameURL(animation, staging.directory, index).path)
    {
      abandonDownload(animation)
      throw LIVAMediaError(
        .invalidArgument, "frame \(index) of \(animation) is missing", source: animation.rawValue)
    }
    let manifest = DiskManifest(
      version: version, frames: staging.frameCount, directory: staging.directory)
    let data: Data
    do {
      data = try JSONEncoder().encode(manifest)
    } catch {
      abandonDownload(animation)
      throw LIVAMediaError(.ioFailure, "cannot encode the manifest: \(error)")
    }
    do {
      // The temporary file in the download's own (locked) directory: no other store's
      // clean-up can take it away before the rename.
      try Self.writeAtomically(
        data, to: directory(animation).appendingPathComponent("manifest.json", isDirectory: false),
        temporaryDirectory: directory(animation).appendingPathComponent(
          staging.directory, isDirectory: true))
    } catch {
      abandonDownload(animation)
      throw error
    }
    let (replaced, victims): (Version?, [AnimationName]) = state.withLock { state in
      guard var entry = state.animations[animation],
        entry.staging?.directory == staging.directory, let staged = entry.staging
      else { return (nil, []) }
      state.tick += 1
      state.nextID += 1
      let replaced = entry.current
      if let replaced {
        state.statistics.diskBytes -= replaced.bytes
      } else {
        state.statistics.animations += 1
      }
      // Drawn from now on: the exclusive lock becomes a shared one.
      flock(staged.lock, LOCK_SH)
      entry.current = Version(
        version: version, frameCount: staged.frameCount, directory: staged.directory,
        bytes: staged.bytes + data.count, id: state.nextID, lock: staged.lock)
      entry.staging = nil
      entry.lastUsed = state.tick
      entry.touchedOnDisk = true
      state.animations[animation] = entry
      state.statistics.diskBytes += data.count
      var victims: [AnimationName] = []
      var total = state.statistics.diskBytes
      let candidates = state.animations
        .filter { $0.key != animation && $0.value.current != nil && !protected.contains($0.key) }
        .sorted { $0.value.lastUsed < $1.value.lastUsed }
      for (name, candidate) in candidates where total > diskByteLimit {
        victims.append(name)
        total -= candidate.current?.bytes ?? 0
      }
      return (replaced, victims)
    }
    if let replaced {
      close(replaced.lock)
      Self.removeIfUnused(
        directory(animation).appendingPathComponent(replaced.directory, isDirectory: true))
      decoded.evict(message: replaced.id)
    }
    for victim in victims {
      removeFromDisk(victim)
      state.withLock { $0.statistics.evictions += 1 }
    }
  }

  // MARK: Reading

  /// Whether `animation` is completely on disk.
  public func isAvailable(_ animation: AnimationName) -> Bool {
    state.withLock { $0.animations[animation]?.current != nil }
  }

  /// The version and frame count of a complete cached animation.
  public func cachedEntry(_ animation: AnimationName) -> ManifestEntry? {
    state.withLock { state in
      guard let current = state.animations[animation]?.current else { return nil }
      return ManifestEntry(frames: current.frameCount, version: current.version)
    }
  }

  /// Frame `index` of a complete animation, from memory or else read and decoded from disk
  /// (synchronously, on the caller's thread). Throws when the animation is not available, the
  /// index is out of range, or the file is damaged.
  public func frame(_ index: Int, of animation: AnimationName) throws(LIVAMediaError)
    -> RGBAImage
  {
    let (entry, firstUse): (Version?, Bool) = state.withLock { state in
      guard let animationEntry = state.animations[animation],
        let current = animationEntry.current
      else {
        return (nil, false)
      }
      state.tick += 1
      state.animations[animation]?.lastUsed = state.tick
      state.animations[animation]?.touchedOnDisk = true
      return (current, !animationEntry.touchedOnDisk)
    }
    guard let entry else {
      throw LIVAMediaError(
        .invalidArgument, "\(animation) is not cached", source: animation.rawValue)
    }
    if firstUse {
      // Once per animation and session: the next launch orders animations by this date.
      try? FileManager.default.setAttributes(
        [.modificationDate: Date()],
        ofItemAtPath: directory(animation).appendingPathComponent(
          "manifest.json", isDirectory: false
        ).path)
    }
    guard (0..<entry.frameCount).contains(index) else {
      throw LIVAMediaError(
        .invalidArgument, "frame \(index) is outside 0..<\(entry.frameCount)",
        source: animation.rawValue)
    }
    let key = Self.key(animation, entry.id, index)
    if let image = decoded.image(for: key) {
      state.withLock { $0.statistics.memoryHits += 1 }
      return image
    }
    let poster = Self.hasPoster(animation, index) ? posterURL(animation, entry.directory) : nil
    if let poster, let image = Self.readPoster(poster) {
      _ = decoded.insert(image, for: key, message: entry.id)
      state.withLock { $0.statistics.diskLoads += 1 }
      return image
    }
    let url = frameURL(animation, entry.directory, index)
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
    _ = decoded.insert(image, for: key, message: entry.id)
    state.withLock { $0.statistics.diskLoads += 1 }
    if let poster { keepPoster(image, at: poster, animation: animation, version: entry.id) }
    return image
  }

  // MARK: The first frame, kept decoded

  /// Whether frame `index` of `animation` is the one kept decoded on disk: frame 0 of the idle
  /// loop, the first frame of every session. Decoding it (a 1280×768 PNG takes ~15–20 ms on a
  /// small CPU) was most of the time to first frame; reading it raw takes ~1–2 ms.
  private static func hasPoster(_ animation: AnimationName, _ index: Int) -> Bool {
    animation == .idleForward && index == 0
  }

  private func posterURL(_ animation: AnimationName, _ version: String) -> URL {
    directory(animation).appendingPathComponent(version, isDirectory: true)
      .appendingPathComponent("frame_0000.rgba", isDirectory: false)
  }

  /// The raw layout: "LIVARGBA", width and height (u32 little-endian), then the pixels.
  private static let posterMagic = Array("LIVARGBA".utf8)

  /// The kept frame, or nil when there is none or it is damaged (any size but its own). Read
  /// straight into the frame's buffer: one copy from the page cache.
  private static func readPoster(_ url: URL) -> RGBAImage? {
    let descriptor = open(url.path, O_RDONLY)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    func readFully(_ pointer: UnsafeMutableRawPointer, _ count: Int) -> Bool {
      var done = 0
      while done < count {
        let n = read(descriptor, pointer + done, count - done)
        if n < 0, errno == EINTR { continue }
        guard n > 0 else { return false }
        done += n
      }
      return true
    }
    var header = [UInt8](repeating: 0, count: 16)
    var status = stat()
    guard header.withUnsafeMutableBytes({ readFully($0.baseAddress!, 16) }),
      Array(header[0..<8]) == posterMagic, fstat(descriptor, &status) == 0
    else { return nil }
    func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(header[at + $1]) << (8 * $1) } }
    let (width, height) = (u32(8), u32(12))
    guard width > 0, height > 0, width <= 1 << 15, height <= 1 << 15,
      Int(status.st_size) == 16 + width * height * 4
    else { return nil }
    var complete = false
    let pixels = [UInt8](unsafeUninitializedCapacity: width * height * 4) { buffer, count in
      complete = readFully(buffer.baseAddress!, buffer.count)
      count = complete ? buffer.count : 0
    }
    guard complete else { return nil }
    return try? RGBAImage(width: width, height: height, pixels: pixels)
  }

  /// Keeps `image` decoded at `url`, atomically, and counts its bytes on disk with its
  /// version's (while that version is still the current one); best effort (a failure leaves
  /// the PNG path).
  private func keepPoster(
    _ image: RGBAImage, at url: URL, animation: AnimationName, version id: Int
  ) {
    var bytes = Self.posterMagic
    for value in [image.width, image.height] {
      bytes += (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
    bytes += image.pixels
    let previous = Self.fileSize(url)
    guard (try? Self.writeAtomically(Data(bytes), to: url)) != nil else { return }
    state.withLock { state in
      guard state.animations[animation]?.current?.id == id else { return }
      state.animations[animation]?.current?.bytes += bytes.count - previous
      state.statistics.diskBytes += bytes.count - previous
    }
  }

  /// Frame `index` of `animation` if it is decoded in memory now; never touches the disk and
  /// never decodes, so the render path may call it. A nil is a planned hold: call
  /// ``preload(_:frames:)`` (or ``frame(_:of:)``) from a worker to bring frames in.
  public func decodedFrame(_ index: Int, of animation: AnimationName) -> RGBAImage? {
    guard let id = state.withLock({ $0.animations[animation]?.current?.id }) else { return nil }
    return decoded.image(for: Self.key(animation, id, index))
  }

  /// The key of a version's decoded frame: a frame of a replaced version is never found as
  /// the new one's, even when its decode finishes after the swap.
  private static func key(_ animation: AnimationName, _ version: Int, _ index: Int) -> String {
    "\(animation.rawValue)/\(version)/\(index)"
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
    let ids = state.withLock { state in state.animations.compactMapValues { $0.current?.id } }
    decoded.purge(
      keeping: Set(
        frames.compactMap { name, index in ids[name].map { Self.key(name, $0, index) } }))
  }

  // MARK: Files

  private func directory(_ animation: AnimationName) -> URL {
    root.appendingPathComponent(animation.rawValue, isDirectory: true)
  }

  private func frameURL(_ animation: AnimationName, _ version: String, _ index: Int) -> URL {
    let number = String(index)
    let padded = String(repeating: "0", count: max(0, 4 - number.count)) + number
    return directory(animation).appendingPathComponent(version, isDirectory: true)
      .appendingPathComponent("frame_\(padded).png", isDirectory: false)
  }

  /// Whether a name is a version directory's (`v-` and a lowercase UUID).
  private static func isVersionDirectory(_ name: String) -> Bool {
    name.hasPrefix("v-")
      && name.utf8.dropFirst(2).allSatisfy {
        (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
          || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-")
      }
  }

  /// Makes `animation`'s complete version unavailable (manifest first), deletes its files and
  /// decoded frames. A download of it under way goes on.
  private func removeFromDisk(_ animation: AnimationName) {
    let removed = state.withLock { state -> Version? in
      guard let current = state.animations[animation]?.current else { return nil }
      state.animations[animation]?.current = nil
      if state.animations[animation]?.staging == nil { state.animations[animation] = nil }
      state.statistics.diskBytes -= current.bytes
      state.statistics.animations -= 1
      return current
    }
    guard let removed else { return }
    let folder = directory(animation)
    let manifestURL = folder.appendingPathComponent("manifest.json", isDirectory: false)
    // The manifest goes only while it names this store's version (another store may have
    // swapped in a newer one since).
    if let data = try? Data(contentsOf: manifestURL),
      let manifest = try? JSONDecoder().decode(DiskManifest.self, from: data),
      manifest.directory == removed.directory
    {
      try? FileManager.default.removeItem(at: manifestURL)
    }
    close(removed.lock)
    Self.removeIfUnused(folder.appendingPathComponent(removed.directory, isDirectory: true))
    rmdir(folder.path)  // only when empty
    decoded.evict(message: removed.id)
  }

  /// Opens a version directory's `lock` file and locks it, shared or exclusive, without
  /// waiting; the descriptor holds the lock (close it to let go), nil when another store holds
  /// a conflicting lock or the directory is gone.
  private static func lock(_ directory: URL, exclusive: Bool, create: Bool = false) -> Int32? {
    let path = directory.appendingPathComponent("lock", isDirectory: false).path
    let descriptor = open(path, O_RDWR | (create ? O_CREAT : 0), 0o644)
    guard descriptor >= 0 else { return nil }
    var status = stat()
    guard flock(descriptor, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0,
      fstat(descriptor, &status) == 0, status.st_nlink > 0
    else {
      close(descriptor)
      return nil
    }
    return descriptor
  }

  /// Deletes a version directory unless a store holds its lock (draws or downloads it).
  private static func removeIfUnused(_ directory: URL) {
    if FileManager.default.fileExists(
      atPath: directory.appendingPathComponent("lock", isDirectory: false).path)
    {
      guard let lock = lock(directory, exclusive: true) else { return }
      defer { close(lock) }
      try? FileManager.default.removeItem(at: directory)
    } else if isOld(directory) {
      try? FileManager.default.removeItem(at: directory)  // no lock: damaged, left an hour
    }
  }

  /// Whether a file was last modified more than an hour ago.
  private static func isOld(_ url: URL) -> Bool {
    status(url).map { $0.modified < Date(timeIntervalSinceNow: -3_600) } ?? true
  }

  private static func fileSize(_ url: URL) -> Int {
    status(url)?.size ?? 0
  }

  /// A file's size and modification date from one `stat` call. (Foundation's
  /// `attributesOfItem` also looks up the owner's and group's names, a cost that added up to
  /// milliseconds over a cache's few hundred frames when a store opens.)
  private static func status(_ url: URL) -> (size: Int, modified: Date)? {
    var status = stat()
    guard stat(url.path, &status) == 0 else { return nil }
    #if canImport(Darwin)
      let time = status.st_mtimespec
    #else
      let time = status.st_mtim
    #endif
    return (
      Int(status.st_size),
      Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9)
    )
  }

  /// Writes `data` to a temporary file (a unique name next to `url`, or in
  /// `temporaryDirectory` on the same file system), flushes it, and renames it over `url`.
  static func writeAtomically(_ data: Data, to url: URL, temporaryDirectory: URL? = nil)
    throws(LIVAMediaError)
  {
    let temporary = (temporaryDirectory ?? url.deletingLastPathComponent())
      .appendingPathComponent(
        ".\(url.lastPathComponent).\(UUID().uuidString).tmp", isDirectory: false)
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
