import Foundation
import LIVAMedia

/// Draws the sample character with signed-distance shapes and analytic anti-aliasing, in
/// pure Swift. Deterministic: the same pose and size always give the same pixels.
struct CharacterRenderer: Sendable {
  let width: Int
  let height: Int
  /// Pixels per normalized unit (the shorter side).
  private let scale: Double
  /// One pixel in normalized units.
  private let pixel: Double
  private let originX: Double
  private let originY: Double

  /// The mouth centre in head-local coordinates, and the half size of the sprite rectangle.
  static let mouthCenter = (x: 0.5, y: 0.566)
  static let mouthHalfSize = (x: 0.085, y: 0.075)
  /// Inside this normalized elliptical radius a sprite is opaque; it fades out to the edge.
  static let featherStart = 0.62
  /// The head turns about this point (the base of the neck).
  private static let pivot = (x: 0.5, y: 0.66)

  init(width: Int, height: Int) {
    self.width = width
    self.height = height
    scale = Double(min(width, height))
    pixel = 1 / scale
    originX = (Double(width) / scale - 1) / 2
    originY = (Double(height) / scale - 1) / 2
  }

  // MARK: - Public drawing

  /// A full base frame: the pose with its relaxed mouth.
  func frame(_ pose: CharacterPose) -> RGBAImage {
    var image = RGBAImage(width: width, height: height, fill: RGBA(0, 0, 0, 255))
    let mouth = MouthShape.rest(smile: pose.smile)
    image.pixels.withUnsafeMutableBufferPointer { buffer in
      for py in 0..<height {
        for px in 0..<width {
          let c = Self.grained(color(px, py, pose, mouth), px, py, pose.grain)
          let i = (py * width + px) * 4
          buffer[i] = Self.byte(c.r)
          buffer[i + 1] = Self.byte(c.g)
          buffer[i + 2] = Self.byte(c.b)
        }
      }
    }
    return image
  }

  /// Where the mouth of `pose` is in frame pixels: the sprite rectangle, clamped to the frame.
  func mouthRect(_ pose: CharacterPose) -> PixelRect {
    let center = toImage(Self.mouthCenter.x, Self.mouthCenter.y, pose)
    let cx = (center.x + originX) * scale
    let cy = (center.y + originY) * scale
    let hw = Self.mouthHalfSize.x * scale
    let hh = Self.mouthHalfSize.y * scale
    let x0 = max(0, min(width - 1, Int((cx - hw).rounded())))
    let y0 = max(0, min(height - 1, Int((cy - hh).rounded())))
    let x1 = max(x0 + 1, min(width, Int((cx + hw).rounded())))
    let y1 = max(y0 + 1, min(height, Int((cy + hh).rounded())))
    return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
  }

  /// A mouth sprite: the pose drawn with `mouth` inside `rect`, opaque in the middle and
  /// fading out toward the rectangle's edge (an elliptical feather).
  func sprite(_ pose: CharacterPose, mouth: MouthShape, rect: PixelRect) -> RGBAImage {
    var image = RGBAImage(width: rect.width, height: rect.height)
    let cx = Double(rect.width) / 2
    let cy = Double(rect.height) / 2
    image.pixels.withUnsafeMutableBufferPointer { buffer in
      for y in 0..<rect.height {
        for x in 0..<rect.width {
          let c = Self.grained(
            color(rect.x + x, rect.y + y, pose, mouth), rect.x + x, rect.y + y, pose.grain)
          let dx = (Double(x) + 0.5 - cx) / cx
          let dy = (Double(y) + 0.5 - cy) / cy
          let r = (dx * dx + dy * dy).squareRoot()
          let alpha = 1 - Self.smoothstep(Self.featherStart, 1, r)
          let i = (y * rect.width + x) * 4
          buffer[i] = Self.byte(c.r)
          buffer[i + 1] = Self.byte(c.g)
          buffer[i + 2] = Self.byte(c.b)
          buffer[i + 3] = Self.byte(alpha)
        }
      }
    }
    return image
  }

  // MARK: - Geometry

  /// Head-local point → image normalized point.
  private func toImage(_ x: Double, _ y: Double, _ pose: CharacterPose) -> (x: Double, y: Double) {
    let (s, c) = (sin(pose.tilt), cos(pose.tilt))
    let dx = x - Self.pivot.x
    let dy = y - Self.pivot.y
    return (
      Self.pivot.x + c * dx - s * dy + pose.headX, Self.pivot.y + s * dx + c * dy + pose.headY
    )
  }

