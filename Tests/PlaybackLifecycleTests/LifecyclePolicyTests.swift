import PlaybackLifecycle
import Testing

@Suite("LifecyclePolicy")
struct LifecyclePolicyTests {
  enum Event: Sendable {
    case pause, resume, background, foreground, tick, interruption
    case interruptionEnded(Bool)
    case route(LifecyclePolicy.RouteChange)
    case memory
    case audioNeeded, audioIdle
  }

  /// Runs `events` (with their times) and returns every action, in order.
  func run(
    _ events: [(Double, Event)], configure: (inout LifecyclePolicy.Configuration) -> Void = { _ in }
  ) -> (LifecyclePolicy, [LifecyclePolicy.Action]) {
    var configuration = LifecyclePolicy.Configuration()
    configure(&configuration)
    var policy = LifecyclePolicy(configuration: configuration)
    var actions: [LifecyclePolicy.Action] = []
    for (now, event) in events {
      switch event {
      case .pause: actions += policy.pause(now: now)
      case .resume: actions += policy.resume(now: now)
      case .background: actions += policy.enterBackground(now: now)
      case .foreground: actions += policy.enterForeground(now: now)
      case .tick: actions += policy.tick(now: now)
      case .interruption: actions += policy.interruptionBegan(now: now)
      case .interruptionEnded(let resume):
        actions += policy.interruptionEnded(shouldResume: resume, now: now)
      case .route(let change): actions += policy.routeChanged(change, now: now)
      case .memory: actions += policy.memoryWarning(now: now)
      case .audioNeeded: actions += policy.audioNeeded(now: now)
      case .audioIdle: actions += policy.audioIdle(now: now)
      }
    }
    return (policy, actions)
  }

  @Test(
    "event sequences and what they do",
    arguments: [
      // A short trip to the background: pause, then resume; the connection stays.
      ([(0, .background), (10, .tick), (12, .foreground)], [.pause, .resume], false),
      // A long one: disconnect after 30 s, reconnect and resume on return.
      (
        [(0, .background), (29, .tick), (30, .tick), (31, .tick), (40, .foreground)],
        [.pause, .disconnect, .reconnect, .resume], false
      ),
      // Paused by the app before: the foreground does not resume it.
      ([(0, .pause), (1, .background), (2, .foreground)], [.pause], true),
      // A call that ends with "should resume".
      ([(0, .interruption), (5, .interruptionEnded(true))], [.pause, .resume], false),
      // A call that ends without it: stays paused until the app resumes.
      ([(0, .interruption), (5, .interruptionEnded(false))], [.pause], true),
      (
        [(0, .interruption), (5, .interruptionEnded(false)), (6, .resume)], [.pause, .resume], false
      ),
      // A call while in the background: nothing resumes before both are over.
      (
        [(0, .background), (1, .interruption), (2, .foreground), (3, .interruptionEnded(true))],
        [.pause, .resume], false
      ),
      // Headphones unplugged: pause until the user resumes; plugged in: new latency only.
      ([(0, .route(.deviceLost))], [.refreshOutputLatency, .pause], true),
      ([(0, .route(.deviceAdded))], [.refreshOutputLatency], false),
      // An end of interruption that never began does nothing.
      ([(0, .interruptionEnded(true))], [], false),
    ] as [([(Double, Event)], [LifecyclePolicy.Action], Bool)])
  func sequences(
    events: [(Double, Event)], expected: [LifecyclePolicy.Action], pausedAtEnd: Bool
  ) {
    let (policy, actions) = run(events)
    #expect(actions == expected)
    #expect(policy.isPaused == pausedAtEnd)
  }

  @Test("background without pausing (background audio) and without a grace period")
  func configured() {
    let (policy, actions) = run([(0, .background), (3600, .tick), (3601, .foreground)]) {
      $0.pausesInBackground = false
      $0.backgroundGrace = nil
    }
    #expect(actions.isEmpty && !policy.isPaused)
  }

