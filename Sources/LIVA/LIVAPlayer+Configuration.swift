import LIVAEngine
import LIVAMedia
import LIVAProtocol

extension LIVAPlayer {
  /// Options of the pipeline.
  public struct Configuration: Sendable {
    /// Output width in pixels; nil (the default): the avatar's own frame width.
    public var width: Int?
    /// Output height in pixels; nil (the default): the avatar's own frame height.
    public var height: Int?
    /// How the avatar's frames are fitted into an output of another size or aspect (default
    /// ``LIVAMedia/ContentMode/aspectFit``: never squashed).
    public var contentMode: ContentMode = .aspectFit
    /// Width of the soft edge of overlays, in output pixels (0: hard edges).
    public var featherWidth: Double = 6
    /// The engine's tuning.
    public var engine = EngineConfiguration()
    /// The ingest pipeline's limits.
    public var ingest = IngestPipeline.Configuration()
    /// Bytes of decoded overlay images kept.
    public var overlayByteLimit = 64 << 20
    /// Of those, bytes of overlay images already played and claimed by no queued message,
    /// kept in case a later message uses the same sprite (default 4 MiB: about one message's
    /// mouths at 1280×768). Beyond it the least recently used are let go; a later message
    /// that needs one decodes it again.
    public var playedOverlayByteLimit = 4 << 20
    /// Validation limits for incoming events.
    public var eventLimits = LIVAEventLimits.default
    /// Bytes of decoded base frames to plan the window ahead with (see ``windowFrames``); the
    /// base-frame store's own memory limit should be at least this. Default 32 MiB: 8 frames
    /// of 1280×768, 32 of 512×512.
    public var baseFrameBudget = 32 << 20
    /// The shortest freeze recorded, in seconds (see ``FreezeDetector``).
    public var freezeThreshold: Double = 0.1
    /// The display rate the ticks are expected at (for counting late ticks).
    public var expectedTickRate: Double = 60
    /// How far ahead of the tick the audio clock is read for choosing the mouth, in seconds.
    /// A mouth can only change on a tick, so reading the clock half a tick ahead centres the
    /// lip-sync error around zero (±half a tick) instead of always lagging (0 to one tick).
    /// Nil: half of `1 / expectedTickRate`.
    public var audioLookahead: Double?

    /// The defaults.
    public init() {}
  }
}