  /// Image normalized point → head-local point.
  private func toHead(_ x: Double, _ y: Double, _ pose: CharacterPose) -> (x: Double, y: Double) {
    let (s, c) = (sin(pose.tilt), cos(pose.tilt))
    let dx = x - pose.headX - Self.pivot.x
    let dy = y - pose.headY - Self.pivot.y
    return (Self.pivot.x + c * dx + s * dy, Self.pivot.y - s * dx + c * dy)
  }

  // MARK: - Shading

  private typealias Color = (r: Double, g: Double, b: Double)

  private static let skin: Color = (0.99, 0.84, 0.73)
  private static let hair: Color = (0.33, 0.21, 0.16)
  private static let shirt: Color = (0.22, 0.55, 0.62)
  private static let lipColor: Color = (0.85, 0.44, 0.46)
  private static let lipLine: Color = (0.62, 0.27, 0.29)
  private static let mouthInside: Color = (0.36, 0.09, 0.12)
  private static let teeth: Color = (0.97, 0.96, 0.92)
  private static let tongueColor: Color = (0.87, 0.42, 0.46)
  private static let lash: Color = (0.18, 0.12, 0.10)

  private static func over(_ base: Color, _ top: Color, _ alpha: Double) -> Color {
    guard alpha > 0 else { return base }
    guard alpha < 1 else { return top }
    return (
      base.r + (top.r - base.r) * alpha, base.g + (top.g - base.g) * alpha,
      base.b + (top.b - base.b) * alpha
    )
  }

  private static func scaled(_ c: Color, _ f: Double) -> Color { (c.r * f, c.g * f, c.b * f) }

  /// `c` with camera-like grain when `seed` is nonzero: a fixed fine texture of about ±6 levels
  /// (the same in every frame, as skin, cloth and background detail are) and per-frame sensor
  /// noise of about ±3, luminance mostly. PNG then compresses a frame about as it does a
  /// photograph's, where the flat colours compress many times better.
  private static func grained(_ c: Color, _ px: Int, _ py: Int, _ seed: UInt64) -> Color {
    guard seed != 0 else { return c }
    let position =
      UInt64(UInt32(truncatingIfNeeded: px)) << 32
      | UInt64(UInt32(truncatingIfNeeded: py))
    let fixed = mixBits(position)
    let noise = mixBits(position ^ mixBits(seed))
    func unit(_ bits: UInt64, _ shift: UInt64) -> Double {
      Double((bits >> shift) & 0xFFFF) / 65535 - 0.5
    }
    let texture = (unit(fixed, 0) + unit(fixed, 16)) * 12 / 255
    let luma = (unit(noise, 0) + unit(noise, 16)) * 6 / 255
    let chroma = (r: unit(noise, 32) * 2 / 255, b: unit(noise, 48) * 2 / 255)
    let shift = texture + luma
    return (c.r + shift + chroma.r, c.g + shift, c.b + shift + chroma.b)
  }

