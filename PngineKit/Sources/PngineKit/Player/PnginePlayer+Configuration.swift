extension PnginePlayer {
  /// The player's settings; a documented value type with defaults.
  public struct Configuration: Sendable, Hashable {
    /// Animation seconds per display second (0.5 is half speed). Negative values count as 0.
    public var speed: Double = 1
    /// The animation's length in seconds, when it has one; nil plays forever.
    public var duration: Double?
    /// What happens at the end of ``duration`` (default ``LoopMode/loop``).
    public var loopMode = LoopMode.loop
    /// Whether playback goes on forever (``LoopMode/loop`` or ``LoopMode/autoReverse``);
    /// setting it picks ``LoopMode/loop`` or ``LoopMode/playOnce``.
    public var loops: Bool {
      get { loopMode == .loop || loopMode == .autoReverse }
      set { loopMode = newValue ? .loop : .playOnce }
    }
    /// The rate frames are rendered at; nil renders on every display tick.
    public var targetFrameRate: Double? = 60
    /// The animation's own frame rate, when its payload declares one.
    public var animationFrameRate: Double?
    /// Whether to render no faster than ``animationFrameRate`` either.
    public var respectsAnimationFrameRate = true
    /// What going to the background does.
    public var backgroundBehavior = PngineBackgroundBehavior.pauseAndRestore
    /// Failed frames in a row after which the player pauses on its own; nil never pauses.
    public var maximumConsecutiveFailures: Int? = 5
    /// Whether ``loaded(now:)`` starts playing at once.
    public var autoplay = true
    /// What Reduce Motion does (default ``ReduceMotionBehavior/showStill``).
    public var reduceMotionBehavior = ReduceMotionBehavior.showStill
    /// Lost GPU devices replaced per load (each a new device, the animation loaded on it, and
    /// playback going on at the same time); the next loss pauses (default 3).
    public var maximumDeviceRecoveries = 3
    /// The highest frame rate in Low Power mode (default 30); nil changes nothing.
    public var lowPowerFrameRate: Double? = 30
    /// What the animation's GPU commands are checked against, and how long one frame's GPU
    /// work may take (``GPULimits/submitTimeout``): WebGPU's defaults and the default budgets.
    public var gpuLimits = GPULimits()

    /// The defaults: speed 1, looping, 60 fps at most, pause and restore in the background,
    /// auto-pause after 5 failed frames in a row, autoplay.
    public init() {}

    /// The rate frames are rendered at: the target, capped by the animation's own rate when
    /// it is respected; nil for every tick.
    public var effectiveFrameRate: Double? {
      let rates = [targetFrameRate, respectsAnimationFrameRate ? animationFrameRate : nil]
        .compactMap { $0 }.filter { $0 > 0 }
      return rates.min()
    }
  }
}
