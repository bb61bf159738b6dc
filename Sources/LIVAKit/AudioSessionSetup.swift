#if canImport(AVFoundation) && canImport(UIKit)
  import AVFoundation

  /// The audio session a talking avatar needs: spoken audio that plays with the ringer switch
  /// off and ducks other apps' audio while it speaks.
  public enum AudioSessionSetup {
    /// Sets the category (`.playback`, mode `.spokenAudio`, ducking others) and activates the
    /// session. Call once before connecting.
    public static func activate() throws {
      let session = AVAudioSession.sharedInstance()
      try session.setCategory(.playback, mode: .spokenAudio, options: [.duckOthers])
      try session.setActive(true)
    }

    /// Seconds from rendering a sample to hearing it on the current route (output latency plus
    /// one I/O buffer): 5–20 ms on the speaker, 150–250 ms over Bluetooth.
    public static var outputLatency: Double {
      let session = AVAudioSession.sharedInstance()
      return session.outputLatency + session.ioBufferDuration
    }
  }
#endif
