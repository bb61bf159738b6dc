#if canImport(UIKit)
  import LIVA
  import LIVAMedia
  import LIVAPlatform
  import QuartzCore
  import UIKit

  /// A UIKit view that shows a LIVA avatar: it builds the client with a ``DisplayLinkDriver``,
  /// an ``AudioEngineOutput`` and a ``LayerSurface`` on its own layer, and follows the app's
  /// life cycle through a ``LifecycleObserver``. Frames are composed at the avatar's own size;
  /// the layer scales them as `avatarContentMode` says.
  @MainActor
  public final class LIVAAvatarUIView: UIView {
    /// The client: connect, send messages, read `events` and `metrics` through it.
    public let client: LIVAClient
    private let display: DisplayLinkDriver
    private var observer: LifecycleObserver?
    /// The layer the frames are set on (a sublayer the size of the view).
    private let backing: CALayer

    /// How frames fit the view (default aspect fit: never squashed). Qualified: inside a
    /// `UIView` subclass the bare name `ContentMode` is UIKit's `UIView.ContentMode`.
    public var avatarContentMode: LIVAMedia.ContentMode = .aspectFit {
      didSet {
        CATransaction.begin()
        CATransaction.setDisableActions(true)
        backing.contentsGravity = CALayerContentsGravity(
          rawValue: LayerGravity(avatarContentMode).rawValue)
        CATransaction.commit()
      }
    }

    /// Builds the pipeline for `configuration` (its output size is left to the avatar) and sets
    /// the audio session's category; the session is active while the avatar speaks (see
    /// ``LifecycleObserver``).
    public init(
      configuration: LIVAConfiguration, lifecycle: LifecyclePolicy.Configuration = .init()
    ) throws {
      try AudioSessionSetup.configure()
      var configuration = configuration
      configuration.player.width = nil
      configuration.player.height = nil
      display = DisplayLinkDriver()
      let audio = try AudioEngineOutput(outputLatency: AudioSessionSetup.outputLatency)
      let backing = CALayer()
      self.backing = backing
      client = try LIVAClient(
        configuration: configuration, displayLink: display, audio: audio,
        surface: LayerSurface(layer: backing))
      super.init(frame: .zero)
      layer.addSublayer(backing)
      backing.contentsGravity = .resizeAspect
      observer = LifecycleObserver(client: client, audio: audio, configuration: lifecycle)
      isAccessibilityElement = true
      accessibilityLabel = "Talking avatar"
      accessibilityTraits = [.image, .updatesFrequently]
    }

    @available(*, unavailable)
    required init?(coder: NSCoder) { fatalError("use init(configuration:)") }

    /// Keeps the frames' layer the size of the view, scaled by the content mode.
    public override func layoutSubviews() {
      super.layoutSubviews()
      CATransaction.begin()
      CATransaction.setDisableActions(true)
      backing.frame = bounds
      CATransaction.commit()
    }

    /// Stops observing and ticking (the view is going away).
    public func tearDown() {
      observer?.invalidate()
      display.stop()
    }
  }
#endif
