import Foundation

/// The sample character's pose: every parameter the drawing depends on, in normalized units
/// (1 is the frame's shorter side) and radians.
struct CharacterPose: Hashable, Sendable {
  var headX = 0.0
  var headY = 0.0
  var tilt = 0.0
  var bodyY = 0.0
  var eyeOpen = 1.0
  var brow = 0.0
  var smile = 0.6
  var gazeX = 0.0
  var gazeY = 0.0
  var hand = 0.0
  var wave = 0.0
  /// Camera-like grain: 0 draws flat colour; any other value adds a fixed fine texture and
  /// sensor noise seeded by it (one seed per frame, the same for the frame's sprites).
  var grain: UInt64 = 0

  /// `a + (b - a) × t`, parameter by parameter.
  static func mix(_ a: CharacterPose, _ b: CharacterPose, _ t: Double) -> CharacterPose {
    func m(_ x: Double, _ y: Double) -> Double { x + (y - x) * t }
    return CharacterPose(
      headX: m(a.headX, b.headX), headY: m(a.headY, b.headY), tilt: m(a.tilt, b.tilt),
      bodyY: m(a.bodyY, b.bodyY), eyeOpen: m(a.eyeOpen, b.eyeOpen), brow: m(a.brow, b.brow),
      smile: m(a.smile, b.smile), gazeX: m(a.gazeX, b.gazeX), gazeY: m(a.gazeY, b.gazeY),
      hand: m(a.hand, b.hand), wave: m(a.wave, b.wave))
  }
}

/// A mouth shape in head-local normalized units, centred on the mouth.
struct MouthShape: Hashable, Sendable {
  /// Half width.
  var width: Double
  /// Half height of the opening; 0 is a closed mouth drawn as a line.
  var open: Double = 0
  /// Lip thickness.
  var lip: Double = 0.0065
  /// How far the upper teeth come down from the top of the opening.
  var upperTeeth: Double = 0
  /// How far the lower teeth come up from the bottom of the opening.
  var lowerTeeth: Double = 0
  /// Whether the tongue shows, and whether it is raised (the L shape).
  var tongue = false
  var tongueRaised = false
  /// Upward bend of the corners (0 straight, 1 a clear smile).
  var smile: Double

  /// The closed, relaxed mouth of the base frames (and of viseme X).
  static func rest(smile: Double) -> MouthShape { MouthShape(width: 0.044, smile: smile) }

  /// The mouth of a viseme, for a pose whose relaxed smile is `smile`.
  static func viseme(_ viseme: Viseme, smile: Double) -> MouthShape {
    switch viseme {
    case .x: return .rest(smile: smile)
    case .a: return MouthShape(width: 0.040, lip: 0.009, smile: smile * 0.3)
    case .b:
      return MouthShape(
        width: 0.044, open: 0.009, lip: 0.006, upperTeeth: 0.0095, lowerTeeth: 0.0095,
        smile: smile * 0.6)
    case .c:
      return MouthShape(
        width: 0.043, open: 0.021, upperTeeth: 0.007, tongue: true, smile: smile * 0.5)
    case .d:
      return MouthShape(
        width: 0.045, open: 0.034, upperTeeth: 0.007, tongue: true, smile: smile * 0.4)
    case .e:
      return MouthShape(
        width: 0.032, open: 0.025, upperTeeth: 0.005, tongue: true, smile: smile * 0.2)
    case .f: return MouthShape(width: 0.019, open: 0.013, lip: 0.0095, smile: 0)
    case .g:
      return MouthShape(
        width: 0.041, open: 0.010, lip: 0.008, upperTeeth: 0.013, smile: smile * 0.2)
    case .h:
      return MouthShape(
        width: 0.041, open: 0.024, upperTeeth: 0.006, tongue: true, tongueRaised: true,
        smile: smile * 0.4)
    }
  }
}
