import LIVAProtocol

/// The client's waits on the backend, each with an end: the manifest asked for on connecting,
/// and every base-animation download. A pure value the client owns; time is an argument (the
/// display clock), actions are returned.
///
/// - The manifest: asked for again after ``manifestTimeout`` without it, at most
///   ``manifestAsks`` times in all; then given up (reported) until the next connection.
/// - A download: failed when ``downloadTimeout`` passes with none of its events (its total,
///   a frame, its end); the client's retry policy then asks for it again or gives it up.
///   Before, a download whose events stopped stayed "downloading" for ever and was never asked
///   for again on that connection.
struct ClientWatchdogs {
  /// Seconds without the manifest before asking again. Default 10.
  var manifestTimeout: Double = 10
  /// How many times in all the manifest is asked for on one connection. Default 3.
  var manifestAsks = 3
  /// Seconds without any event of a download before it fails. Default 15.
  var downloadTimeout: Double = 15

  /// What the client does.
  enum Action: Equatable {
    /// Ask for the manifest again (`attempt` is 2, 3…).
    case askManifest(attempt: Int)
    /// The manifest did not come after every ask: reported; the next connection asks again.
    case manifestGivenUp(asks: Int)
    /// A download got no event for ``downloadTimeout``: it failed.
    case downloadStalled(AnimationName)
  }

  /// Waiting for the manifest: since when (nil: stamped at the next tick), and asks so far.
  private var manifest: (since: Double?, asks: Int)?
  /// Downloads in flight and their last event (nil: stamped at the next tick).
  private var downloads: [AnimationName: Double?] = [:]

  /// Whether the manifest is awaited.
  var awaitingManifest: Bool { manifest != nil }

  /// A connection: the manifest is asked for now; what was in flight is gone with the old one.
  mutating func connected(at now: Double?) {
    manifest = (now, 1)
    downloads = [:]
  }

  /// The connection is gone (or the app disconnected): nothing is awaited.
  mutating func disconnected() {
    manifest = nil
    downloads = [:]
  }

  mutating func manifestReceived() { manifest = nil }

  /// A download was asked for, or one of its events came.
  mutating func downloadActive(_ name: AnimationName, at now: Double?) { downloads[name] = now }

  /// A download ended (complete, or failed otherwise).
  mutating func downloadEnded(_ name: AnimationName) { downloads[name] = nil }

  /// What is overdue at `now`.
  mutating func tick(now: Double) -> [Action] {
    var actions: [Action] = []
    if let (stamp, asks) = manifest {
      let since = stamp ?? now
      if now - since < manifestTimeout {
        manifest = (since, asks)
      } else if asks < manifestAsks {
        manifest = (now, asks + 1)
        actions.append(.askManifest(attempt: asks + 1))
      } else {
        manifest = nil
        actions.append(.manifestGivenUp(asks: asks))
      }
    }
    for (name, last) in downloads.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
      guard let last else {
        downloads[name] = now
        continue
      }
      if now - last >= downloadTimeout {
        downloads[name] = nil
        actions.append(.downloadStalled(name))
      }
    }
    return actions
  }
}
