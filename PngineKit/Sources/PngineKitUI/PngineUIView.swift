#if canImport(UIKit) && canImport(PngineWebGPU)
  import Foundation
  import PngineKit
  import PngineWebGPU
  import QuartzCore
  import Locking
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
  /// resizing run on a serial queue of its own, never on the main thread; ticks reach it through
  /// a `LatestWins` mailbox, so a slow frame merges the ticks behind it instead of queueing them.
  /// The surface path is the one `SurfaceTests` exercise on Linux (an X11 window instead of the
  /// layer).
  @MainActor
  public final class PngineUIView: UIView {
    /// A `CAMetalLayer`, the surface the frames are presented on.
    public override class var layerClass: AnyClass { CAMetalLayer.self }

    private let png: [UInt8]
    private let queue = DispatchQueue(label: "PngineKit.render", qos: .userInteractive)
    private let box = DriverBox()
    private var link: CADisplayLink?
    /// Removed in ``tearDown()``, or when the view goes without it: the observers' closures hold
    /// the driver (and its GPU device), which then goes with the view.
    private let tokens = ObserverTokens()
    /// The player's settings; changes reach it on the next tick (a new frame rate reaches the
    /// display link at once).
    public var configuration: PnginePlayer.Configuration {
      didSet {
        let configuration = configuration
        queue.async { [box] in box.driver?.configure { $0 = configuration } }
        if let link { pace(link) }
      }
    }
    /// Whether what the animation leaves transparent shows what is behind the view (a
    /// non-opaque layer, a premultiplied canvas). Set before the view first loads.
    public var isTransparent = false {
      didSet {
        layer.isOpaque = !isTransparent
        backgroundColor = isTransparent ? .clear : nil
      }
    }
    /// Called on the main thread with every error: a load that failed, a frame the executor or
    /// the GPU refused (see ``PngineKit/PngineError``'s `localizedDescription`).
    public var onError: (@MainActor (PngineError) -> Void)?
    /// Called on the main thread when an animation that does not loop forever reaches its end.
    public var onFinished: (@MainActor () -> Void)?
    /// Called on the main thread once the animation is loaded and its first frame asked for.
    public var onReady: (@MainActor () -> Void)?

    /// The loaded animation's counters (calls, commands, passes, draws, frames), read on the
    /// render queue; nil before it loads.
    public func diagnostics() async -> DiagnosticsSnapshot? {
      await withCheckedContinuation { continuation in
        queue.async { [box] in
          continuation.resume(returning: box.driver?.renderer?.animation.diagnostics.snapshot)
        }
      }
    }

    /// Whether playback is paused: a paused view holds its frame and renders nothing.
    public var isPaused = false {
      didSet {
        guard isPaused != oldValue else { return }
        let (paused, now) = (isPaused, CACurrentMediaTime())
        queue.async { [box] in
          if paused { box.driver?.pause(now: now) } else { box.driver?.play(now: now) }
        }
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
      // Reduce Motion holds a still frame; Low Power mode lowers the rate (the player decides).
      // The file's own Title or Description, else "Animation"; the app may set its own after.
      accessibilityLabel = PngineAccessibility.label(forPNG: self.png)
      forwardSettings(UIAccessibility.reduceMotionStatusDidChangeNotification)
      forwardSettings(.NSProcessInfoPowerStateDidChange)
    }

    /// The system's Reduce Motion and Low Power settings, read on the main thread when they
    /// change and passed to the driver on the render queue.
    private func forwardSettings(_ name: Notification.Name) {
      tokens.list.append(
        NotificationCenter.default.addObserver(forName: name, object: nil, queue: .main) {
          [queue, box] _ in
          MainActor.assumeIsolated {
            let (reduceMotion, lowPower) = Self.settings()
            let now = CACurrentMediaTime()
            queue.async {
              box.driver?.reduceMotionChanged(reduceMotion, now: now)
              box.driver?.lowPowerChanged(lowPower, now: now)
            }
          }
        })
    }

    /// Reduce Motion and Low Power mode, as the system has them (main thread).
    private static func settings() -> (reduceMotion: Bool, lowPower: Bool) {
      (UIAccessibility.isReduceMotionEnabled, ProcessInfo.processInfo.isLowPowerModeEnabled)
    }

    /// Passes a notification to the driver on the render queue, with the time it came.
    private func forward(
      _ name: Notification.Name, _ body: @escaping @Sendable (PngineRenderDriver, Double) -> Void
    ) {
      tokens.list.append(
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
      // The trait collection knows the scale before the view is in a window.
      let scale = traitCollection.displayScale > 0 ? traitCollection.displayScale : 1
      layer.contentsScale = scale
      let width = UInt32(bounds.width * scale)
      let height = UInt32(bounds.height * scale)
      guard box.loadRequested else {
        box.loadRequested = true
        box.size = (width, height)
        // The surface borrows the layer; the box (which outlives the driver) holds it too.
        box.layer = layer
        let surface = SurfaceSource.metalLayer(Unmanaged.passUnretained(layer).toOpaque())
        let (png, configuration, paused, transparent) = (
          png, configuration, isPaused, isTransparent
        )
        let (reduceMotion, lowPower) = Self.settings()
        let now = CACurrentMediaTime()
        queue.async { [box, weak self] in
          let driver = PngineRenderDriver(
            png: png, surface: surface, width: width, height: height,
            configuration: configuration, transparent: transparent)
          box.driver = driver
          // Errors and the end reach the app on the main thread.
          driver.onError = { [weak self] error in
            DispatchQueue.main.async { [weak self] in
              MainActor.assumeIsolated { self?.onError?(error) }
            }
          }
          driver.onFinished = { [weak self] in
            DispatchQueue.main.async { [weak self] in
              MainActor.assumeIsolated { self?.onFinished?() }
            }
          }
          driver.reduceMotionChanged(reduceMotion, now: now)
          driver.lowPowerChanged(lowPower, now: now)
          driver.load(now: now)
          if paused { driver.pause(now: now) }
          if driver.renderer != nil {
            DispatchQueue.main.async { [weak self] in
              MainActor.assumeIsolated { self?.onReady?() }
            }
          }
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
      pace(link)
      link.add(to: .main, forMode: .common)
      self.link = link
    }

    /// Asks the display link for the player's rate (``PlaybackLifecycle/FramePacing``).
    private func pace(_ link: CADisplayLink) {
      guard let rate = configuration.effectiveFrameRate else {
        link.preferredFrameRateRange = .default
        return
      }
      let range = FramePacing.preferredRange(
        contentRate: rate, displayMaximum: Double(window?.screen.maximumFramesPerSecond ?? 60))
      link.preferredFrameRateRange = CAFrameRateRange(
        minimum: Float(range.minimum), maximum: Float(range.maximum),
        preferred: Float(range.preferred))
    }

    fileprivate func tick(_ link: CADisplayLink) {
      // Paused: no tick, no render (the player would skip it; the queue need not wake).
      guard !isPaused else { return }
      guard box.ticks.withLock({ $0.post(link.targetTimestamp) }) else { return }
      queue.async { [box] in
        // The newest tick when the render queue gets here.
        guard let now = box.ticks.withLock({ $0.take() }) else { return }
        box.driver?.tick(now: now)
      }
    }

    // MARK: Touches: the animation's pointer (`write_pointer_uniform`)

    /// A touch's position, 0…1 over the view from its top left, and its pressure (0: none).
    private func pointer(_ touches: Set<UITouch>) -> (x: Float, y: Float, pressure: Float)? {
      guard let touch = touches.first, bounds.width > 0, bounds.height > 0 else { return nil }
      let location = touch.location(in: self)
      let pressure =
        touch.maximumPossibleForce > 0 ? Float(touch.force / touch.maximumPossibleForce) : 0
      return (
        Float(location.x / bounds.width), Float(location.y / bounds.height), pressure
      )
    }

    /// A touch down is a press of the primary button.
    public override func touchesBegan(_ touches: Set<UITouch>, with event: UIEvent?) {
      super.touchesBegan(touches, with: event)
      guard let (x, y, pressure) = pointer(touches) else { return }
      queue.async { [box] in box.driver?.pointer.down(x: x, y: y, buttons: 1, pressure: pressure) }
    }

    /// A touch moving moves the pointer.
    public override func touchesMoved(_ touches: Set<UITouch>, with event: UIEvent?) {
      super.touchesMoved(touches, with: event)
      guard let (x, y, _) = pointer(touches) else { return }
      queue.async { [box] in box.driver?.pointer.move(x: x, y: y) }
    }

    /// A touch lifted releases the press.
    public override func touchesEnded(_ touches: Set<UITouch>, with event: UIEvent?) {
      super.touchesEnded(touches, with: event)
      queue.async { [box] in box.driver?.pointer.up() }
    }

    /// A cancelled touch releases the press.
    public override func touchesCancelled(_ touches: Set<UITouch>, with event: UIEvent?) {
      super.touchesCancelled(touches, with: event)
      queue.async { [box] in box.driver?.pointer.up() }
    }

    /// Stops ticking and observing, and unloads (safe to call more than once).
    public func tearDown() {
      link?.invalidate()
      link = nil
      tokens.removeAll()
      let now = CACurrentMediaTime()
      queue.async { [box] in
        box.driver?.unload(now: now)
        box.driver = nil
      }
    }

    /// The driver, confined to the render queue.
    private final class DriverBox: @unchecked Sendable {
      // @unchecked: `driver` is touched on the render queue only; `loadRequested` and `size`
      // on the main thread only; `ticks` is a mutex.
      var driver: PngineRenderDriver?
      let ticks = Locked(LatestWins<Double>())
      var loadRequested = false
      var size: (UInt32, UInt32) = (0, 0)
      var layer: CALayer?
    }

    /// Notification observers, removed when the view is released (a `@MainActor` view's deinit
    /// cannot touch its own main-actor state).
    private final class ObserverTokens {
      var list: [any NSObjectProtocol] = []
      func removeAll() {
        list.forEach(NotificationCenter.default.removeObserver)
        list = []
      }
      deinit { removeAll() }
    }

    /// The link's target: holds the view weakly. Main-actor isolated from the start: the link
    /// is added to the main run loop, so its calls arrive there (checked at run time).
    @MainActor
    private final class Proxy: NSObject {
      weak var view: PngineUIView?
      init(_ view: PngineUIView) { self.view = view }
      @objc func tick(_ link: CADisplayLink) {
        guard let view else { return link.invalidate() }
        view.tick(link)
      }
    }
  }
#endif