  @Test("memory pressure: a light purge in the foreground, a deep one in the background")
  func memory() {
    #expect(run([(0, .memory)]).1 == [.purge(.light)])
    #expect(run([(0, .background), (1, .memory)]).1 == [.pause, .purge(.deep)])
    #expect(
      run([(0, .background), (1, .foreground), (2, .memory)]).1 == [
        .pause, .resume, .purge(.light),
      ])
  }

  @Test(
    "each background behaviour, there and back",
    arguments: [
      (.keepPlaying, [], false),
      (.pauseAndRestore, [.pause, .resume], false),
      (.pause, [.pause], true),
      (.stop, [.stop], true),
    ] as [(LifecyclePolicy.BackgroundBehavior, [LifecyclePolicy.Action], Bool)])
  func behaviours(
    behaviour: LifecyclePolicy.BackgroundBehavior, expected: [LifecyclePolicy.Action],
    pausedAtEnd: Bool
  ) {
    let (policy, actions) = run([(0, .background), (5, .foreground)]) {
      $0.backgroundBehavior = behaviour
    }
    #expect(actions == expected)
    #expect(policy.isPaused == pausedAtEnd)
    // What stayed paused is the app's to resume.
    var resumed = policy
    #expect(resumed.resume(now: 6) == (pausedAtEnd ? [.resume] : []))
  }

  @Test("stop in the background while already paused still stops; resuming is the app's")
  func stopWhilePaused() {
    let (policy, actions) = run([(0, .pause), (1, .background), (2, .foreground)]) {
      $0.backgroundBehavior = .stop
    }
    #expect(actions == [.pause, .stop])
    #expect(policy.pauseReasons == [.app])
  }

  @Test(
    "suspended in the background past the grace period (no tick ran): a fresh connection on return")
  func suspendedPastGrace() {
    // The app was suspended: its timer never fired. Back after 10 min, the socket is stale.
    #expect(
      run([(0, .background), (600, .foreground)]).1 == [.pause, .disconnect, .reconnect, .resume])
    // Back within the grace period: the connection stays.
    #expect(run([(0, .background), (29, .foreground)]).1 == [.pause, .resume])
    // No grace period: never closed.
    #expect(
      run([(0, .background), (600, .foreground)]) { $0.backgroundGrace = nil }.1 == [
        .pause, .resume,
      ])
  }

  @Test(
    "the audio session: active while speech needs it, let go after the linger (others stop ducking)",
    arguments: [
      // Speech, then silence past the linger: deactivated once, on the tick after it.
      (
        [(0, .audioNeeded), (3, .audioIdle), (3.5, .tick), (5, .tick), (6, .tick)],
        [.activateAudioSession, .deactivateAudioSession]
      ),
      // The next message within the linger keeps it active: no flapping between messages.
      (
        [(0, .audioNeeded), (3, .audioIdle), (4, .audioNeeded), (5.5, .tick), (8, .audioIdle)],
        [.activateAudioSession]
      ),
      // Needed again after it was let go: activated again.
      (
        [(0, .audioNeeded), (1, .audioIdle), (3, .tick), (4, .audioNeeded)],
        [.activateAudioSession, .deactivateAudioSession, .activateAudioSession]
      ),
      // Idle without ever being needed: nothing to let go.
      ([(0, .audioIdle), (10, .tick)], []),
    ] as [([(Double, Event)], [LifecyclePolicy.Action])])
  func audioSession(events: [(Double, Event)], expected: [LifecyclePolicy.Action]) {
    #expect(run(events).1 == expected)
  }

  @Test("an audio session that is never let go (audioSessionLinger nil)")
  func audioSessionKept() {
    let (policy, actions) = run([(0, .audioNeeded), (1, .audioIdle), (100, .tick)]) {
      $0.audioSessionLinger = nil
    }
    #expect(actions == [.activateAudioSession])
    #expect(policy.audioSessionActive)
  }
}
