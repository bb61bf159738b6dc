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
  static let snapshots = TestSupport.fixtures.appendingPathComponent("Snapshots")
  let codec = SystemImageCodec()

  @Test("snapshot matches its golden", arguments: SnapshotCase.all)
  func snapshot(_ scene: SnapshotCase) throws {
    let rendered = scene.render()
    let url = Self.snapshots.appendingPathComponent("\(scene.name).png")
    if ProcessInfo.processInfo.environment["LIVA_RECORD_SNAPSHOTS"] == "1" {
      try codec.encode(rendered, as: .png).write(to: url)
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

  @Test("an overlay-only redraw equals a full redraw, pixel for pixel")
  func overlayOnlyEqualsFull() {
    let base = TestSupport.pattern(width: 64, height: 40, opaque: true)
    let first = PlacedOverlay(
      image: TestSupport.pattern(width: 16, height: 12, seed: 1), rect: .at(x: 5, y: 5))
    let second = PlacedOverlay(
      image: TestSupport.pattern(width: 16, height: 12, seed: 9), rect: .at(x: 30.5, y: 20))
    let incremental = Compositor(width: 64, height: 40, featherWidth: 3)
    #expect(incremental.render(base: base, baseKey: "a/0", overlays: [first]) == .full)
    #expect(incremental.render(base: base, baseKey: "a/0", overlays: [second]) == .overlaysOnly)
    let fresh = Compositor(width: 64, height: 40, featherWidth: 3)
    #expect(fresh.render(base: base, baseKey: "a/0", overlays: [second]) == .full)
    #expect(incremental.frame == fresh.frame)
    // A new key or no key redraws the base in full.
    #expect(incremental.render(base: base, baseKey: "a/1", overlays: []) == .full)
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
      reused.render(base: first, baseKey: "a", overlays: [overlay])
      let held = reused.frame  // a reader holding the frame must keep its pixels
      reused.render(base: second, baseKey: "b", overlays: [])
      let fresh = Compositor(width: size.0, height: size.1, featherWidth: 2)
      fresh.render(base: second, baseKey: "b", overlays: [])
      #expect(reused.frame == fresh.frame)
      fresh.render(base: first, baseKey: "a", overlays: [overlay])
      #expect(held == fresh.frame)
    }
  }

  @Test("an overlay-only redraw leaves pixels outside the overlays untouched")
  func overlayOnlyTouchesOverlayRegions() {
    let base = RGBAImage(width: 64, height: 40, fill: RGBA(10, 20, 30))
    let compositor = Compositor(width: 64, height: 40)
    let overlay = PlacedOverlay(
      image: RGBAImage(width: 8, height: 8, fill: RGBA(255, 0, 0)), rect: .at(x: 4, y: 4))
    compositor.render(base: base, baseKey: "k", overlays: [overlay])
    #expect(compositor.frame[5, 5] == RGBA(255, 0, 0))
    compositor.render(base: base, baseKey: "k", overlays: [])
    #expect(compositor.frame == base)
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
