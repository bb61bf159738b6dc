import Foundation
import LIVAProtocol

// BaseFrameStore: the manifest against the cache: what to fetch, cache paths and names.
extension BaseFrameStore {
  /// Compares the server's `base_animations_manifest`, as LIVAProtocol decodes it, with the
  /// cache: what is missing or stale, in priority order. A cached copy is stale when its
  /// version or frame count differs; a manifest without a version trusts a cached copy of the
  /// same frame count that was stored without one.
  public func plan(for manifest: [AnimationName: BaseAnimationInfo]) -> FetchPlan {
    plan(manifest)
  }

  /// Compares a manifest keyed by raw names with the cache: what is missing or stale, in
  /// priority order, and which names were refused (invalid names never reach the disk).
  public func plan(for manifest: [String: BaseAnimationInfo]) -> FetchPlan {
    var rejected: [String] = []
    var valid: [AnimationName: BaseAnimationInfo] = [:]
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

  func plan(_ manifest: [AnimationName: BaseAnimationInfo]) -> FetchPlan {
    var rejected: [String] = []
    var wanted: [AnimationName] = []
    state.withLock { state in
      for (name, entry) in manifest {
        guard (1...Self.maximumFrameCount).contains(entry.frameCount) else {
          rejected.append(name.rawValue)
          continue
        }
        let cached = state.animations[name]?.current
        if cached?.version != (entry.version ?? "") || cached?.frameCount != entry.frameCount {
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
}
