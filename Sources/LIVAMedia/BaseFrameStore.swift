import Foundation
import LIVAProtocol
import Locking

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
    /// Frames decoded from a playback form (H.264) rather than from their images.
    public var playbackFrames = 0
    /// Playback forms found damaged (deleted), or that could not be made (a codec failure, or
    /// a form that decodes too far from its images); their animations play from their images.
    public var playbackFormFailures = 0
    /// Why the last such form was refused.
    public var lastPlaybackFormError: LIVAMediaError?
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
  struct Version {
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
  struct Staging {
    var frameCount: Int
    var directory: String
    var bytes: Int
    /// The descriptor holding an exclusive lock on its `lock` file.
    var lock: Int32
  }

  struct DiskAnimation {
    var current: Version?
    var staging: Staging?
    var lastUsed = 0
    /// Whether the manifest's modification date was refreshed this session (it carries the
    /// recency order to the next launch).
    var touchedOnDisk = false
  }

  struct State {
    var animations: [AnimationName: DiskAnimation] = [:]
    var tick = 0
    var nextID = 0
    var statistics = Statistics()
  }

  /// `<root>/<animation>/manifest.json`: the complete version.
  struct DiskManifest: Codable {
    var version: String
    var frames: Int
    /// The version's directory under the animation's.
    var directory: String?
  }

  let codec: any ImageCodec
  /// Encodes and decodes the playback form (nil: frames are decoded from their images).
  let videoCodec: (any VideoFrameCodec)?
  /// Whether the store makes playback forms on its own queue after downloads and on opening.
  let makesPlaybackForms: Bool
  let playback = Locked(PlaybackForms())
  /// Pixel buffers of frames that left memory, filled again by the next decodes.
  let spareBuffers: Locked<[[UInt8]]>
  static let spareBufferLimit = 1
  let formQueue = DispatchQueue(label: "liva.base-frames.playback-form", qos: .utility)
  let decoded: DecodedFrames
  let state = Locked(State())
  /// The prefetchers' windows (see ``BaseFramePrefetcher``).
  let prefetching = Locked(PrefetchWindows())
  /// Signalled each time a prefetch worker stops: an inline request handed to a worker running
  /// on another thread waits on it for its window.
  let prefetchStopped = NSCondition()

  /// Frames' worth of the decoded-frame budget that playing from the playback form holds
  /// outside decoded frames: its decoder's pictures (~6 MB at 1280×768, a frame and a half of
  /// RGBA), rounded up; 0 without a video codec. A player plans its window ahead that much
  /// shorter: a frame from the form decodes in 1–2 ms against a PNG's 15–20, so the shorter
  /// window keeps ahead as the longer one did, within the same memory.
  public var reservedFrames: Int { videoCodec == nil ? 0 : 2 }

  /// Keeps the buffers of frames leaving memory in `spare` (up to ``spareBufferLimit``, of
  /// one size).
  static func recycler(into spare: Locked<[[UInt8]]>) -> @Sendable ([RGBAImage]) -> Void {
    { images in
      spare.withLock { spare in
        for image in images {
          if let first = spare.first, first.count != image.byteCount { spare.removeAll() }
          if spare.count < spareBufferLimit { spare.append(image.pixels) }
        }
      }
    }
  }

  /// The video codec this platform offers for playback forms: VideoToolbox on Apple
  /// platforms (`VideoToolboxCodec`, hardware H.264), FFmpeg's libavcodec on Linux when the
  /// package was built with it, else none.
  public static var systemVideoCodec: (any VideoFrameCodec)? {
    #if canImport(VideoToolbox) && !os(Linux)
      VideoToolboxCodec()
    #else
      FFmpegVideoCodec()
    #endif
  }

  /// Opens (creating if needed) the cache at `root`: indexes complete animations, deletes
  /// incomplete downloads and leftover temporary files.
  ///
  /// - Parameters:
  ///   - videoCodec: encodes and decodes playback forms (``PlaybackForm``), e.g.
  ///     ``systemVideoCodec``; nil (the default) decodes every frame from its image, losslessly.
  ///   - makesPlaybackForms: whether the store makes the forms itself, on a background queue
  ///     of utility priority, after each download and for animations cached without one;
  ///     false leaves it to ``makePlaybackForm(_:)``.
  public init(
    root: URL, codec: any ImageCodec = SystemImageCodec(), diskByteLimit: Int = 512 << 20,
    memoryByteLimit: Int = 32 << 20,
    protected: Set<AnimationName> = [.idleForward, .idleBack],
    videoCodec: (any VideoFrameCodec)? = nil,
    makesPlaybackForms: Bool = true
  ) throws(LIVAMediaError) {
    self.root = root
    self.codec = codec
    self.videoCodec = videoCodec
    self.makesPlaybackForms = makesPlaybackForms
    self.diskByteLimit = diskByteLimit
    let spare = Locked<[[UInt8]]>([])
    self.spareBuffers = spare
    // Frames that leave memory leave their buffers for the next frames decoded from the
    // playback form (one, of the avatar's size); without a video codec they are freed.
    let recycle = videoCodec == nil ? nil : Self.recycler(into: spare)
    self.decoded = DecodedFrames(byteLimit: memoryByteLimit, recycle: recycle)
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
    makePlaybackFormsInBackground()
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
    // The decoded frames and the decoder go now, and the allocator gives their pages back:
    // glibc keeps freed blocks of a few MB (frames, a decoder's pictures) in its arenas
    // otherwise, and a process that opens and closes stores would keep the high-water mark.
    playback.withLock { $0 = PlaybackForms() }
    spareBuffers.withLock { $0 = [] }
    decoded.removeAll()
    Self.returnFreedMemory()
  }

  /// Returns freed heap pages to the system where the allocator keeps them (glibc).
  static func returnFreedMemory() {
    #if canImport(Glibc)
      // malloc_trim(3) is glibc's (malloc.h, which the Glibc module leaves out).
      typealias Trim = @convention(c) (Int) -> Int32
      if let symbol = dlsym(nil, "malloc_trim") { _ = unsafeBitCast(symbol, to: Trim.self)(0) }
    #endif
  }

  // MARK: Reading

  /// Whether `animation` is completely on disk.
  public func isAvailable(_ animation: AnimationName) -> Bool {
    state.withLock { $0.animations[animation]?.current != nil }
  }

  /// The version and frame count of a complete cached animation.
  public func cachedEntry(_ animation: AnimationName) -> BaseAnimationInfo? {
    state.withLock { state in
      guard let current = state.animations[animation]?.current else { return nil }
      return BaseAnimationInfo(
        frameCount: current.frameCount, version: current.version.isEmpty ? nil : current.version)
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
    if let image = keptFrame(index, of: animation, version: entry.id, in: entry.directory) {
      return image
    }
    // The kept frame (idle frame 0) is read raw, or made from its image: never from the form.
    if !Self.hasPoster(animation, index),
      let image = playbackFrame(index, of: animation, version: entry)
    {
      decoded.insert(image, for: key)
      state.withLock { $0.statistics.diskLoads += 1 }
      return image
    }
    let poster = Self.hasPoster(animation, index) ? posterURL(animation, entry.directory) : nil
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
    decoded.insert(image, for: key)
    state.withLock { $0.statistics.diskLoads += 1 }
    if let poster { keepPoster(image, at: poster, animation: animation, version: entry.id) }
    return image
  }

}