  /// A 64-bit mix (splitmix64's finalizer): neighbouring inputs give unrelated outputs.
  static func mixBits(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  private static func byte(_ value: Double) -> UInt8 {
    UInt8(max(0, min(255, (value * 255).rounded())))
  }

  static func smoothstep(_ edge0: Double, _ edge1: Double, _ x: Double) -> Double {
    let t = max(0, min(1, (x - edge0) / (edge1 - edge0)))
    return t * t * (3 - 2 * t)
  }

  /// Coverage of a pixel by a shape whose signed distance (normalized units) is `distance`.
  private func cover(_ distance: Double) -> Double {
    max(0, min(1, 0.5 - distance / pixel))
  }

  /// Approximate signed distance to an axis-aligned ellipse.
  private static func ellipse(
    _ x: Double, _ y: Double, _ cx: Double, _ cy: Double, _ rx: Double, _ ry: Double
  ) -> Double {
    let dx = (x - cx) / rx
    let dy = (y - cy) / ry
    return ((dx * dx + dy * dy).squareRoot() - 1) * min(rx, ry)
  }

  /// Signed distance to a capsule (a segment with radius `r`).
  private static func capsule(
    _ x: Double, _ y: Double, _ ax: Double, _ ay: Double, _ bx: Double, _ by: Double,
    _ r: Double
  ) -> Double {
    let px = x - ax
    let py = y - ay
    let vx = bx - ax
    let vy = by - ay
    let t = max(0, min(1, (px * vx + py * vy) / (vx * vx + vy * vy)))
    let dx = px - vx * t
    let dy = py - vy * t
    return (dx * dx + dy * dy).squareRoot() - r
  }

  private func ellipseCover(
    _ x: Double, _ y: Double, _ cx: Double, _ cy: Double, _ rx: Double, _ ry: Double
  ) -> Double {
    let margin = 2 * pixel
    if abs(x - cx) > rx + margin || abs(y - cy) > ry + margin { return 0 }
    return cover(Self.ellipse(x, y, cx, cy, rx, ry))
  }

  /// The colour of pixel (`px`, `py`) for a pose drawn with a given mouth.
  private func color(_ px: Int, _ py: Int, _ pose: CharacterPose, _ mouth: MouthShape) -> Color {
    let x = (Double(px) + 0.5) / scale - originX
    let y = (Double(py) + 0.5) / scale - originY

    // Background: a soft vertical gradient with a glow behind the head.
    let t = max(0, min(1, y))
    var c: Color = (0.78 + 0.17 * t, 0.85 + 0.06 * t, 0.94 + 0.01 * t)
    let glowDistance = ((x - 0.5) * (x - 0.5) + (y - 0.42) * (y - 0.42)).squareRoot()
    let glow = max(0, 1 - glowDistance / 0.5)
    c = Self.over(c, (1, 0.98, 0.96), 0.35 * glow * glow)

    let bodyX = pose.headX * 0.35
    let bodyY = pose.bodyY

    // Neck, shaded darker under the chin.
    if abs(x - 0.5 - bodyX) < 0.09 && y > 0.55 {
      let neckTop = 0.6 + pose.headY * 0.5
      let d = Self.capsule(x, y, 0.5 + bodyX, neckTop, 0.5 + bodyX, 0.84 + bodyY, 0.064)
      let shade = 0.84 + 0.1 * Self.smoothstep(0.66, 0.72, y)
      c = Self.over(c, Self.scaled(Self.skin, shade), cover(d))
    }

    // Shirt with a rounded neckline and a collar trim.
    if y > 0.66 {
      var shirtCover = ellipseCover(x, y, 0.5 + bodyX, 1.02 + bodyY, 0.43, 0.31)
      if shirtCover > 0 {
        let neckline = Self.ellipse(x, y, 0.5 + bodyX, 0.735 + bodyY, 0.085, 0.058)
        shirtCover *= 1 - cover(neckline)
        let edge = abs(x - 0.5 - bodyX) / 0.43
        let shade = 1 - 0.18 * edge * edge
        var shirt = Self.scaled(Self.shirt, shade)
        // Collar trim: a lighter band just outside the neckline.
        let trim = cover(abs(neckline - 0.008) - 0.006)
        shirt = Self.over(shirt, (0.93, 0.95, 0.95), trim)
        c = Self.over(c, shirt, shirtCover)
      }
    }

    // The raised hand (the greeting), beside the head.
    if pose.hand > 0.001 {
      c = drawArm(x, y, pose, bodyX, bodyY, c)
    }

    // The head, in head-local coordinates.
    let head = toHead(x, y, pose)
    if abs(head.x - 0.5) < 0.26 && head.y > 0.14 && head.y < 0.7 {
      c = drawHead(head.x, head.y, pose, mouth, c)
    }
    return c
  }

  private func drawArm(
    _ x: Double, _ y: Double, _ pose: CharacterPose, _ bodyX: Double, _ bodyY: Double,
    _ base: Color
  ) -> Color {
    var c = base
    let shoulder = (x: 0.76 + bodyX, y: 0.9 + bodyY)
    let raise = Self.smoothstep(0, 1, pose.hand)
    let wrist = (x: 0.86 + (0.81 - 0.86) * raise, y: 1.3 + (0.62 - 1.3) * raise)
    // Sleeve.
    let sleeve = Self.capsule(x, y, shoulder.x, shoulder.y, wrist.x, wrist.y + 0.075, 0.042)
    c = Self.over(c, Self.scaled(Self.shirt, 0.9), cover(sleeve))
    // The hand, turned about the wrist by the wave.
    let (s, co) = (sin(-pose.wave), cos(-pose.wave))
    let dx = x - wrist.x
    let dy = y - wrist.y
    // Hand-local coordinates, the hand drawn 1.4 times its nominal size.
    let k = 1.4
    let hx = (co * dx - s * dy) / k
    let hy = (s * dx + co * dy) / k
    guard abs(hx) < 0.12, hy < 0.08, hy > -0.2 else { return c }
    var d = Self.ellipse(hx, hy, 0, -0.04, 0.042, 0.048)
    d = min(d, Self.capsule(hx, hy, 0, 0.0, 0, 0.05, 0.026))
    let fingers: [(Double, Double)] = [
      (-0.03, -0.115), (-0.01, -0.128), (0.011, -0.126), (0.03, -0.11),
    ]
    for (index, tip) in fingers.enumerated() {
      let baseX = -0.027 + Double(index) * 0.018
      d = min(d, Self.capsule(hx, hy, baseX, -0.06, tip.0, tip.1, 0.0095))
    }
    d = min(d, Self.capsule(hx, hy, -0.035, -0.02, -0.068, -0.06, 0.011))
    let shade = 0.95 - 0.06 * Self.smoothstep(-0.1, 0.02, hy)
    c = Self.over(c, Self.scaled(Self.skin, shade), cover(d * k))
    // A hint of the palm's crease lines.
    let crease = (abs(Self.ellipse(hx, hy, 0.0, -0.03, 0.022, 0.016)) - 0.0012) * k
    c = Self.over(c, Self.scaled(Self.skin, 0.82), 0.5 * cover(crease) * (hy > -0.03 ? 1 : 0))
    return c
  }

  private func drawHead(
    _ x: Double, _ y: Double, _ pose: CharacterPose, _ mouth: MouthShape, _ base: Color
  ) -> Color {
    var c = base
    // Hair behind the head: a bob, its lower edge curving up toward the sides.
    let side = (x - 0.5) / 0.228
    let hairBack =
      ellipseCover(x, y, 0.5, 0.43, 0.228, 0.262) * cover(y - 0.585 + 0.03 * side * side)
    c = Self.over(c, Self.hair, hairBack)
    // Ears.
    for side in [-1.0, 1.0] {
      let ear = ellipseCover(x, y, 0.5 + side * 0.186, 0.465, 0.03, 0.046)
      c = Self.over(c, Self.scaled(Self.skin, 0.93), ear)
    }
    // Face, shaded toward its edge.
    let faceDistance = Self.ellipse(x, y, 0.5, 0.445, 0.185, 0.225)
    let face = cover(faceDistance)
    guard face > 0 else { return c }
    let fx = (x - 0.47) / 0.185
    let fy = (y - 0.43) / 0.225
    let radial = fx * fx + fy * fy
    var skin = Self.scaled(Self.skin, 1 - 0.09 * radial * radial)
    // Cheeks.
    for side in [-1.0, 1.0] {
      let dx = x - 0.5 - side * 0.112
      let dy = y - 0.53
      let d = (dx * dx + dy * dy).squareRoot() / 0.05
      if d < 1 { skin = Self.over(skin, (0.98, 0.6, 0.6), 0.32 * (1 - d) * (1 - d)) }
    }
    // Nose: a soft shadow and a highlight.
    let nose = ellipseCover(x, y, 0.505, 0.503, 0.017, 0.011)
    skin = Self.over(skin, Self.scaled(Self.skin, 0.84), 0.55 * nose)
    c = Self.over(c, skin, face)

    // Fringe, kept inside the hair's outline.
    let fringe = max(
      ellipseCover(x, y, 0.45, 0.272, 0.2, 0.098), ellipseCover(x, y, 0.6, 0.262, 0.14, 0.088))
    if fringe > 0 {
      let inside = ellipseCover(x, y, 0.5, 0.43, 0.228, 0.262)
      let sheen = 1 + 0.12 * Self.smoothstep(0.05, 0, abs(y - 0.25 - (x - 0.5) * 0.3))
      c = Self.over(c, Self.scaled(Self.hair, sheen), fringe * inside)
    }

    // Eyes and brows.
    for side in [-1.0, 1.0] {
      c = drawEye(x, y, 0.5 + side * 0.074, 0.445, pose, c)
      let bx = 0.5 + side * 0.074
      let by = 0.388 - pose.brow
      let brow = Self.capsule(
        x, y, bx - side * 0.033, by + 0.006, bx + side * 0.03, by - 0.002, 0.0062)
      c = Self.over(c, Self.hair, cover(brow))
    }

    // Mouth.
    let mx = x - Self.mouthCenter.x
    let my = y - Self.mouthCenter.y
    if abs(mx) < 0.07 && abs(my) < 0.065 {
      c = drawMouth(mx, my, mouth, c)
    }
    return c
  }

  private func drawEye(
    _ x: Double, _ y: Double, _ cx: Double, _ cy: Double, _ pose: CharacterPose, _ base: Color
  ) -> Color {
    guard abs(x - cx) < 0.05 && abs(y - cy) < 0.045 else { return base }
    var c = base
    let open = max(0, min(1, pose.eyeOpen))
    let ry = 0.027 * open
    if ry > 0.0015 {
      let white = ellipseCover(x, y, cx, cy, 0.036, ry)
      if white > 0 {
        var eye: Color = (0.98, 0.98, 0.97)
        let ix = cx + pose.gazeX
        let iy = cy + pose.gazeY
        eye = Self.over(eye, (0.29, 0.46, 0.34), ellipseCover(x, y, ix, iy, 0.0185, 0.0185))
        eye = Self.over(eye, (0.08, 0.06, 0.06), ellipseCover(x, y, ix, iy, 0.0095, 0.0095))
        eye = Self.over(
          eye, (1, 1, 1), ellipseCover(x, y, ix - 0.006, iy - 0.007, 0.0045, 0.0045))
        c = Self.over(c, eye, white)
      }
    }
    // The upper lash line: the top of the eye outline; flat when the eye is closed.
    let lashRY = 0.029 * max(open, 0.06)
    let ring = abs(Self.ellipse(x, y, cx, cy, 0.038, lashRY)) - 0.0028
    let upper = Self.smoothstep(cy + 0.004, cy - 0.002, y)
    c = Self.over(c, Self.lash, cover(ring) * max(upper, open < 0.2 ? 1 : 0))
    return c
  }

  private func drawMouth(_ mx: Double, _ rawY: Double, _ shape: MouthShape, _ base: Color)
    -> Color
  {
    var c = base
    let w = shape.width
    // Bend: the corners lift with the smile.
    let u = max(-1.5, min(1.5, mx / w))
    let my = rawY + shape.smile * 0.012 * u * u
    if shape.open < 0.003 {
      // Closed: a lip line and a soft lower lip.
      let lower = ellipseCover(mx, my, 0, 0.011, w * 0.55, 0.0075)
      c = Self.over(c, Self.lipColor, 0.45 * lower)
      let line = Self.capsule(mx, my, -w, 0, w, 0, shape.lip * 0.5)
      c = Self.over(c, Self.lipLine, cover(line))
      return c
    }
    let outer = ellipseCover(mx, my, 0, 0, w + shape.lip * 0.35, shape.open + shape.lip)
    c = Self.over(c, Self.lipColor, outer)
    let innerDistance = Self.ellipse(mx, my, 0, 0, w, shape.open)
    let inner = cover(innerDistance)
    guard inner > 0 else { return c }
    var inside = Self.mouthInside
    if shape.tongue {
      let tongue =
        shape.tongueRaised
        ? ellipseCover(mx, my, 0, -shape.open * 0.15, w * 0.42, shape.open * 0.5)
        : ellipseCover(mx, my, 0, shape.open * 0.8, w * 0.6, shape.open * 0.55)
      inside = Self.over(inside, Self.tongueColor, tongue)
    }
    if shape.upperTeeth > 0 {
      inside = Self.over(inside, Self.teeth, cover(my - (-shape.open + shape.upperTeeth)))
    }
    if shape.lowerTeeth > 0 {
      inside = Self.over(
        inside, Self.scaled(Self.teeth, 0.94), cover(shape.open - shape.lowerTeeth - my))
    }
    c = Self.over(c, inside, inner)
    // A darker line where the lips meet the opening.
    c = Self.over(c, Self.lipLine, 0.6 * cover(abs(innerDistance) - 0.0012))
    return c
  }
}
