import Foundation
import LIVAMedia
import LIVAProtocol

// SampleAvatar: the pack kept in a cache directory, regenerated when stale.
extension SampleAvatar {
  /// The directory name of this generator's pack inside a cache directory, e.g.
  /// `sample-avatar-512x512`.
  public var cacheDirectoryName: String {
    "sample-avatar-\(configuration.width)x\(configuration.height)"
      + (configuration.photographic ? "-photographic" : "")
  }

  /// The pack in `cacheDirectory`, generated when it is missing, unreadable, or made by
  /// another generator version (or greeting setting).
  ///
  /// A new pack is written into a temporary sibling directory and renamed into place, so a
  /// crash or a concurrent generation never leaves a half pack under the final name. A stale
  /// pack is first renamed aside (one atomic step) and removed there, so that a process
  /// regenerating the same cache at the same time never reads a half-removed pack nor
  /// removes one that is current; when another process's pack landed first, it is used.
  public func cachedPack(
    in cacheDirectory: URL, codec: some ImageCodec = SystemImageCodec(),
    progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil
  ) throws(LIVAServerError) -> AvatarPack {
    let target = cacheDirectory.appendingPathComponent(cacheDirectoryName)
    if let existing = currentPack(at: target) { return existing }
    let fileManager = FileManager.default
    let temporary = cacheDirectory.appendingPathComponent(
      ".\(cacheDirectoryName).tmp-\(UUID().uuidString)")
    defer { try? fileManager.removeItem(at: temporary) }
    try write(to: temporary, codec: codec, progress: progress)
    var lastError: (any Error)?
    // Each round either puts this pack in place or finds why not; a few rounds cover other
    // processes' moves landing in between.
    for _ in 0..<4 {
      if let existing = currentPack(at: target) { return existing }
      if fileManager.fileExists(atPath: target.path) {
        let aside = cacheDirectory.appendingPathComponent(
          ".\(cacheDirectoryName).stale-\(UUID().uuidString)")
        // Fails when another process moved it first: then there is nothing to remove.
        if (try? fileManager.moveItem(at: target, to: aside)) != nil {
          try? fileManager.removeItem(at: aside)
        }
      }
      do {
        try fileManager.moveItem(at: temporary, to: target)
        return try AvatarPack(loadingFrom: target)
      } catch {
        lastError = error  // another process's pack landed first: the next round looks at it
      }
    }
    if let existing = currentPack(at: target) { return existing }
    throw LIVAServerError(
      .ioFailure,
      "cannot move the new pack into place: \(lastError.map { "\($0)" } ?? "")",
      location: target.path)
  }

  /// The pack at `directory` when it is readable and current.
  func currentPack(at directory: URL) -> AvatarPack? {
    guard let pack = try? AvatarPack(loadingFrom: directory), isCurrent(pack) else { return nil }
    return pack
  }

  /// Whether a pack was made by this generator, version and configuration.
  public func isCurrent(_ pack: AvatarPack) -> Bool {
    pack.manifest.generator == Self.generatorName
      && pack.manifest.generatorVersion == Self.generatorVersion
      && pack.manifest.width == configuration.width
      && pack.manifest.height == configuration.height
      && Set(pack.animations.keys) == Set(animations)
      && pack.animations.values.allSatisfy { $0.version == version }
  }
}
