import Foundation
import LIVAProtocol

// BaseFrameStore: the files: directories, versions, locks, removal, atomic writes.
extension BaseFrameStore {
  func directory(_ animation: AnimationName) -> URL {
    root.appendingPathComponent(animation.rawValue, isDirectory: true)
  }

  func frameURL(_ animation: AnimationName, _ version: String, _ index: Int) -> URL {
    let number = String(index)
    let padded = String(repeating: "0", count: max(0, 4 - number.count)) + number
    return directory(animation).appendingPathComponent(version, isDirectory: true)
      .appendingPathComponent("frame_\(padded).png", isDirectory: false)
  }

  /// Whether a name is a version directory's (`v-` and a lowercase UUID).
  static func isVersionDirectory(_ name: String) -> Bool {
    name.hasPrefix("v-")
      && name.utf8.dropFirst(2).allSatisfy {
        (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
          || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-")
      }
  }

  /// Makes `animation`'s complete version unavailable (manifest first), deletes its files and
  /// decoded frames. A download of it under way goes on.
  func removeFromDisk(_ animation: AnimationName) {
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
    decoded.removeVersion(removed.id)
    forgetPlayback(version: removed.id)
  }

  /// Opens a version directory's `lock` file and locks it, shared or exclusive, without
  /// waiting; the descriptor holds the lock (close it to let go), nil when another store holds
  /// a conflicting lock or the directory is gone.
  static func lock(_ directory: URL, exclusive: Bool, create: Bool = false) -> Int32? {
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
  static func removeIfUnused(_ directory: URL) {
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
  static func isOld(_ url: URL) -> Bool {
    status(url).map { $0.modified < Date(timeIntervalSinceNow: -3_600) } ?? true
  }

  static func fileSize(_ url: URL) -> Int {
    status(url)?.size ?? 0
  }

  /// A file's size and modification date from one `stat` call. (Foundation's
  /// `attributesOfItem` also looks up the owner's and group's names, a cost that added up to
  /// milliseconds over a cache's few hundred frames when a store opens.)
  static func status(_ url: URL) -> (size: Int, modified: Date)? {
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
