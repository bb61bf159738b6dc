#if canImport(UIKit) && canImport(AVFoundation)
  import AVFoundation
  import Foundation
  import LIVA
  import LIVAPlatform
  import QuartzCore
  import UIKit

  /// Observes the app's life cycle and the audio session, feeds
  /// ``LIVAPlatform/LifecyclePolicy`` and carries its actions out on a client (and its audio
  /// output). Holds no decision of its own.
  @MainActor
  public final class LifecycleObserver {
    private var policy: LifecyclePolicy
    private let client: LIVAClient
    private let audio: AudioEngineOutput?
    private var tokens: [any NSObjectProtocol] = []
    private var timer: Timer?

    /// Starts observing for `client` (and `audio`, for interruptions and route changes).
    public init(
      client: LIVAClient, audio: AudioEngineOutput?,
      configuration: LifecyclePolicy.Configuration = .init()
    ) {
      self.client = client
      self.audio = audio
      policy = LifecyclePolicy(configuration: configuration)
      let center = NotificationCenter.default
      func observe(_ name: Notification.Name, _ body: @escaping @MainActor (Notification) -> Void) {
        tokens.append(
          center.addObserver(forName: name, object: nil, queue: .main) { note in
            MainActor.assumeIsolated { body(note) }
          })
      }
      observe(UIApplication.didEnterBackgroundNotification) { [weak self] _ in
        self?.apply { $0.enterBackground(now: $1) }
        self?.startTimer()
      }
      observe(UIApplication.willEnterForegroundNotification) { [weak self] _ in
        self?.timer?.invalidate()
        self?.apply { $0.enterForeground(now: $1) }
      }
      observe(UIApplication.didReceiveMemoryWarningNotification) { [weak self] _ in
        self?.apply { $0.memoryWarning(now: $1) }
      }
      observe(AVAudioSession.interruptionNotification) { [weak self] note in
        guard let info = note.userInfo,
          let raw = info[AVAudioSessionInterruptionTypeKey] as? UInt,
          let type = AVAudioSession.InterruptionType(rawValue: raw)
        else { return }
        let now = CACurrentMediaTime()
        switch type {
        case .began:
          self?.audio?.interruptionBegan(at: now)
          self?.apply { $0.interruptionBegan(now: $1) }
        case .ended:
          let options = (info[AVAudioSessionInterruptionOptionKey] as? UInt).map(
            AVAudioSession.InterruptionOptions.init(rawValue:))
          self?.audio?.interruptionEnded(at: now)
          self?.apply {
            $0.interruptionEnded(shouldResume: options?.contains(.shouldResume) ?? false, now: $1)
          }
        @unknown default:
          break
        }
      }
      observe(AVAudioSession.routeChangeNotification) { [weak self] note in
        let raw = note.userInfo?[AVAudioSessionRouteChangeReasonKey] as? UInt
        let change: LifecyclePolicy.RouteChange =
          switch raw.flatMap(AVAudioSession.RouteChangeReason.init(rawValue:)) {
          case .oldDeviceUnavailable: .deviceLost
          case .newDeviceAvailable: .deviceAdded
          default: .other
          }
        self?.apply { $0.routeChanged(change, now: $1) }
      }
    }

    /// Stops observing.
    public func invalidate() {
      tokens.forEach(NotificationCenter.default.removeObserver)
      tokens = []
      timer?.invalidate()
    }

    /// Background time passes: once a second, for the grace period.
    private func startTimer() {
      timer?.invalidate()
      timer = Timer.scheduledTimer(withTimeInterval: 1, repeats: true) { [weak self] _ in
        MainActor.assumeIsolated { self?.apply { $0.tick(now: $1) } }
      }
    }

    private func apply(_ input: (inout LifecyclePolicy, Double) -> [LifecyclePolicy.Action]) {
      for action in input(&policy, CACurrentMediaTime()) {
        switch action {
        case .pause: client.pause()
        case .resume: client.resume()
        case .disconnect: Task { [client] in await client.disconnect() }
        case .reconnect: Task { [client] in await client.connect() }
        case .purge(let level): client.player.purgeMemory(level)
        case .stop: client.pause()
        case .refreshOutputLatency: audio?.setOutputLatency(AudioSessionSetup.outputLatency)
        }
      }
    }
  }
#endif
