extension PnginePlayer {
  /// What happens at the end of an animation with a ``Configuration/duration`` (Lottie's
  /// `LottieLoopMode`, Rive's loop types).
  public enum LoopMode: Sendable, Hashable {
    /// Plays once and finishes at the end.
    case playOnce
    /// Wraps to 0 at the end, forever.
    case loop
    /// Plays `count` passes, then finishes at the end.
    case `repeat`(Int)
    /// Runs to the end, back to 0, and forward again, forever.
    case autoReverse
  }
}

extension PnginePlayer.LoopMode {
  /// Where playback stands once time has run past an end of an animation of `duration` (past
  /// the end, or below 0 while reversing), after `passes` complete passes: the time it lands
  /// on, the passes then, whether time now runs backwards, whether playback finished (time
  /// then at the end). A long stall may cross several ends at once.
  func position(after time: Double, duration: Double, passes: Int, reversing: Bool) -> (
    time: Double, passes: Int, reversing: Bool, finished: Bool
  ) {
    switch self {
    case .loop:
      return (
        time.truncatingRemainder(dividingBy: duration), passes + Int(time / duration), false,
        false
      )
    case .autoReverse:
      var bounced = time
      var passes = passes
      var reversing = reversing
      while bounced < 0 || bounced > duration {
        if bounced > duration {
          bounced = 2 * duration - bounced
          reversing = true
        } else {
          bounced = -bounced
          reversing = false
          passes += 1
        }
      }
      return (bounced, passes, reversing, false)
    case .repeat(let count):
      let passes = passes + Int(time / duration)
      guard passes >= count else {
        return (time.truncatingRemainder(dividingBy: duration), passes, false, false)
      }
      return (duration, count, false, true)
    case .playOnce:
      return (duration, 1, false, true)
    }
  }
}
