@_exported import PlaybackLifecycle

/// What a player does when the app goes to the background (after Lottie's
/// `LottieBackgroundBehavior`): the shared lifecycle policy's behaviours. `stop` goes back to
/// time 0 and stays stopped in the foreground; `pause` holds the frame and stays paused;
/// `pauseAndRestore` (the default) holds it and plays on in the foreground if it was playing;
/// `keepPlaying` keeps rendering.
public typealias PngineBackgroundBehavior = LifecyclePolicy.BackgroundBehavior

/// The playback state machine of a PNGine animation: load → ready → playing ⇄ paused, time
/// and speed, looping, the frame rate, background behaviour, the frame counter and auto-pause
/// after repeated failures.
///
/// Background, foreground and memory warnings go through ``lifecycle``, the same
/// `LifecyclePolicy` LIVA's avatar uses (package `PlaybackLifecycle`); the player turns its
/// actions into its own (a pause that the foreground restores, a stop, a purge).
///
/// Pure: it never reads a clock and performs nothing. Every input is a `mutating` method that
/// takes `now` (seconds on the display clock) and returns the ``Action``s its owner carries out
/// (load the payload, call the executor's `frame` for an animation time and render it). The
/// owner reports back with ``loaded(now:)``, ``loadFailed(_:now:)`` and
/// ``frameFinished(succeeded:error:now:)``.
///
/// Time follows the rules of rive-ios's render loop: the first tick after starting or resuming
/// advances time by 0, a tick earlier than the one before advances it by 0, and pausing keeps
/// the animation time where it is. Ticks come at the display's rate (60 or 120 Hz); frames are
/// rendered at the target rate (``Configuration/targetFrameRate``), on the ticks nearest to a
/// steady grid, so 30 fps on 60 Hz renders every second tick and on 120 Hz every fourth.
public struct PnginePlayer: Sendable {
  /// Where the player is in its life cycle.
  public enum Phase: Sendable, Hashable {
    /// Nothing loaded.
    case empty
    /// Loading the payload (``Action/load``) is under way.
    case loading
    /// Loaded; not playing (at the start, or stopped).
    case ready
    /// Rendering frames as time goes.
    case playing
    /// Holding the current frame.
    case paused
    /// The payload could not be loaded.
    case failed
  }

  /// Why the player paused, when it did on its own.
  public enum PauseReason: Sendable, Hashable {
    /// The app asked.
    case requested
    /// The app went to the background.
    case background
    /// ``Configuration/maximumConsecutiveFailures`` frames in a row failed.
    case failures
    /// Reduce Motion is on (``Configuration/reduceMotionBehavior``).
    case reducedMotion
  }

  /// What the system's Reduce Motion setting does to the animation.
  public enum ReduceMotionBehavior: Sendable, Hashable {
    /// Nothing: it keeps playing.
    case ignore
    /// It holds a still frame (the current one; the first, when it loads with the setting on)
    /// and plays on when the setting goes off.
    case showStill
  }

  /// What the owner must do.
  public enum Action: Sendable, Hashable {
    /// Load the payload (then call ``loaded(now:)`` or ``loadFailed(_:now:)``).
    case load
    /// Run the executor's `frame` for `time` (seconds of animation time) as frame number
    /// `frame` (the executor's frame counter) and render it; then call
    /// ``frameFinished(succeeded:error:now:)``.
    case render(time: Double, frame: Int)
    /// Release what was loaded.
    case unload
    /// Start the loaded animation over (after ``stop(now:)``): its executor and GPU state as
    /// at load, the executor's own frame counter at 0 — an unload and a load, without leaving
    /// ``Phase/ready``. Report a failure with ``loadFailed(_:now:)``.
    case reload
    /// The player paused on its own after `failures` failed frames in a row.
    case autoPaused(failures: Int, lastError: String?)
    /// A non-looping animation reached its end.
    case finished
    /// Memory is short: free what can be made again (``PngineExecutorPool/purge()`` drops the
    /// idle executors; the loaded animation stays).
    case purge(LifecyclePolicy.PurgeLevel)
  }

