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
  /// The display link asks for `FramePacing`'s range for the player's rate. Rendering runs on
  /// a serial queue of its own, never on the main thread; each frame is read back and shown
  /// as the layer's contents.
  ///
  /// Not built yet: drawing straight into a `CAMetalLayer`'s drawable (a wgpu surface), which
  /// would save the read-back; see `docs/Apple.md`.
  @MainActor
  public final class PngineUIView: UIView {
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
      layer.contentsGravity = .resizeAspect
      isAccessibilityElement = true
      accessibilityTraits = [.image, .updatesFrequently]
      let center = NotificationCenter.default
      tokens.append(
        center.addObserver(
          forName: UIApplication.didEnterBackgroundNotification, object: nil, queue: .main
        ) { [queue, box] _ in
          let now = CACurrentMediaTime()
          queue.async { box.driver?.enterBackground(now: now) }
        })
      tokens.append(
        center.addObserver(
          forName: UIApplication.willEnterForegroundNotification, object: nil, queue: .main
        ) { [queue, box] _ in
          let now = CACurrentMediaTime()
          queue.async { box.driver?.enterForeground(now: now) }
        })
      tokens.append(
        center.addObserver(
          forName: UIApplication.didReceiveMemoryWarningNotification, object: nil, queue: .main
        ) { [queue, box] _ in
          let now = CACurrentMediaTime()
          queue.async { box.driver?.memoryWarning(now: now) }
        })
    }

    @available(*, unavailable)
    required init?(coder: NSCoder) { fatalError("use init(png:configuration:)") }

    /// Loads on the first layout with a size.
    public override func layoutSubviews() {
      super.layoutSubviews()
      guard box.loadRequested == false, bounds.width > 0, bounds.height > 0 else { return }
      box.loadRequested = true
      let scale = window?.screen.scale ?? 2
      let width = UInt32(bounds.width * scale)
      let height = UInt32(bounds.height * scale)
      let (png, configuration) = (png, configuration)
      let now = CACurrentMediaTime()
      queue.async { [box] in
        let driver = PngineHeadlessDriver(
          png: png, width: width, height: height, configuration: configuration)
        box.driver = driver
        driver.load(now: now)
      }
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
      // The layer is only touched on the main thread (below).
      nonisolated(unsafe) let layer = layer
      queue.async { [box] in
        guard let driver = box.driver else { return }
        let before = driver.framesRendered
        driver.tick(now: now)
        guard driver.framesRendered != before, let image = driver.lastImage,
          let picture = Self.image(image)
        else { return }
        nonisolated(unsafe) let picture = picture
        DispatchQueue.main.async {
          CATransaction.begin()
          CATransaction.setDisableActions(true)
          layer.contents = picture
          CATransaction.commit()
        }
      }
    }

    /// The canvas as an image: WebGPU writes premultiplied alpha.
    nonisolated private static func image(_ image: RGBAImage) -> CGImage? {
      guard let provider = CGDataProvider(data: Data(image.pixels) as CFData) else { return nil }
      return CGImage(
        width: image.width, height: image.height, bitsPerComponent: 8, bitsPerPixel: 32,
        bytesPerRow: image.width * 4, space: CGColorSpaceCreateDeviceRGB(),
        bitmapInfo: CGBitmapInfo(rawValue: CGImageAlphaInfo.premultipliedLast.rawValue),
        provider: provider, decode: nil, shouldInterpolate: true, intent: .defaultIntent)
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
      // @unchecked: `driver` is touched on the render queue only; `loadRequested` on the main
      // thread only.
      var driver: PngineHeadlessDriver?
      var loadRequested = false
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
