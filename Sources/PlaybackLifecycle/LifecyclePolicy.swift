/// What the app's life cycle does to something playing — a LIVA avatar, a PNGine animation:
/// background and foreground, audio interruptions, audio route changes and memory pressure, as
/// a pure state machine both products use. The Apple shells observe the notifications
/// (`UIApplication`, `AVAudioSession`) and forward them here with the time; the ``Action``s say
/// what to do, and each product carries them out in its own terms (a purge level, for example,
/// becomes LIVA's purge steps or PngineKit's executor pool).
///
/// Playback is paused for as long as any reason to pause holds (the app asked, the app is in the
/// background, an interruption, the headphones were unplugged) and resumed when none is left,
/// except where the platform's rules say the user must resume (an interruption that ends
/// without "should resume", a route lost): those become the app's pause.
public struct LifecyclePolicy: Sendable {
  /// Why playback is paused.
  public enum PauseReason: Sendable, Hashable, CaseIterable {
    /// The app (or the user) paused.
    case app
    /// The app is in the background.
    case background
    /// The system interrupted the audio (a call, an alarm, another app).
    case interruption
  }

  /// How the route changed (`AVAudioSession.RouteChangeReason`, reduced).
  public enum RouteChange: Sendable, Hashable {
    /// The device in use went away (headphones unplugged, Bluetooth out of range): pause, as
    /// Apple's guidelines ask.
    case deviceLost
    /// A new device (headphones plugged in): keep playing, with its latency.
    case deviceAdded
    /// Anything else (category, override): keep playing; the latency may have changed.
    case other
  }

  /// How much to free under memory pressure.
  public enum PurgeLevel: Sendable, Hashable, CaseIterable {
    /// In the foreground: what can be brought back without a visible hold.
    case light
    /// In the background: everything but what the first frame back needs.
    case deep
  }

  /// What going to the background does (Lottie's `LottieBackgroundBehavior`, plus playing on).
  public enum BackgroundBehavior: Sendable, Hashable, CaseIterable {
    /// Keeps playing (an app with background audio).
    case keepPlaying
    /// Stops (back to the start) and stays stopped in the foreground.
    case stop
    /// Pauses and stays paused in the foreground, until the app resumes.
    case pause
    /// Pauses and plays on in the foreground (unless something else still holds it).
    case pauseAndRestore
  }

  /// What the owner must do.
  public enum Action: Sendable, Hashable {
    /// Pause picture and sound together.
    case pause
    /// Resume picture and sound together.
    case resume
    /// Stop and go back to the start (``BackgroundBehavior/stop``); playing again is the
    /// app's call.
    case stop
    /// Close the connection (background for longer than the grace period).
    case disconnect
    /// Connect again (back in the foreground after a policy disconnect).
    case reconnect
    /// Free memory, this much.
    case purge(PurgeLevel)
    /// Read the output latency again (a new audio route).
    case refreshOutputLatency
  }

  /// The policy's settings.
  public struct Configuration: Sendable, Hashable {
    /// Seconds in the background before the connection is closed; nil keeps it open (and a
    /// product without a connection sets nil).
    public var backgroundGrace: Double? = 30
    /// What going to the background does (default ``BackgroundBehavior/pauseAndRestore``).
    public var backgroundBehavior = BackgroundBehavior.pauseAndRestore

    /// Whether to pause in the background: false is ``BackgroundBehavior/keepPlaying``, true
    /// ``BackgroundBehavior/pauseAndRestore``.
    public var pausesInBackground: Bool {
      get { backgroundBehavior != .keepPlaying }
      set { backgroundBehavior = newValue ? .pauseAndRestore : .keepPlaying }
    }

    /// The defaults: pause in the background and restore in the foreground, disconnect after
    /// 30 s there.
    public init() {}

    /// Settings with `backgroundBehavior` and `backgroundGrace`.
    public init(backgroundBehavior: BackgroundBehavior, backgroundGrace: Double?) {
      self.backgroundBehavior = backgroundBehavior
      self.backgroundGrace = backgroundGrace
    }
  }

  /// The settings.
  public var configuration: Configuration
  /// The reasons playback is paused now.
  public private(set) var pauseReasons: Set<PauseReason> = []
  /// When the app went to the background, while it is there.
  public private(set) var backgroundSince: Double?
  /// Whether the policy closed the connection (and will open it again in the foreground).
  public private(set) var disconnected = false

  /// A policy for an app in the foreground, playing.
  public init(configuration: Configuration = Configuration()) {
    self.configuration = configuration
  }

  /// Whether playback is paused.
  public var isPaused: Bool { !pauseReasons.isEmpty }

  // MARK: The app

  /// The app paused playback.
  public mutating func pause(now: Double) -> [Action] { add(.app) }

  /// The app resumed playback: its own pause ends (the others still hold).
  public mutating func resume(now: Double) -> [Action] { remove(.app) }

  // MARK: Background

  /// The app went to the background: ``Configuration/backgroundBehavior`` decides.
  public mutating func enterBackground(now: Double) -> [Action] {
    guard backgroundSince == nil else { return [] }
    backgroundSince = now
    switch configuration.backgroundBehavior {
    case .keepPlaying:
      return []
    case .pauseAndRestore:
      return add(.background)
    case .pause:
      return add(.app)
    case .stop:
      pauseReasons.insert(.app)
      return [.stop]
    }
  }

  /// The app came back to the foreground.
  public mutating func enterForeground(now: Double) -> [Action] {
    guard backgroundSince != nil else { return [] }
    backgroundSince = nil
    var actions: [Action] = []
    if disconnected {
      disconnected = false
      actions.append(.reconnect)
    }
    return actions + remove(.background)
  }

  /// Time passes (call it on a timer in the background, e.g. once a second).
  public mutating func tick(now: Double) -> [Action] {
    guard let since = backgroundSince, let grace = configuration.backgroundGrace, !disconnected,
      now - since >= grace
    else { return [] }
    disconnected = true
    return [.disconnect]
  }

  // MARK: Audio session

  /// The system interrupted the audio.
  public mutating func interruptionBegan(now: Double) -> [Action] { add(.interruption) }

  /// The interruption ended; `shouldResume` is the system's hint. Without it, playback stays
  /// paused until the app resumes it.
  public mutating func interruptionEnded(shouldResume: Bool, now: Double) -> [Action] {
    guard pauseReasons.contains(.interruption) else { return [] }
    if !shouldResume { pauseReasons.insert(.app) }
    return remove(.interruption)
  }

  /// The audio route changed.
  public mutating func routeChanged(_ change: RouteChange, now: Double) -> [Action] {
    switch change {
    case .deviceLost:
      return [.refreshOutputLatency] + add(.app)
    case .deviceAdded, .other:
      return [.refreshOutputLatency]
    }
  }

  // MARK: Memory

  /// The system is short of memory: a ``PurgeLevel/light`` purge in the foreground, a
  /// ``PurgeLevel/deep`` one in the background.
  public mutating func memoryWarning(now: Double) -> [Action] {
    [.purge(backgroundSince != nil ? .deep : .light)]
  }

  // MARK: Internals

  private mutating func add(_ reason: PauseReason) -> [Action] {
    let wasPaused = isPaused
    pauseReasons.insert(reason)
    return wasPaused ? [] : [.pause]
  }

  private mutating func remove(_ reason: PauseReason) -> [Action] {
    guard pauseReasons.remove(reason) != nil else { return [] }
    return isPaused ? [] : [.resume]
  }
}