  /// The settings; changing them takes effect on the next tick.
  public var configuration: Configuration
  /// Lost devices replaced since the load (``deviceLost(error:now:)``).
  public private(set) var deviceRecoveries = 0
  /// Whether the system's Reduce Motion setting is on (``reduceMotionChanged(_:now:)``).
  public private(set) var reduceMotion = false
  /// Whether the device is in Low Power mode (``lowPowerChanged(_:now:)``).
  public private(set) var lowPower = false
  /// The rate frames are rendered at now: ``Configuration/effectiveFrameRate``, capped by
  /// ``Configuration/lowPowerFrameRate`` in Low Power mode; nil for every tick.
  public var frameRate: Double? {
    let cap = lowPower ? configuration.lowPowerFrameRate : nil
    let rates = [configuration.effectiveFrameRate, cap].compactMap { $0 }.filter { $0 > 0 }
    return rates.min()
  }
  /// The life-cycle phase.
  public private(set) var phase = Phase.empty
  /// Why the player is paused, when it is.
  public private(set) var pauseReason: PauseReason?
  /// Animation time, in seconds.
  public private(set) var time: Double = 0
  /// Frames rendered since the start (or the last stop); the next frame's number.
  public private(set) var frameCounter = 0
  /// Passes played to their end since the start (``LoopMode/repeat(_:)``, ``LoopMode/loop``).
  public private(set) var completedPasses = 0
  /// Whether time runs backwards (the second half of an ``LoopMode/autoReverse`` pass).
  public private(set) var isReversing = false
  /// Where playback is, from 0 to 1: time over ``Configuration/duration``; nil without one.
  public var progress: Double? {
    guard let duration = configuration.duration, duration > 0 else { return nil }
    return min(1, max(0, time / duration))
  }
  /// Failed frames in a row.
  public private(set) var consecutiveFailures = 0
  /// Whether the app is in the background.
  public private(set) var inBackground = false
  /// The shared lifecycle policy, fed the app's pauses and plays, background, foreground and
  /// memory warnings. Its background behaviour is ``Configuration/backgroundBehavior``; it
  /// has no grace period (there is no connection to close).
  public private(set) var lifecycle = LifecyclePolicy(
    configuration: .init(backgroundBehavior: .pauseAndRestore, backgroundGrace: nil))

  private var lastTick: Double?
  private var nextFrameDue: Double?
  private var frameInFlight = false
  private var playAfterLoad = false
  private var restoreInForeground = false

  /// A player with `configuration`, nothing loaded.
  public init(configuration: Configuration = Configuration()) {
    self.configuration = configuration
  }

  // MARK: Life cycle

  /// Asks for the payload to be loaded. Loading twice is harmless: while loading or once
  /// loaded, nothing more is asked.
  public mutating func load(now: Double) -> [Action] {
    switch phase {
    case .empty, .failed:
      phase = .loading
      playAfterLoad = configuration.autoplay
      return [.load]
    case .loading, .ready, .playing, .paused:
      return []
    }
  }

  /// The payload is loaded: ready, and playing if autoplay (or ``play(now:)``) asked; with
  /// Reduce Motion on, its first frame is rendered and held instead.
  public mutating func loaded(now: Double) -> [Action] {
    guard phase == .loading else { return [] }
    phase = .ready
    resetTime()
    deviceRecoveries = 0
    guard playAfterLoad else { return [] }
    _ = play(now: now)
    if holdsStill {
      pause(.reducedMotion)
      return [.render(time: time, frame: frameCounter)]
    }
    return []
  }

  // MARK: System settings

  private var holdsStill: Bool {
    reduceMotion && configuration.reduceMotionBehavior == .showStill
  }

  /// The system's Reduce Motion setting changed: on, a playing animation holds its frame
  /// (``PauseReason/reducedMotion``); off, it plays on (a pause of the app's own stays).
  public mutating func reduceMotionChanged(_ on: Bool, now: Double) -> [Action] {
    reduceMotion = on
    if holdsStill, phase == .playing {
      pause(.reducedMotion)
    } else if !on, phase == .paused, pauseReason == .reducedMotion {
      return play(now: now)
    }
    return []
  }

  /// Low Power mode changed: the frame rate follows (``frameRate``) from the next tick.
  public mutating func lowPowerChanged(_ on: Bool, now: Double) -> [Action] {
    lowPower = on
    nextFrameDue = nil
    return []
  }

  /// The payload could not be loaded (or reloaded, after a ``Action/reload``).
  public mutating func loadFailed(_ message: String, now: Double) -> [Action] {
    guard phase != .empty, phase != .failed else { return [] }
    phase = .failed
    return []
  }

  /// Releases the payload; ``load(now:)`` may follow.
  public mutating func unload(now: Double) -> [Action] {
    guard phase != .empty else { return [] }
    let wasLoaded = phase != .failed && phase != .loading
    phase = .empty
    pauseReason = nil
    resetTime()
    return wasLoaded ? [.unload] : []
  }

