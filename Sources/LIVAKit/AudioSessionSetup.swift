#if canImport(AVFoundation) && canImport(UIKit)
  import AVFoundation

  /// The audio session a talking avatar needs: spoken audio that plays with the ringer switch
  /// off and ducks other apps' audio while it speaks.
  public enum AudioSessionSetup {
    /// Sets the category (`.playback`, mode `.spokenAudio`, ducking others) without activating
    /// the session. Call once before connecting; with a ``LifecycleObserver`` the session is
    /// then active only while the avatar speaks (others are ducked only then).
    public static func configure() throws {
      try AVAudioSession.sharedInstance().setCategory(
        .playback, mode: .spokenAudio, options: [.duckOthers])
    }

    /// Sets the category (``configure()``) and activates the session, for an app that keeps
    /// it active itself.
    public static func activate() throws {
      try configure()
      try AVAudioSession.sharedInstance().setActive(true)
    }

    /// Seconds from rendering a sample to hearing it on the current route (output latency plus
    /// one I/O buffer): 5–20 ms on the speaker, 150–250 ms over Bluetooth.
    public static var outputLatency: Double {
      let session = AVAudioSession.sharedInstance()
      return session.outputLatency + session.ioBufferDuration
    }
  }
#endif
