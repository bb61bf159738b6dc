#if canImport(UIKit) && canImport(PngineWebGPU)
  import Foundation
  import PngineKit
  import PngineWebGPU
  import QuartzCore
  import UIKit

  /// A UIKit view playing a PNGine PNG. It loads once it has a size (the canvas is its size in
  /// pixels), ticks a ``PngineKit/PnginePlayer`` from a `CADisplayLink` at the player's rate, and
  /// forwards background, foreground and memory warnings to it (the shared
  /// `LifecyclePolicy`; ``PngineKit/PngineBackgroundBehavior``, default `pauseAndRestore`).
  /// The display link asks for `FramePacing`'s range for the player's rate.
  ///
  /// The view's layer is a `CAMetalLayer`, and the canvas is the current texture of a wgpu
  /// surface made from it (``PngineWebGPU/SurfaceSource/metalLayer(_:)``): each frame is drawn
  /// into the layer's drawable and presented, nothing is read back. Rendering, presenting and
  /// resizing run on a serial queue of its own, never on the main thread. The surface path is
  /// the one `SurfaceTests` exercise on Linux (an X11 window instead of the layer).
  @MainActor
  public final class PngineUIView: UIView {
    /// A `CAMetalLayer`, the surface the frames are presented on.
    public override class var layerClass: AnyClass { CAMetalLayer.self }

    private let png: [UInt8]
    private let queue = DispatchQueue(label: "PngineKit.render", qos: .userInteractive)
    private let box = DriverBox()
    private var link: CADisplayLink?
    private var tokens: [any NSObjectProtocol] = []
    /// The player's settings; changes reach it on the next tick.
    public var configuration: PnginePlayer.Configuration {
      didSet {
        let configuration = configuration
        queue.async { [box] in box.driver?.configure { $0 = configuration } }
      }
    }

    /// A view playing `png` (the whole PNG file) with `configuration`.
    public init(png: Data, configuration: PnginePlayer.Configuration = .init()) {
      self.png = [UInt8](png)
      self.configuration = configuration
      super.init(frame: .zero)
      layer.isOpaque = true
      isAccessibilityElement = true
      accessibilityTraits = [.image, .updatesFrequently]
      forward(UIApplication.didEnterBackgroundNotification) { $0.enterBackground(now: $1) }
      forward(UIApplication.willEnterForegroundNotification) { $0.enterForeground(now: $1) }
      forward(UIApplication.didReceiveMemoryWarningNotification) { $0.memoryWarning(now: $1) }
    }

    /// Passes a notification to the driver on the render queue, with the time it came.
    private func forward(
      _ name: Notification.Name, _ body: @escaping @Sendable (PngineHeadlessDriver, Double) -> Void
    ) {
      tokens.append(
        NotificationCenter.default.addObserver(forName: name, object: nil, queue: .main) {
          [queue, box] _ in
          let now = CACurrentMediaTime()
          queue.async { if let driver = box.driver { body(driver, now) } }
        })
    }

    @available(*, unavailable)
    required init?(coder: NSCoder) { fatalError("use init(png:configuration:)") }

    /// Loads on the first layout with a size; a later size resizes the surface.
    public override func layoutSubviews() {
      super.layoutSubviews()
      guard bounds.width > 0, bounds.height > 0 else { return }
      let scale = window?.screen.scale ?? 2
      layer.contentsScale = scale
      let width = UInt32(bounds.width * scale)
      let height = UInt32(bounds.height * scale)
      guard box.loadRequested else {
        box.loadRequested = true
        box.size = (width, height)
        // The surface borrows the layer; the box (which outlives the driver) holds it too.
        box.layer = layer
        let surface = SurfaceSource.metalLayer(Unmanaged.passUnretained(layer).toOpaque())
        let (png, configuration) = (png, configuration)
        let now = CACurrentMediaTime()
        queue.async { [box] in
          let driver = PngineHeadlessDriver(
            png: png, surface: surface, width: width, height: height,
            configuration: configuration)
          box.driver = driver
          driver.load(now: now)
        }
        return
      }
      guard box.size != (width, height) else { return }
      box.size = (width, height)
      queue.async { [box] in try? box.driver?.resize(width: width, height: height) }
    }

    /// Ticks while in a window.
    public override func didMoveToWindow() {
      super.didMoveToWindow()
      link?.invalidate()
      link = nil
      guard window != nil else { return }
      let link = CADisplayLink(target: Proxy(self), selector: #selector(Proxy.tick(_:)))
      if let rate = configuration.effectiveFrameRate {
        let range = FramePacing.preferredRange(
          contentRate: rate, displayMaximum: Double(window?.screen.maximumFramesPerSecond ?? 60))
        link.preferredFrameRateRange = CAFrameRateRange(
          minimum: Float(range.minimum), maximum: Float(range.maximum),
          preferred: Float(range.preferred))
      }
      link.add(to: .main, forMode: .common)
      self.link = link
    }

    fileprivate func tick(_ link: CADisplayLink) {
      let now = link.targetTimestamp
      queue.async { [box] in box.driver?.tick(now: now) }
    }

    /// Stops ticking and observing.
    public func tearDown() {
      link?.invalidate()
      tokens.forEach(NotificationCenter.default.removeObserver)
      tokens = []
      let now = CACurrentMediaTime()
      queue.async { [box] in box.driver?.unload(now: now) }
    }

    /// The driver, confined to the render queue.
    private final class DriverBox: @unchecked Sendable {
      // @unchecked: `driver` is touched on the render queue only; `loadRequested` and `size`
      // on the main thread only.
      var driver: PngineHeadlessDriver?
      var loadRequested = false
      var size: (UInt32, UInt32) = (0, 0)
      var layer: CALayer?
    }

    /// The link's target: holds the view weakly.
    private final class Proxy: NSObject {
      weak var view: PngineUIView?
      init(_ view: PngineUIView) { self.view = view }
      @objc func tick(_ link: CADisplayLink) {
        MainActor.assumeIsolated {
          guard let view else { return link.invalidate() }
          view.tick(link)
        }
      }
    }
  }
#endif
