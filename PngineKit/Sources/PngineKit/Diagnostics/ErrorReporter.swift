import Locking
import Logging

/// Logs errors through an injected `Logger`, de-duplicated and rate-limited.
///
/// An error with the same code, message and location is logged once in the reporter's life
/// (give each animation its own reporter: a frame that fails the same way every frame is one
/// line, not sixty a second); its repeats are counted (``repeats``). At most ``maxPerWindow``
/// distinct errors are logged per window (``window``, default 1 s of the injected clock). What
/// was held back is counted and logged as one line when the next window opens. Messages are
/// already bounded (``PngineError/maxMessageBytes``). At most ``maxRemembered`` distinct errors
/// are remembered; past that, new ones are only rate-limited. Time comes from the `now`
/// closure (nanoseconds, any origin), so tests drive it without sleeping.
public final class ErrorReporter: Sendable {
  private struct State {
    var windowStart: UInt64?
    var seen = Set<PngineError>()
    var logged = 0
    var suppressed = 0
    var repeats = 0
  }

  /// The most distinct errors remembered for de-duplication (1,000 of at most about 2 KB).
  public static let maxRemembered = 1000

  private let logger: Logger
  private let now: @Sendable () -> UInt64
  private let state = Locked(State())
  /// The length of a window, in nanoseconds.
  public let window: UInt64
  /// The most distinct errors logged per window.
  public let maxPerWindow: Int

  /// Makes a reporter.
  /// - Parameters:
  ///   - logger: where lines go; the library never bootstraps logging.
  ///   - window: the de-duplication and rate window in nanoseconds (default 1 s).
  ///   - maxPerWindow: distinct errors logged per window (default 10).
  ///   - now: the clock, in nanoseconds.
  public init(
    logger: Logger, window: UInt64 = 1_000_000_000, maxPerWindow: Int = 10,
    now: @escaping @Sendable () -> UInt64
  ) {
    self.logger = logger
    self.window = window
    self.maxPerWindow = maxPerWindow
    self.now = now
  }

  /// Errors not logged because they were logged before.
  public var repeats: Int { state.withLock { $0.repeats } }

  /// Reports `error`; returns whether it was logged (false: logged before, or over the rate).
  @discardableResult
  public func report(_ error: PngineError) -> Bool {
    let t = now()
    let (log, heldBack): (Bool, Int) = state.withLock { s in
      var heldBack = 0
      if let start = s.windowStart, t >= start, t - start < window {
        // Same window.
      } else {
        heldBack = s.suppressed
        s.suppressed = 0
        s.logged = 0
        s.windowStart = t
      }
      if s.seen.contains(error) {
        s.suppressed += 1
        s.repeats += 1
        return (false, heldBack)
      }
      guard s.logged < maxPerWindow else {
        s.suppressed += 1
        return (false, heldBack)
      }
      if s.seen.count < Self.maxRemembered { s.seen.insert(error) }
      s.logged += 1
      return (true, heldBack)
    }
    // Side effects after the lock is released.
    if heldBack > 0 {
      logger.warning("pngine: \(heldBack) repeated or excess errors were not logged")
    }
    if log {
      logger.error(
        "\(error.message)",
        metadata: [
          "code": "\(error.code)", "native": "\(error.code.nativeCode.rawValue)",
          "where": "\(error.location)",
        ])
    }
    return log
  }
}
