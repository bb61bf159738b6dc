import Foundation
import LIVAProtocol
import Testing

@testable import LIVAMedia

/// One compositor snapshot: a scene, and the golden PNG it must match.
struct SnapshotCase: Sendable, CustomTestStringConvertible {
  var name: String
  var baseWidth: Int
  var baseHeight: Int
  var feather: Double
  var overlays: [(width: Int, height: Int, rect: PlacementRect, seed: Int)]
  /// Largest allowed per-channel difference from the golden. The compositor is integer
  /// arithmetic and deterministic; 2 leaves room for rounding changes, not for visible ones.
  var tolerance: Int = 2

  var testDescription: String { name }

  static let target = (width: 64, height: 40)

  /// Every snapshot test case. Each has exactly one golden `Fixtures/Snapshots/<name>.png`.
  static let all: [SnapshotCase] = [
    SnapshotCase(
      name: "hard-edges-same-size", baseWidth: 64, baseHeight: 40, feather: 0,
      overlays: [(16, 12, PlacementRect.at(x: 10, y: 8), 1)]),
    SnapshotCase(
      name: "feather-4-same-size", baseWidth: 64, baseHeight: 40, feather: 4,
      overlays: [(24, 16, PlacementRect.at(x: 20, y: 12), 2)]),
    SnapshotCase(
      name: "scaled-down-with-rect", baseWidth: 128, baseHeight: 80, feather: 3,
      overlays: [(20, 16, PlacementRect(x: 40, y: 30, width: 40, height: 24), 3)]),
    SnapshotCase(
      name: "scaled-up-fractional", baseWidth: 40, baseHeight: 25, feather: 2,
      overlays: [(10, 8, PlacementRect.at(x: 12.5, y: 7.25), 4)]),
    SnapshotCase(
      name: "clipped-and-translucent", baseWidth: 64, baseHeight: 40, feather: 0,
      overlays: [
        (20, 14, PlacementRect.at(x: -6, y: 30), 5),
        (12, 12, PlacementRect.at(x: 56, y: -4), 6),
      ]),
  ]

  func base() -> RGBAImage {
    var image = RGBAImage(width: baseWidth, height: baseHeight)
    for y in 0..<baseHeight {
      for x in 0..<baseWidth {
        image[x, y] = RGBA(
          UInt8(x * 255 / baseWidth), UInt8(y * 255 / baseHeight), 96, 255)
      }
    }
    return image
  }

  func placed() -> [PlacedOverlay] {
    overlays.map { overlay in
      PlacedOverlay(
        image: TestSupport.pattern(
          width: overlay.width, height: overlay.height, seed: overlay.seed),
        rect: overlay.rect)
    }
  }

  func render() -> RGBAImage {
    let compositor = Compositor(
      width: Self.target.width, height: Self.target.height, featherWidth: feather)
    compositor.render(base: base(), baseKey: nil, overlays: placed())
    return compositor.frame
  }
}

@Suite("Compositor")
struct CompositorTests {
  /// Frame `index` of the idle loop, as a base key.
  static func frame(_ index: Int) -> BaseFrameRef {
    BaseFrameRef(animation: .idleForward, index: index)
  }

  static let snapshots = TestSupport.fixtures.appendingPathComponent("Snapshots")
  let codec = SystemImageCodec()

  @Test("snapshot matches its golden", arguments: SnapshotCase.all)
  func snapshot(_ scene: SnapshotCase) throws {
    let rendered = scene.render()
    let url = Self.snapshots.appendingPathComponent("\(scene.name).png")
    if ProcessInfo.processInfo.environment["LIVA_RECORD_SNAPSHOTS"] == "1" {
      // Recording is never a pass: a golden is only as good as the look someone gave it.
      try codec.encode(rendered, as: .png).write(to: url)
      Issue.record(
        "recorded \(url.path) (LIVA_RECORD_SNAPSHOTS=1): look at it, commit it, run again without")
      return
    }
    let golden = try codec.decode(try Data(contentsOf: url))
    #expect(golden.width == rendered.width && golden.height == rendered.height)
    #expect(TestSupport.maxDifference(golden, rendered) <= scene.tolerance)
  }