  // MARK: Playback

  /// Plays from the current time (a play request while loading plays once loaded).
  public mutating func play(now: Double) -> [Action] {
    switch phase {
    case .loading:
      playAfterLoad = true
      return []
    case .ready, .paused:
      _ = lifecycle.resume(now: now)  // the app's own pause ends; the player plays now
      restoreInForeground = false
      phase = .playing
      pauseReason = nil
      consecutiveFailures = 0
      lastTick = nil  // the first tick advances time by 0
      nextFrameDue = nil
      return []
    case .empty, .failed, .playing:
      return []
    }
  }

  /// Holds the current frame.
  public mutating func pause(now: Double) -> [Action] {
    if phase == .playing || phase == .paused { _ = lifecycle.pause(now: now) }
    pause(.requested)
    return []
  }

  /// Stops: back to time 0 and frame 0, ready to play again; a ``Action/reload`` starts the
  /// executor's state over too once frames were rendered (a simulation such as boids follows
  /// the executor's own frame counter, not the player's time).
  public mutating func stop(now: Double) -> [Action] {
    switch phase {
    case .playing, .paused, .ready:
      let rendered = frameCounter > 0 || time > 0
      if phase != .ready { phase = .ready }
      pauseReason = nil
      resetTime()
      return rendered ? [.reload] : []
    case .loading:
      playAfterLoad = false
    case .empty, .failed:
      break
    }
    return []
  }

  /// Jumps to `progress` (0 to 1, clamped) of the animation's ``Configuration/duration``;
  /// nothing without one.
  public mutating func seek(toProgress progress: Double, now: Double) -> [Action] {
    guard let duration = configuration.duration, duration > 0 else { return [] }
    return seek(to: min(1, max(0, progress)) * duration, now: now)
  }

  /// Jumps to animation time `time` (clamped into the animation); the next tick renders it.
  public mutating func seek(to time: Double, now: Double) -> [Action] {
    self.time = wrapped(max(0, time))
    nextFrameDue = nil
    if phase == .ready || phase == .paused {
      return [.render(time: self.time, frame: frameCounter)]
    }
    return []
  }

  // MARK: Display ticks

  /// A display tick at `now`: advances time while playing and says when a frame is due.
  /// At most one frame is in flight: a tick while the previous frame has not finished renders
  /// nothing (the frame is skipped, not queued).
  public mutating func tick(now: Double) -> [Action] {
    guard phase == .playing else {
      lastTick = nil
      return []
    }
    let delta = lastTick.map { max(0, now - $0) } ?? 0
    lastTick = now
    time += (isReversing ? -1 : 1) * delta * max(0, configuration.speed)
    var actions: [Action] = []
    if let duration = configuration.duration, duration > 0, time >= duration || time < 0 {
      if passEnded(duration: duration) {
        phase = .ready
        actions.append(.finished)
        actions.append(.render(time: time, frame: frameCounter))
        frameInFlight = true
        return actions
      }
    }
    guard !frameInFlight, isFrameDue(now) else { return actions }
    frameInFlight = true
    actions.append(.render(time: time, frame: frameCounter))
    return actions
  }

  /// The frame asked for by the last ``Action/render(time:frame:)`` found the GPU device lost
  /// (destroyed, reset, its driver gone). While ``Configuration/maximumDeviceRecoveries``
  /// allows, a ``Action/reload`` makes the animation again on a new device and playback goes
  /// on from the same time (the executor's own state starts over); after that, the player
  /// pauses (``PauseReason/failures``).
  public mutating func deviceLost(error: String, now: Double) -> [Action] {
    frameInFlight = false
    frameCounter += 1
    if deviceRecoveries < configuration.maximumDeviceRecoveries {
      deviceRecoveries += 1
      nextFrameDue = nil
      return [.reload]
    }
    return pauseOnFailure(error)
  }

  /// The frame asked for by the last ``Action/render(time:frame:)`` did not finish on the GPU
  /// within its time (``PngineError/Code/gpuTimeout``): the player pauses at once
  /// (``PauseReason/failures``), with no retry and no reload, since the same frame would ask
  /// for the same work again.
  public mutating func frameTimedOut(error: String, now: Double) -> [Action] {
    frameInFlight = false
    frameCounter += 1
    return pauseOnFailure(error)
  }

