#if canImport(UIKit) && canImport(AVFoundation)
  import AVFoundation
  import Foundation
  import LIVA
  import LIVAPlatform
  import QuartzCore
  import UIKit

  /// Observes the app's life cycle, the audio session and the client's speech, feeds
  /// ``LIVAPlatform/LifecyclePolicy`` and carries its actions out on a client (and its audio
  /// output). Holds no decision of its own.
  ///
  /// With an audio output it also owns the audio session's activity: active from the moment a
  /// message starts speaking, let go (`notifyOthersOnDeactivation`, so other apps stop ducking)
  /// after ``LIVAPlatform/LifecyclePolicy/Configuration/audioSessionLinger`` of silence.
  @MainActor
  public final class LifecycleObserver {
    private var policy: LifecyclePolicy
    private let client: LIVAClient
    private let audio: AudioEngineOutput?
    private var tokens: [any NSObjectProtocol] = []
    private var timer: Timer?
    private var speech: Task<Void, Never>?

    /// Starts observing for `client` (and `audio`, for interruptions and route changes).
    public init(
      client: LIVAClient, audio: AudioEngineOutput?,
      configuration: LifecyclePolicy.Configuration = .init()
    ) {
      self.client = client
      self.audio = audio
      policy = LifecyclePolicy(configuration: configuration)
      let center = NotificationCenter.default
      // A notification is not Sendable: what the main actor needs of it (`read`, on the
      // posting side) crosses as a Sendable value, never the notification itself.
      func observe<Info: Sendable>(
        _ name: Notification.Name, reading read: @escaping @Sendable (Notification) -> Info,
        _ body: @escaping @MainActor (Info) -> Void
      ) {
        tokens.append(
          center.addObserver(forName: name, object: nil, queue: .main) { note in
            let info = read(note)
            MainActor.assumeIsolated { body(info) }
          })
      }
      func observe(_ name: Notification.Name, _ body: @escaping @MainActor () -> Void) {
        observe(name, reading: { _ in () }, { _ in body() })
      }
      observe(UIApplication.didEnterBackgroundNotification) { [weak self] in
        self?.apply { $0.enterBackground(now: $1) }
      }
      observe(UIApplication.willEnterForegroundNotification) { [weak self] in
        // Suspended, no tick ran: the policy reads the time spent away here.
        self?.apply { $0.enterForeground(now: $1) }
      }
      observe(UIApplication.didReceiveMemoryWarningNotification) { [weak self] in
        self?.apply { $0.memoryWarning(now: $1) }
      }
      observe(AVAudioSession.interruptionNotification, reading: Self.interruption) {
        [weak self] info in
        guard let raw = info.type, let type = AVAudioSession.InterruptionType(rawValue: raw)
        else { return }
        let now = CACurrentMediaTime()
        switch type {
        case .began:
          self?.audio?.interruptionBegan(at: now)
          self?.apply { $0.interruptionBegan(now: $1) }
        case .ended:
          let options = info.options.map(AVAudioSession.InterruptionOptions.init(rawValue:))
          // The engine restarting would activate the session implicitly; it is activated
          // here, as the policy has it, before the engine starts.
          if self?.policy.audioSessionActive == true {
            try? AVAudioSession.sharedInstance().setActive(true)
          }
          self?.audio?.interruptionEnded(at: now)
          self?.apply {
            $0.interruptionEnded(shouldResume: options?.contains(.shouldResume) ?? false, now: $1)
          }
        @unknown default:
          break
        }
      }
      observe(AVAudioSession.routeChangeNotification, reading: Self.routeChangeReason) {
        [weak self] raw in
        let change: LifecyclePolicy.RouteChange =
          switch raw.flatMap(AVAudioSession.RouteChangeReason.init(rawValue:)) {
          case .oldDeviceUnavailable: .deviceLost
          case .newDeviceAvailable: .deviceAdded
          default: .other
          }
        self?.apply { $0.routeChanged(change, now: $1) }
      }
      observe(AVAudioSession.mediaServicesWereResetNotification) { [weak self] in
        // Every audio object is gone: the session is set up again and the engine rebuilt.
        try? AudioSessionSetup.configure()
        if self?.policy.audioSessionActive == true {
          try? AVAudioSession.sharedInstance().setActive(true)
        }
        self?.audio?.mediaServicesWereReset(at: CACurrentMediaTime())
      }
      startTimer()
      if audio != nil {
        // The audio output started its engine (which activates the session): the session is
        // let go after the linger unless speech comes first.
        apply { $0.audioNeeded(now: $1) + $0.audioIdle(now: $1) }
        let events = client.events
        speech = Task { @MainActor [weak self] in
          for await event in events {
            switch event {
            case .speakingStarted: self?.apply { $0.audioNeeded(now: $1) }
            case .speakingEnded: self?.apply { $0.audioIdle(now: $1) }
            default: break
            }
          }
        }
      }
    }

    deinit {
      speech?.cancel()
    }

    /// An interruption's type and options, read where the notification is posted.
    private nonisolated static func interruption(_ note: Notification) -> (
      type: UInt?, options: UInt?
    ) {
      (
        note.userInfo?[AVAudioSessionInterruptionTypeKey] as? UInt,
        note.userInfo?[AVAudioSessionInterruptionOptionKey] as? UInt
      )
    }

    /// A route change's reason, read where the notification is posted.
    private nonisolated static func routeChangeReason(_ note: Notification) -> UInt? {
      note.userInfo?[AVAudioSessionRouteChangeReasonKey] as? UInt
    }

    /// Stops observing.
    public func invalidate() {
      tokens.forEach(NotificationCenter.default.removeObserver)
      tokens = []
      timer?.invalidate()
      timer = nil
      speech?.cancel()
      speech = nil
    }

    /// Time passes, once a second, in the foreground and (while the app runs there) in the
    /// background: the background grace period, the audio session's linger.
    private func startTimer() {
      timer?.invalidate()
      let timer = Timer(timeInterval: 1, repeats: true) { [weak self] timer in
        // The observer went without invalidate(): the timer goes with it. Decided before the
        // hop to the main actor, so the timer (not Sendable) never crosses into it.
        guard let self else { return timer.invalidate() }
        MainActor.assumeIsolated { self.apply { $0.tick(now: $1) } }
      }
      timer.tolerance = 0.25
      RunLoop.main.add(timer, forMode: .common)
      self.timer = timer
    }

    private func apply(_ input: (inout LifecyclePolicy, Double) -> [LifecyclePolicy.Action]) {
      let now = CACurrentMediaTime()
      for action in input(&policy, now) {
        switch action {
        case .pause: client.pause()
        case .resume: client.resume()
        case .disconnect: Task { [client] in await client.disconnect() }
        case .reconnect: Task { [client] in await client.connect() }
        case .purge(let level): client.player.purgeMemory(level)
        case .stop: client.pause()
        case .refreshOutputLatency: audio?.setOutputLatency(AudioSessionSetup.outputLatency)
        case .activateAudioSession:
          try? AVAudioSession.sharedInstance().setActive(true)
          audio?.setOutputLatency(AudioSessionSetup.outputLatency)
          audio?.sessionDidActivate(at: now)
        case .deactivateAudioSession:
          audio?.sessionWillDeactivate(at: now)
          try? AVAudioSession.sharedInstance().setActive(
            false, options: .notifyOthersOnDeactivation)
        }
      }
    }
  }
#endif