  @Test("every golden has its snapshot test and every snapshot test its golden")
  func goldensMatchCases() throws {
    let files = try FileManager.default.contentsOfDirectory(atPath: Self.snapshots.path)
      .filter { $0.hasSuffix(".png") }
    let goldens = Set(files.map { String($0.dropLast(4)) })
    let cases = Set(SnapshotCase.all.map(\.name))
    #expect(cases.count == SnapshotCase.all.count, "duplicate snapshot names")
    #expect(goldens == cases)
  }

  /// An opaque overlay of one colour and where it must land, worked out by hand: the target
  /// pixels `x0..<x1`, `y0..<y1` take its colour, every other pixel stays the base's.
  struct Placement: Sendable, CustomTestStringConvertible {
    var name: String
    var base: (width: Int, height: Int)
    var image: (width: Int, height: Int)
    var rect: PlacementRect
    var inside: (x0: Int, y0: Int, x1: Int, y1: Int)
    var testDescription: String { name }
  }

  static let placements: [Placement] = [
    // Same size: the rect's origin and the image's own size.
    Placement(
      name: "natural size at (10, 8)", base: (64, 40), image: (16, 12), rect: .at(x: 10, y: 8),
      inside: (10, 8, 26, 20)),
    // A rect with a size: the image is stretched to it (5×3 pixels to 20×9).
    Placement(
      name: "stretched to its rect", base: (64, 40), image: (5, 3),
      rect: PlacementRect(x: 30, y: 4, width: 20, height: 9), inside: (30, 4, 50, 13)),
    // A 128×80 base on a 64×40 target: the rect is in base pixels, so it halves too.
    Placement(
      name: "base scaled by 1/2", base: (128, 80), image: (20, 16),
      rect: PlacementRect(x: 40, y: 30, width: 40, height: 24), inside: (20, 15, 40, 27)),
    // A 32×20 base on a 64×40 target: the rect doubles.
    Placement(
      name: "base scaled by 2", base: (32, 20), image: (4, 4), rect: .at(x: 3, y: 5),
      inside: (6, 10, 14, 18)),
    // Over the edges: only the part on the target is drawn.
    Placement(
      name: "clipped at the bottom left", base: (64, 40), image: (20, 14), rect: .at(x: -6, y: 30),
      inside: (0, 30, 14, 40)),
    Placement(
      name: "clipped at the top right", base: (64, 40), image: (12, 12), rect: .at(x: 56, y: -4),
      inside: (56, 0, 64, 8)),
  ]

  @Test("an opaque overlay covers exactly its rect, by hand-computed pixels", arguments: placements)
  func placement(_ p: Placement) {
    // A uniform base scales to itself exactly (any averaging of one colour is that colour), so
    // every pixel's expected value is known without the compositor's arithmetic.
    let baseColour = RGBA(10, 200, 30)
    let colour = RGBA(250, 5, 120)
    let base = RGBAImage(width: p.base.width, height: p.base.height, fill: baseColour)
    let compositor = Compositor(width: 64, height: 40, featherWidth: 0)
    compositor.render(
      base: base, baseKey: nil,
      overlays: [
        PlacedOverlay(
          image: RGBAImage(width: p.image.width, height: p.image.height, fill: colour),
          rect: p.rect)
      ])
    var wrong: [String] = []
    for y in 0..<40 {
      for x in 0..<64 {
        let isInside = x >= p.inside.x0 && x < p.inside.x1 && y >= p.inside.y0 && y < p.inside.y1
        let expected = isInside ? colour : baseColour
        if compositor.frame[x, y] != expected {
          wrong.append("(\(x), \(y)) \(compositor.frame[x, y]), not \(expected)")
        }
      }
    }
    #expect(wrong.isEmpty, "\(wrong.count) pixels wrong: \(wrong.prefix(4))")
  }

