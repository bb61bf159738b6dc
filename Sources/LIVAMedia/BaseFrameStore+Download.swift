import Foundation
import LIVAProtocol

// BaseFrameStore: writing a download (begin, frames, finish or abandon) into the disk cache.
extension BaseFrameStore {
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
  /// frame when it is needed (bytes that turn out damaged past their header fail there, as a
  /// damaged file would). Refused: bytes that are no image, an image whose header declares
  /// no size (``ImageHeader``), and an image whose decoded size exceeds
  /// ``memoryByteLimit`` (it could never be drawn).
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
    // The header must declare a size, and the decoded frame must fit the decoded-frame
    // budget: a frame that could never be drawn is refused now rather than cached.
    guard let header = ImageHeader(reading: data) else {
      throw LIVAMediaError(
        .corruptData, "frame \(index) has no readable image header", source: animation.rawValue)
    }
    guard header.decodedByteCount <= memoryByteLimit else {
      throw LIVAMediaError(
        .imageTooLarge,
        "frame \(index) is \(header.width)×\(header.height): \(header.decodedByteCount) bytes "
          + "decoded, over the decoded-frame budget of \(memoryByteLimit)",
        source: animation.rawValue)
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
      let victims = Self.evictionPlan(
        cached: state.animations.compactMap { name, entry in
          entry.current.map { (name, $0.bytes, entry.lastUsed) }
        },
        totalBytes: state.statistics.diskBytes, limit: diskByteLimit,
        keeping: protected.union([animation]))
      return (replaced, victims)
    }
    if let replaced {
      close(replaced.lock)
      Self.removeIfUnused(
        directory(animation).appendingPathComponent(replaced.directory, isDirectory: true))
      decoded.removeVersion(replaced.id)
      forgetPlayback(version: replaced.id)
    }
    for victim in victims {
      removeFromDisk(victim)
      state.withLock { $0.statistics.evictions += 1 }
    }
    makePlaybackFormsInBackground()
  }

  /// The animations to delete so that the cache fits `limit` bytes: the least recently used
  /// first (`lastUsed`: a use counter), never one of `keeping` (the idle loops, the animation
  /// just stored). A pure decision; the store carries it out.
  static func evictionPlan(
    cached: [(name: AnimationName, bytes: Int, lastUsed: Int)], totalBytes: Int, limit: Int,
    keeping: Set<AnimationName>
  ) -> [AnimationName] {
    var victims: [AnimationName] = []
    var total = totalBytes
    let candidates = cached.filter { !keeping.contains($0.name) }
      .sorted { ($0.lastUsed, $0.name.rawValue) < ($1.lastUsed, $1.name.rawValue) }
    for candidate in candidates where total > limit {
      victims.append(candidate.name)
      total -= candidate.bytes
    }
    return victims
  }
}
