import LIVAProtocol
import Testing

@testable import LIVAMedia

/// A 1280×768-like (5:3) base frame into a square target, in each content mode: the aspect is
/// kept (fit, fill) or deliberately not (stretch), and overlays move with the base.
@Suite("Compositor content modes")
struct ContentModeTests {
  static let left = RGBA(200, 0, 0)
  static let right = RGBA(0, 0, 200)
  static let mouth = RGBA(0, 250, 0)
  static let band = RGBA(10, 10, 10)

  /// 50×30: left half red, right half blue.
  func base() -> RGBAImage {
    var image = RGBAImage(width: 50, height: 30, fill: Self.left)
    for y in 0..<30 { for x in 25..<50 { image[x, y] = Self.right } }
    return image
  }

  /// A 10×6 green overlay at (20, 12) in base pixels: around the frame's centre.
  func overlay() -> PlacedOverlay {
    PlacedOverlay(
      image: RGBAImage(width: 10, height: 6, fill: Self.mouth),
      rect: PlacementRect(x: 20, y: 12, width: 10, height: 6))
  }

  func render(_ mode: ContentMode) -> RGBAImage {
    let compositor = Compositor(width: 100, height: 100, contentMode: mode, background: Self.band)
    compositor.render(base: base(), baseKey: nil, overlays: [overlay()])
    return compositor.frame
  }

  @Test("aspect fit: the whole frame at 2×, centred, with bands above and below")
  func aspectFit() {
    let frame = render(.aspectFit)
    // 50×30 at 2× is 100×60, from y = 20 to 80.
    #expect(frame[50, 5] == Self.band && frame[50, 95] == Self.band)
    #expect(frame[1, 21] == Self.left && frame[98, 78] == Self.right)
    #expect(frame[50, 50] == Self.mouth)  // the overlay's centre: (25, 15) × 2 + (0, 20)
    #expect(frame[39, 50] != Self.mouth && frame[61, 50] != Self.mouth)
  }

  @Test("aspect fill: the frame at 3.33×, centred, its sides cut, no bands")
  func aspectFill() {
    let frame = render(.aspectFill)
    // 50×30 at 10/3 is 166.7×100, from x = -33.3: the target shows base x 10…40.
    #expect(frame[0, 0] == Self.left && frame[99, 99] == Self.right)
    #expect(!(0..<100).contains { frame[$0, 0] == Self.band })
    #expect(frame[50, 50] == Self.mouth)
    // The overlay is 10 base pixels wide: 33 target pixels (x 33…66).
    #expect(frame[35, 50] == Self.mouth && frame[30, 50] != Self.mouth)
  }

  @Test("stretch: the whole frame squashed to the target, overlays with it")
  func stretch() {
    let frame = render(.stretch)
    #expect(frame[0, 0] == Self.left && frame[99, 99] == Self.right)
    #expect(frame[50, 50] == Self.mouth)
    // 2× across, 3.33× down: the overlay is 20 wide and 20 high (x 40…60, y 40…60).
    #expect(frame[42, 42] == Self.mouth && frame[50, 37] != Self.mouth)
  }

  @Test("the same size in every mode is a copy")
  func sameSize() {
    for mode in ContentMode.allCases {
      let compositor = Compositor(width: 50, height: 30, contentMode: mode)
      compositor.render(base: base(), baseKey: nil, overlays: [])
      #expect(compositor.frame == base())
    }
  }
}