  @Test("on a gradient base, pixels outside the overlay are the base's own, inside the overlay's")
  func placementOnGradient() {
    var base = RGBAImage(width: 64, height: 40)
    for y in 0..<40 {
      for x in 0..<64 { base[x, y] = RGBA(UInt8(x * 4), UInt8(y * 6), UInt8((x + y) % 256)) }
    }
    let colour = RGBA(1, 2, 3)
    let compositor = Compositor(width: 64, height: 40)
    compositor.render(
      base: base, baseKey: nil,
      overlays: [
        PlacedOverlay(image: RGBAImage(width: 7, height: 5, fill: colour), rect: .at(x: 20, y: 11))
      ])
    var wrong = 0
    for y in 0..<40 {
      for x in 0..<64 {
        let isInside = (20..<27).contains(x) && (11..<16).contains(y)
        if compositor.frame[x, y] != (isInside ? colour : base[x, y]) { wrong += 1 }
      }
    }
    #expect(wrong == 0)
  }

  @Test("an overlay-only redraw equals a full redraw, pixel for pixel")
  func overlayOnlyEqualsFull() {
    let base = TestSupport.pattern(width: 64, height: 40, opaque: true)
    let first = PlacedOverlay(
      image: TestSupport.pattern(width: 16, height: 12, seed: 1), rect: .at(x: 5, y: 5))
    let second = PlacedOverlay(
      image: TestSupport.pattern(width: 16, height: 12, seed: 9), rect: .at(x: 30.5, y: 20))
    let incremental = Compositor(width: 64, height: 40, featherWidth: 3)
    #expect(incremental.render(base: base, baseKey: Self.frame(0), overlays: [first]) == .full)
    #expect(
      incremental.render(base: base, baseKey: Self.frame(0), overlays: [second]) == .overlaysOnly)
    let fresh = Compositor(width: 64, height: 40, featherWidth: 3)
    #expect(fresh.render(base: base, baseKey: Self.frame(0), overlays: [second]) == .full)
    #expect(incremental.frame == fresh.frame)
    // A new key or no key redraws the base in full.
    #expect(incremental.render(base: base, baseKey: Self.frame(1), overlays: []) == .full)
    #expect(incremental.render(base: base, baseKey: nil, overlays: []) == .full)
    #expect(incremental.frame == base)
  }

  @Test("successive full renders reuse buffers without leaking earlier pixels")
  func bufferReuse() {
    let first = TestSupport.pattern(width: 64, height: 40, seed: 1, opaque: true)
    let second = TestSupport.pattern(width: 64, height: 40, seed: 5, opaque: true)
    let overlay = PlacedOverlay(
      image: TestSupport.pattern(width: 10, height: 10, seed: 3), rect: .at(x: 8, y: 8))
    for size in [(64, 40), (32, 20)] {
      let reused = Compositor(width: size.0, height: size.1, featherWidth: 2)
      reused.render(base: first, baseKey: Self.frame(0), overlays: [overlay])
      let held = reused.frame  // a reader holding the frame must keep its pixels
      reused.render(base: second, baseKey: Self.frame(1), overlays: [])
      let fresh = Compositor(width: size.0, height: size.1, featherWidth: 2)
      fresh.render(base: second, baseKey: Self.frame(1), overlays: [])
      #expect(reused.frame == fresh.frame)
      fresh.render(base: first, baseKey: Self.frame(0), overlays: [overlay])
      #expect(held == fresh.frame)
    }
  }

  @Test("an overlay-only redraw leaves pixels outside the overlays untouched")
  func overlayOnlyTouchesOverlayRegions() {
    let base = RGBAImage(width: 64, height: 40, fill: RGBA(10, 20, 30))
    let compositor = Compositor(width: 64, height: 40)
    let overlay = PlacedOverlay(
      image: RGBAImage(width: 8, height: 8, fill: RGBA(255, 0, 0)), rect: .at(x: 4, y: 4))
    compositor.render(base: base, baseKey: Self.frame(0), overlays: [overlay])
    #expect(compositor.frame[5, 5] == RGBA(255, 0, 0))
    compositor.render(base: base, baseKey: Self.frame(0), overlays: [])
    #expect(compositor.frame == base)
  }

  /// Porter-Duff "over" with straight alpha, in real numbers: what a pixel must be, worked out
  /// without the compositor's integer arithmetic (which may differ by rounding only).
  static func over(_ source: RGBA, _ destination: RGBA, mask: Double = 1) -> [Double] {
    let sa = Double(source.a) / 255 * mask
    let da = Double(destination.a) / 255
    let outA = sa + da * (1 - sa)
    func channel(_ s: UInt8, _ d: UInt8) -> Double {
      outA == 0 ? 0 : (Double(s) * sa + Double(d) * da * (1 - sa)) / outA
    }
    return [
      channel(source.r, destination.r), channel(source.g, destination.g),
      channel(source.b, destination.b), outA * 255,
    ]
  }

  static func within(_ pixel: RGBA, _ expected: [Double], _ tolerance: Double = 1) -> Bool {
    zip([pixel.r, pixel.g, pixel.b, pixel.a].map(Double.init), expected)
      .allSatisfy { abs($0 - $1) <= tolerance }
  }

  @Test(
    "translucent overlays blend by straight-alpha over, by hand-computed pixels",
    arguments: [
      (RGBA(255, 0, 0, 128), RGBA(0, 0, 255)), (RGBA(30, 200, 90, 1), RGBA(250, 10, 60)),
      (RGBA(30, 200, 90, 254), RGBA(250, 10, 60)), (RGBA(255, 0, 0, 128), RGBA(0, 255, 0, 64)),
      (RGBA(12, 34, 56, 200), RGBA(200, 100, 50, 0)), (RGBA(90, 90, 90, 0), RGBA(1, 2, 3, 77)),
    ])
  func translucentBlend(source: RGBA, destination: RGBA) {
    let compositor = Compositor(width: 16, height: 8, featherWidth: 0)
    compositor.render(
      base: RGBAImage(width: 16, height: 8, fill: destination), baseKey: nil,
      overlays: [
        PlacedOverlay(image: RGBAImage(width: 4, height: 4, fill: source), rect: .at(x: 6, y: 2))
      ])
    let expected = Self.over(source, destination)
    #expect(Self.within(compositor.frame[7, 3], expected), "\(compositor.frame[7, 3]) \(expected)")
    #expect(compositor.frame[0, 0] == destination)
    #expect(compositor.frame[10, 3] == destination)  // just right of the overlay
  }

  @Test("feathering follows its documented falloff: smoothstep of the distance inside the ellipse")
  func featherFalloff() {
    // A 31×21 rectangle at (10, 10): the ellipse's centre (25.5, 20.5) is a pixel centre, so
    // row 20 runs along its major axis. The distance inside is the first-order estimate
    // -F / |∇F| with F = x²/a² + y²/b² - 1, as documented, computed here independently.
    let feather = 6.0
    let base = RGBA(0, 0, 255)
    let colour = RGBA(255, 0, 0)
    let compositor = Compositor(width: 64, height: 40, featherWidth: feather)
    compositor.render(
      base: RGBAImage(width: 64, height: 40, fill: base), baseKey: nil,
      overlays: [
        PlacedOverlay(
          image: RGBAImage(width: 31, height: 21, fill: colour), rect: .at(x: 10, y: 10))
      ])
    let (a, b, cx, cy) = (15.5, 10.5, 25.5, 20.5)
    func expectedMask(_ x: Int, _ y: Int) -> Double {
      let dx = Double(x) + 0.5 - cx
      let dy = Double(y) + 0.5 - cy
      let f = dx * dx / (a * a) + dy * dy / (b * b) - 1
      let gradient = (4 * dx * dx / pow(a, 4) + 4 * dy * dy / pow(b, 4)).squareRoot()
      let t = gradient == 0 ? 1 : max(0, min(1, -f / gradient / feather))
      return t * t * (3 - 2 * t)
    }
    var wrong: [String] = []
    var previous = -1
    for x in 10..<41 {
      let pixel = compositor.frame[x, 20]
      let expected = Self.over(colour, base, mask: expectedMask(x, 20))
      // One step of the 8-bit mask on top of rounding.
      if !Self.within(pixel, expected, 2) { wrong.append("x \(x): \(pixel), not \(expected)") }
      // Red rises to the centre and falls after it, mirror-symmetric about x = 25.
      if x <= 25 {
        if Int(pixel.r) < previous { wrong.append("x \(x): red falls before the centre") }
        previous = Int(pixel.r)
      }
      if pixel != compositor.frame[50 - x, 20] { wrong.append("x \(x): not symmetric") }
    }
    // Past the feather inside, the overlay is opaque; every corner of the rectangle is base.
    #expect(compositor.frame[25, 20] == colour)
    #expect(compositor.frame[10, 10] == base && compositor.frame[40, 30] == base)
    #expect(wrong.isEmpty, "\(wrong.prefix(5))")
  }

  @Test("feathering: opaque at the centre, base colour at the rectangle's corners")
  func featherShape() {
    let base = RGBAImage(width: 64, height: 40, fill: RGBA(0, 0, 255))
    let overlay = PlacedOverlay(
      image: RGBAImage(width: 30, height: 20, fill: RGBA(255, 0, 0)), rect: .at(x: 10, y: 10))
    let soft = Compositor(width: 64, height: 40, featherWidth: 5)
    soft.render(base: base, baseKey: nil, overlays: [overlay])
    #expect(soft.frame[25, 20] == RGBA(255, 0, 0))
    #expect(soft.frame[10, 10] == RGBA(0, 0, 255))
    #expect(soft.frame[39, 29] == RGBA(0, 0, 255))
    // Halfway into the band on the horizontal axis: a mix.
    let mid = soft.frame[12, 20]
    #expect(mid.r > 20 && mid.r < 235 && mid.b > 20)
    let hard = Compositor(width: 64, height: 40, featherWidth: 0)
    hard.render(base: base, baseKey: nil, overlays: [overlay])
    #expect(hard.frame[10, 10] == RGBA(255, 0, 0))
    #expect(hard.frame[9, 10] == RGBA(0, 0, 255))
  }

  @Test("scaling the base: a half-size target averages 2×2 blocks")
  func baseScaling() throws {
    var base = RGBAImage(width: 4, height: 2, fill: RGBA(0, 0, 0))
    base[1, 0] = RGBA(200, 200, 200)
    base[0, 1] = RGBA(200, 200, 200)
    let compositor = Compositor(width: 2, height: 1)
    compositor.render(base: base, baseKey: nil, overlays: [])
    #expect(compositor.frame[0, 0] == RGBA(100, 100, 100))
    #expect(compositor.frame[1, 0] == RGBA(0, 0, 0))
  }

  @Test("overlays entirely outside the frame, degenerate or absurdly large are ignored")
  func degenerateOverlays() {
    let base = RGBAImage(width: 16, height: 16, fill: RGBA(1, 2, 3))
    let image = RGBAImage(width: 4, height: 4, fill: RGBA(255, 255, 255))
    let compositor = Compositor(width: 16, height: 16, featherWidth: 2)
    compositor.render(
      base: base, baseKey: nil,
      overlays: [
        PlacedOverlay(image: image, rect: .at(x: 100, y: 0)),
        PlacedOverlay(image: image, rect: .at(x: -10, y: -10)),
        PlacedOverlay(image: image, rect: .at(x: .nan, y: 2)),
        PlacedOverlay(image: image, rect: PlacementRect(x: 2, y: 2, width: 0.1, height: 4)),
        // Absurd sizes from a hostile server: skipped, not allocated.
        PlacedOverlay(image: image, rect: PlacementRect(x: 0, y: 0, width: 1e12, height: 1e12)),
        PlacedOverlay(image: image, rect: PlacementRect(x: 0, y: 0, width: 4, height: .infinity)),
      ])
    #expect(compositor.frame == base)
  }
}
