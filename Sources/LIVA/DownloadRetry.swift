import LIVAProtocol

/// How often and when a failed base-animation download is asked for again: a bounded number
/// of retries with exponential backoff. A failed download never costs the cached version (it
/// keeps playing); this only decides when to try for the new one again.
public struct DownloadRetryPolicy: Sendable, Hashable {
  /// Retries after the first failure; 0 never retries.
  public var maximumRetries: Int
  /// The wait before the first retry.
  public var initialDelay: Duration
  /// The longest wait.
  public var maximumDelay: Duration

  /// Creates a policy: by default 3 retries, after 1, 2 and 4 s.
  public init(
    maximumRetries: Int = 3, initialDelay: Duration = .seconds(1),
    maximumDelay: Duration = .seconds(30)
  ) {
    self.maximumRetries = maximumRetries
    self.initialDelay = initialDelay
    self.maximumDelay = maximumDelay
  }

  /// The wait before retrying after `failures` consecutive failures (1-based), or nil when
  /// the download is given up. Pure.
  public func delay(afterFailures failures: Int) -> Duration? {
    guard failures >= 1, failures <= maximumRetries else { return nil }
    var delay = initialDelay
    for _ in 1..<failures where delay < maximumDelay { delay *= 2 }
    return min(delay, maximumDelay)
  }
}

/// The consecutive failures of each animation's download and what to do after the next one:
/// a pure state machine the client holds behind its lock.
struct DownloadRetries: Sendable, Hashable {
  /// What to do after a failure.
  enum Decision: Sendable, Hashable {
    /// Ask for the animation again after this wait.
    case retry(after: Duration)
    /// Stop asking (until the next connection); the cached version, if any, stays.
    case giveUp(failures: Int)
  }

  let policy: DownloadRetryPolicy
  private(set) var failures: [AnimationName: Int] = [:]

  init(policy: DownloadRetryPolicy) {
    self.policy = policy
  }

  /// A download of `animation` failed (incomplete, refused or unwritable).
  mutating func failed(_ animation: AnimationName) -> Decision {
    let count = failures[animation, default: 0] + 1
    failures[animation] = count
    if let delay = policy.delay(afterFailures: count) { return .retry(after: delay) }
    return .giveUp(failures: count)
  }

  /// A download of `animation` completed: its count starts over.
  mutating func succeeded(_ animation: AnimationName) {
    failures[animation] = nil
  }

  /// A new connection: every animation gets the policy's retries again.
  mutating func reset() {
    failures = [:]
  }
}
