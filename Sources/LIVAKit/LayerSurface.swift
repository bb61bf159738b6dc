#if canImport(UIKit) && canImport(CoreGraphics)
  import CoreGraphics
  import Foundation
  import LIVA
  import LIVAPlatform
  import Locking
  import QuartzCore

  /// A ``LIVA/RenderSurface`` that shows frames as a layer's contents: each frame becomes a
  /// `CGImage` on the display link's thread (converted once by
  /// ``LIVAPlatform/PixelHandoff``), and only the assignment of `contents` happens on the main
  /// thread. Frames pass through a ``PlaybackLifecycle/LatestWins`` mailbox: a busy main thread
  /// gets the newest frame once, never a queue of stale ones.
  public final class LayerSurface: RenderSurface, @unchecked Sendable {
    // @unchecked: `layer` is only touched on the main thread; `mailbox` under `lock`.
    private let layer: CALayer
    private let lock = Locked()
    private var mailbox = LatestWins<CGImage>()

    /// Frames replaced by a newer one before the main thread showed them.
    public var framesReplaced: Int { lock.withLock { mailbox.replaced } }

    /// 0: each frame's pixels are copied into an image before ``present(_:)`` returns, so the
    /// player hands over its compositor's own buffer and keeps no spare one.
    public var retainedFrames: Int { 0 }

    /// A surface drawing into `layer` (the view's backing layer).
    public init(layer: CALayer) { self.layer = layer }

    /// Converts the frame to an image here, then hands it to the main thread.
    public func present(_ frame: RenderedFrame) {
      let handoff = PixelHandoff(
        width: frame.width, height: frame.height, straightRGBA: frame.pixels)
      guard let image = Self.image(handoff) else { return }
      guard lock.withLock({ mailbox.post(image) }) else { return }  // a delivery is on its way
      DispatchQueue.main.async { [self] in
        // The newest frame when the main thread gets here (CGImage is immutable).
        guard let image = lock.withLock({ mailbox.take() }) else { return }
        CATransaction.begin()
        CATransaction.setDisableActions(true)  // no implicit cross-fade between frames
        layer.contents = image
        CATransaction.commit()
      }
    }

    private static func image(_ handoff: PixelHandoff) -> CGImage? {
      let alpha: CGImageAlphaInfo =
        handoff.alpha == .opaque ? .noneSkipLast : .premultipliedLast
      guard let provider = CGDataProvider(data: Data(handoff.pixels) as CFData) else {
        return nil
      }
      return CGImage(
        width: handoff.width, height: handoff.height, bitsPerComponent: 8, bitsPerPixel: 32,
        bytesPerRow: handoff.bytesPerRow, space: CGColorSpaceCreateDeviceRGB(),
        bitmapInfo: CGBitmapInfo(rawValue: alpha.rawValue), provider: provider, decode: nil,
        shouldInterpolate: true, intent: .defaultIntent)
    }
  }
#endif