  /// A failure no retry mends: one more failure counted, and a playing player pauses.
  private mutating func pauseOnFailure(_ error: String) -> [Action] {
    guard phase == .playing else { return [] }
    consecutiveFailures += 1
    pause(.failures)
    return [.autoPaused(failures: consecutiveFailures, lastError: error)]
  }

  /// The frame asked for by the last ``Action/render(time:frame:)`` finished.
  public mutating func frameFinished(succeeded: Bool, error: String? = nil, now: Double)
    -> [Action]
  {
    frameInFlight = false
    if succeeded {
      consecutiveFailures = 0
      frameCounter += 1
      return []
    }
    consecutiveFailures += 1
    frameCounter += 1
    if let limit = configuration.maximumConsecutiveFailures, consecutiveFailures >= limit,
      phase == .playing
    {
      pause(.failures)
      return [.autoPaused(failures: consecutiveFailures, lastError: error)]
    }
    return []
  }

  // MARK: Background and memory

  /// The app went to the background: ``Configuration/backgroundBehavior`` decides, through
  /// ``lifecycle``.
  public mutating func enterBackground(now: Double) -> [Action] {
    guard !inBackground else { return [] }
    inBackground = true
    lifecycle.configuration.backgroundBehavior = configuration.backgroundBehavior
    return apply(lifecycle.enterBackground(now: now), now: now)
  }

  /// The app is in the foreground again: plays on under `pauseAndRestore` if it was playing.
  public mutating func enterForeground(now: Double) -> [Action] {
    guard inBackground else { return [] }
    inBackground = false
    return apply(lifecycle.enterForeground(now: now), now: now)
  }

  /// The system is short of memory: a ``Action/purge(_:)`` at the policy's level.
  public mutating func memoryWarning(now: Double) -> [Action] {
    apply(lifecycle.memoryWarning(now: now), now: now)
  }

  /// Carries the policy's actions out on the player.
  private mutating func apply(_ actions: [LifecyclePolicy.Action], now: Double) -> [Action] {
    var out: [Action] = []
    for action in actions {
      switch action {
      case .pause:
        // Only what is playing (or about to) is restored later.
        if phase == .playing {
          pause(.background)
          restoreInForeground = true
        } else if phase == .loading, playAfterLoad {
          playAfterLoad = false
          restoreInForeground = true
        }
      case .resume:
        guard restoreInForeground else { continue }
        restoreInForeground = false
        if phase == .loading {
          playAfterLoad = true
        } else if phase == .paused, pauseReason == .background {
          out += play(now: now)
        }
      case .stop:
        restoreInForeground = false
        out += stop(now: now)
      case .purge(let level):
        out.append(.purge(level))
      case .disconnect, .reconnect, .refreshOutputLatency, .activateAudioSession,
        .deactivateAudioSession:
        break  // no connection, no audio
      }
    }
    return out
  }

  // MARK: Internals

  private mutating func pause(_ reason: PauseReason) {
    guard phase == .playing else { return }
    phase = .paused
    pauseReason = reason
    lastTick = nil
  }

  /// Time ran past an end of the animation: the loop mode says where it lands. Returns whether
  /// playback finished (time is then at the end).
  private mutating func passEnded(duration: Double) -> Bool {
    let end = configuration.loopMode.position(
      after: time, duration: duration, passes: completedPasses, reversing: isReversing)
    time = end.time
    completedPasses = end.passes
    isReversing = end.reversing
    return end.finished
  }

  private mutating func resetTime() {
    completedPasses = 0
    isReversing = false
    time = 0
    frameCounter = 0
    consecutiveFailures = 0
    lastTick = nil
    nextFrameDue = nil
    frameInFlight = false
  }

  private func wrapped(_ time: Double) -> Double {
    guard let duration = configuration.duration, duration > 0, time >= duration else {
      return time
    }
    return configuration.loopMode == .loop
      ? time.truncatingRemainder(dividingBy: duration) : duration
  }

  /// Whether a frame is due at `now` at the effective rate: on a steady grid of
  /// `1 / rate` from the first frame, a tick a little early (a quarter period, at most 4 ms)
  /// counts as on time, and after a stall the grid starts again from the tick instead of
  /// rendering a burst.
  private mutating func isFrameDue(_ now: Double) -> Bool {
    guard let rate = frameRate else { return true }
    let period = 1 / rate
    guard let due = nextFrameDue else {
      nextFrameDue = now + period
      return true
    }
    let tolerance = min(0.004, period / 4)
    guard now >= due - tolerance else { return false }
    nextFrameDue = now - due > period ? now + period : due + period
    return true
  }
}
