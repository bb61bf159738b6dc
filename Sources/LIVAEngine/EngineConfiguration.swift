import LIVAProtocol

/// Tuning of the playback engine. Every value has the default the web client proved; all times
/// are in seconds.
public struct EngineConfiguration: Sendable, Equatable {
  /// Frame rate while speaking and for every non-idle base animation (transitions, finishing,
  /// return, requested animations). Default 30.
  public var speakingFPS: Double = 30
  /// Frame rate of the idle loop. Default 10, as on the web (the first iOS client used 30).
  public var idleFPS: Double = 10
  /// The pose the avatar rests in. Default `idle_1`.
  public var idlePose: Pose = .idle
  /// A chunk starts once this many of its first frames are ready. Default 10.
  public var startThresholdFrames: Int = 10
  /// ...or once this long has passed since it could have started, with what is ready
  /// (its first frame at least). Default 0.5 s.
  public var startTimeout: Double = 0.5
  /// ...for a chunk whose first frame's image was sent ahead (`first_frame_image`): it starts
  /// once its first frames are ready as any chunk, or this soon with its first frame ready, so
  /// speech starts at once without its next mouths arriving or decoding behind the audio (on a
  /// loaded device they did: the first frame was held while the audio ran, then the picture
  /// jumped). Default 0.15 s.
  public var firstFrameStartTimeout: Double = 0.15
  /// Seconds a queued chunk waits for its first mouth at most: then it starts without it (its
  /// audio and its time go on; mouths that come later are drawn).
  public var maxStartWait: Double = 1.5
  /// At a chunk boundary, the longest wait for the next chunk while it is not ready (or not yet
  /// announced); then go on with what is ready, or finish. The last frame is held, mouth and
  /// all, only for ``boundaryGrace``; the rest of the wait moves without a mouth, so a speech
  /// service that stalls 1.5 s is waited for. Default 3 s.
  public var maxBoundaryHold: Double = 3
  /// A slow link: while bytes of the backend's link have arrived within this long
  /// (``LIVAEngine/linkDelivered()``), speech waits for what is still coming instead of going
  /// on without it. A queued chunk whose images have not all come starts only once they have
  /// (whatever ``startThresholdFrames`` and the start timeouts say), and a chunk boundary waits
  /// past ``maxBoundaryHold`` for the next chunk's plan and images, so a link slower than the
  /// speech plays it whole, pausing between chunks as a video buffers. The waits end when the
  /// link has been quiet this long, or at ``maxDeliveryWait``. An owner that never reports the
  /// link keeps the fixed waits. Default 0.5 s (a link's gaps between packets are far
  /// shorter, even at 20 KB/s or over a 300 ms round trip).
  public var deliveryQuiet: Double = 0.5
  /// The longest wait for speech a delivering link may make (see ``deliveryQuiet``): then the
  /// chunk starts with what is ready, or the boundary ends, as without the link. Default 15 s.
  public var maxDeliveryWait: Double = 15
  /// At a chunk boundary, how long the last frame is held, mouth and all, while the next chunk
  /// is late. Past it the mouth closes and the body keeps moving: the base animation rocks back
  /// and forth next to the frame the chunk ended on (``boundaryBreathFrames``), one base frame
  /// a slot at ``speakingFPS``, until the chunk comes or the wait ends
  /// (``maxBoundaryHold``). The late chunk then starts without a pop: the body first walks back
  /// next to the chunk's first frame, and its audio starts when that frame is drawn, as always.
  /// A mouth is never shown for this long after its chunk's audio ended. Default 0.2 s.
  public var boundaryGrace: Double = 0.2
  /// How far the body moves while waiting past ``boundaryGrace``: at most this many base frames
  /// back from the frame the chunk ended on (forwards when that is the animation's first
  /// frame). Also the most slots the walk back takes when the chunk comes. Default 4.
  public var boundaryBreathFrames: Int = 4
  /// Consecutive frame slots an unready overlay may hold the picture before it is skipped
  /// (and counted). Default 15.
  public var maxConsecutiveOverlayHolds: Int = 15
  /// After speech, the longest time spent finishing the current base animation to its end
  /// pose before cutting to the return transition (a counted pop). Default 5 s.
  public var finishTimeout: Double = 5
  /// The longest walk through the graph (at ``speakingFPS``) to reach the first overlay
  /// frame's start pose; a longer walk is replaced by a cut (a counted pop) so speech is not
  /// delayed. Default 2 s.
  public var maxEntryDelay: Double = 2
  /// With the frame clock, the most frame slots one tick may advance after a stall; the rest
  /// of the stall is dropped (a counted catch-up). Default 4.
  public var maxCatchUpFrames: Int = 4
  /// Pending play-animation requests kept while speech is playing; older ones are dropped with
  /// a warning. Default 4.
  public var maxPendingAnimationRequests: Int = 4
  /// Steps kept for ``LIVAEngine/stepBackward()`` in debug step mode. Default 300.
  public var debugHistoryLimit: Int = 300

  /// The defaults.
  public init() {}
}
