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
    /// Activate the audio session (and start the audio engine on it) before audio plays.
    case activateAudioSession
    /// Stop the audio engine and deactivate the audio session, telling other apps (they stop
    /// ducking and may resume).
    case deactivateAudioSession
  }

  /// The policy's settings.
  public struct Configuration: Sendable, Hashable {
    /// Seconds in the background before the connection is closed; nil keeps it open (and a
    /// product without a connection sets nil).
    public var backgroundGrace: Double? = 30
    /// What going to the background does (default ``BackgroundBehavior/pauseAndRestore``).
    public var backgroundBehavior = BackgroundBehavior.pauseAndRestore
    /// Seconds of silence after which the audio session is let go (default 2: the gap between
    /// two messages keeps it); nil keeps it active once activated.
    public var audioSessionLinger: Double? = 2

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
  /// Whether the audio session is active (as far as this policy activated it).
  public private(set) var audioSessionActive = false
  /// Since when no audio has been needed, while the session is active.
  public private(set) var audioIdleSince: Double?

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

  /// The app came back to the foreground. Suspended past the grace period (a suspended app's
  /// timer never fires, so no ``tick(now:)`` closed the connection), the connection is stale:
  /// it is closed and opened again.
  public mutating func enterForeground(now: Double) -> [Action] {
    guard let since = backgroundSince else { return [] }
    backgroundSince = nil
    var actions: [Action] = []
    if !disconnected, let grace = configuration.backgroundGrace, now - since >= grace {
      actions.append(.disconnect)
      disconnected = true
    }
    if disconnected {
      disconnected = false
      actions.append(.reconnect)
    }
    return actions + remove(.background)
  }

  /// Time passes (call it on a timer, e.g. once a second): the background grace period, the
  /// audio session's linger.
  public mutating func tick(now: Double) -> [Action] {
    var actions: [Action] = []
    if let idle = audioIdleSince, let linger = configuration.audioSessionLinger,
      now - idle >= linger
    {
      audioIdleSince = nil
      audioSessionActive = false
      actions.append(.deactivateAudioSession)
    }
    if let since = backgroundSince, let grace = configuration.backgroundGrace, !disconnected,
      now - since >= grace
    {
      disconnected = true
      actions.append(.disconnect)
    }
    return actions
  }

  // MARK: Audio session

  /// Audio is about to play (speech started arriving): the session must be active.
  public mutating func audioNeeded(now: Double) -> [Action] {
    audioIdleSince = nil
    guard !audioSessionActive else { return [] }
    audioSessionActive = true
    return [.activateAudioSession]
  }

  /// Nothing plays any more: after ``Configuration/audioSessionLinger`` of this, a
  /// ``tick(now:)`` lets the session go.
  public mutating func audioIdle(now: Double) -> [Action] {
    if audioSessionActive, audioIdleSince == nil { audioIdleSince = now }
    return []
  }

  // MARK: Interruptions and routes

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
