/// The client's reconnection decisions, as a pure value: what to report and how long to wait
/// after each connection ends, following a ``ReconnectionPolicy``. ``SocketIOClient`` runs a
/// connection, asks this what next, and carries it out; the random number for the jitter is an
/// argument, so every schedule is tested without a socket or a clock.
public struct ReconnectSchedule: Sendable, Hashable {
  /// What follows a connection that ended.
  public enum Step: Sendable, Hashable {
    /// Stop: the application disconnected, the server ended the session on purpose
    /// (``SocketIODisconnectReason/reconnects`` is false), reconnection is disabled, or the
    /// failure limit was reached with ``ReconnectionPolicy/continuesAfterFailureLimit`` false.
    /// `failed` is the error to report first, when the failure limit ended it.
    case stop(failed: SocketIOError?)
    /// Wait `delay`, then make attempt `attempt`; report `failed` first when this failure
    /// reached (a multiple of) the failure limit.
    case retry(attempt: Int, delay: Duration, failed: SocketIOError?)

    /// The error to report before the step, when the failure limit was reached.
    public var failed: SocketIOError? {
      switch self {
      case .stop(let failed), .retry(_, _, let failed): failed
      }
    }
  }

  /// The policy followed.
  public let policy: ReconnectionPolicy
  /// Consecutive failures: a connection whose namespace connected counts as the first failure
  /// of a new run when it drops.
  public private(set) var failures = 0

  /// A schedule with no failure yet.
  public init(policy: ReconnectionPolicy) { self.policy = policy }

  /// A connection ended for `reason`; `wasConnected` when its namespace had connected,
  /// `stopRequested` when the application asked to stop. `random` is a uniform number in
  /// `0..<1` for the jitter.
  public mutating func connectionEnded(
    reason: SocketIODisconnectReason, wasConnected: Bool, stopRequested: Bool, random: Double
  ) -> Step {
    guard !stopRequested, reason.reconnects, policy.isEnabled else { return .stop(failed: nil) }
    failures = wasConnected ? 1 : failures + 1
    var failed: SocketIOError?
    if failures >= policy.failureLimit && failures % policy.failureLimit == 0 {
      failed = SocketIOError(.reconnectFailed, "\(failures) consecutive connection failures")
      if !policy.continuesAfterFailureLimit { return .stop(failed: failed) }
    }
    return .retry(
      attempt: failures, delay: policy.delay(forAttempt: failures, random: random), failed: failed)
  }
}
