/// What the app's life cycle does to a playing avatar (or a PNGine animation): background and
/// foreground, audio interruptions, audio route changes and memory pressure, as a pure state
/// machine. The Apple shells observe the notifications (`UIApplication`, `AVAudioSession`) and
/// forward them here with the time; the ``Action``s say what to do.
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

  /// What to free under memory pressure, cheapest to bring back first.
  public enum PurgeStep: Sendable, Hashable, CaseIterable {
    /// Spare buffers of the frame pool (the frame on screen stays).
    case framePoolSpares
    /// Decoded base frames outside the window ahead (idle frame 0 stays).
    case decodedFramesBehind
    /// Every decoded base frame but idle frame 0; the window is decoded again on demand.
    case decodedFrames
    /// Decoded images of messages already played.
    case playedOverlays
  }

  /// What the owner must do.
  public enum Action: Sendable, Hashable {
    /// Pause picture and sound together.
    case pause
    /// Resume picture and sound together.
    case resume
    /// Close the connection (background for longer than the grace period).
    case disconnect
    /// Connect again (back in the foreground after a policy disconnect).
    case reconnect
    /// Free these, in this order.
    case purge([PurgeStep])
    /// Read the output latency again (a new audio route).
    case refreshOutputLatency
  }

  /// The policy's settings.
  public struct Configuration: Sendable, Hashable {
    /// Seconds in the background before the connection is closed; nil keeps it open.
    public var backgroundGrace: Double? = 30
    /// Whether to pause in the background (an audio app with background audio would not).
    public var pausesInBackground = true

    /// The defaults: pause in the background, disconnect after 30 s there.
    public init() {}
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

  /// The app went to the background.
  public mutating func enterBackground(now: Double) -> [Action] {
    guard backgroundSince == nil else { return [] }
    backgroundSince = now
    return configuration.pausesInBackground ? add(.background) : []
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

  /// The system is short of memory: in the foreground what can be brought back without a
  /// visible hold goes; in the background everything but idle frame 0.
  public mutating func memoryWarning(now: Double) -> [Action] {
    if backgroundSince != nil {
      return [.purge([.framePoolSpares, .playedOverlays, .decodedFrames])]
    }
    return [.purge([.framePoolSpares, .playedOverlays, .decodedFramesBehind])]
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
