import Foundation
import LIVAMedia
import LIVAProtocol

/// The images of the `Media.*` benchmarks: a 100×80 mouth sprite, its WebP bytes and a
/// 1280×768 base frame, all made from ``sampleImage(width:height:seed:)``.
public struct MediaBenchFixtures: Sendable {
  /// The codec that made ``spriteWebP`` and decodes it.
  public let codec: SystemImageCodec
  /// The mouth sprite, 100×80 (seed 1).
  public let sprite: RGBAImage
  /// ``sprite`` as lossy WebP at quality 80.
  public let spriteWebP: Data
  /// The base frame, 1280×768 (seed 2).
  public let frame: RGBAImage
  /// ``sprite`` at (590, 420) of the base frame, the mouth's place.
  public let overlay: PlacedOverlay
  /// ``sprite`` two pixels right and one down from ``overlay``.
  public let moved: PlacedOverlay

  /// Makes the images; throws when WebP encoding is not available (on Linux: no
  /// `libwebp.so.7`; on Apple platforms ImageIO cannot write WebP).
  public init() throws(LIVAMediaError) {
    codec = SystemImageCodec()
    sprite = Self.sampleImage(width: 100, height: 80, seed: 1)
    spriteWebP = try codec.encode(sprite, as: .webp, quality: 80)
    frame = Self.sampleImage(width: 1280, height: 768, seed: 2)
    overlay = PlacedOverlay(image: sprite, rect: .at(x: 590, y: 420))
    moved = PlacedOverlay(image: sprite, rect: .at(x: 592, y: 421))
  }

  /// The measured work of `Media.WebPDecode.Sprite100x80`: ``spriteWebP`` decoded.
  public func decodeSprite() throws(LIVAMediaError) -> RGBAImage {
    try codec.decode(spriteWebP)
  }

  /// A deterministic opaque image with smooth gradients and some texture, like an avatar
  /// frame: the same `seed` always gives the same pixels.
  public static func sampleImage(width: Int, height: Int, seed: Int) -> RGBAImage {
    var image = RGBAImage(width: width, height: height)
    var noise = UInt32(truncatingIfNeeded: seed &* 2_654_435_761 | 1)
    for y in 0..<height {
      for x in 0..<width {
        noise ^= noise << 13
        noise ^= noise >> 17
        noise ^= noise << 5
        let jitter = Int(noise & 7)
        image[x, y] = RGBA(
          UInt8((x * 255 / width + jitter) & 255), UInt8((y * 255 / height + jitter) & 255),
          UInt8((x + y + seed) & 255), 255)
      }
    }
    return image
  }
}

/// A compositor for a 1280×768 target (feathered edges of 6 pixels) rendering the base frame
/// of ``MediaBenchFixtures`` with one mouth, in the way of `Media.Composite.*`.
///
/// Owned by one thread, as the ``Compositor`` it holds.
public final class CompositeBench {
  /// Which `Media.Composite.*` benchmark.
  public enum Scenario: String, Sendable, CaseIterable {
    /// `Media.Composite.Full1280x768`: a new base key every render, so the base is copied in
    /// full and one feathered overlay drawn over it.
    case full
    /// `Media.Composite.OverlayOnly1280x768`: the same base key every render, so only the
    /// overlay's region is redrawn; the overlay alternates between two places.
    case overlayOnly
  }

  /// The scenario rendered.
  public let scenario: Scenario
  /// The compositor being measured.
  public let compositor: Compositor
  private let fixtures: MediaBenchFixtures
  private var index = 0
  private var flip = false

  /// A fresh compositor; for ``Scenario/overlayOnly`` it has rendered the base once already,
  /// so that every ``render()`` finds the base unchanged.
  public init(_ scenario: Scenario, fixtures: MediaBenchFixtures) {
    self.scenario = scenario
    self.fixtures = fixtures
    compositor = Compositor(width: 1280, height: 768, featherWidth: 6)
    if scenario == .overlayOnly {
      compositor.render(
        base: fixtures.frame, baseKey: BaseFrameRef(animation: .idleForward, index: 0),
        overlays: [fixtures.overlay])
    }
  }

  /// The measured work: one frame rendered.
  @discardableResult
  public func render() -> Compositor.RenderKind {
    switch scenario {
    case .full:
      index += 1
      return compositor.render(
        base: fixtures.frame, baseKey: BaseFrameRef(animation: .idleForward, index: index),
        overlays: [fixtures.overlay])
    case .overlayOnly:
      flip.toggle()
      return compositor.render(
        base: fixtures.frame, baseKey: BaseFrameRef(animation: .idleForward, index: 0),
        overlays: [flip ? fixtures.moved : fixtures.overlay])
    }
  }
}
