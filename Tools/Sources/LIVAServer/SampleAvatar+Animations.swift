import Foundation
import LIVAMedia
import LIVAProtocol

// SampleAvatar: the animations, their key poses and the pose of each frame.
extension SampleAvatar {
  struct Spec {
    var name: AnimationName
    var frames: Int
    var fps: Int
    var speech: Bool
    /// Motion added on top of the key-pose interpolation, zero at u = 0 and u = 1.
    var motion: @Sendable (_ pose: inout CharacterPose, _ u: Double, _ seconds: Double) -> Void
  }

  static let talking = Pose(state: "talking", number: 1)
  static let talking2 = Pose(state: "talking", number: 2)
  static let hi = Pose(state: "hi", number: 1)

  static let keyPoses: [KeyPose: CharacterPose] = [
    .idleStart: CharacterPose(headX: -0.005, tilt: -0.012, gazeX: -0.002),
    .idleEnd: CharacterPose(headX: 0.005, headY: 0.003, tilt: 0.012, bodyY: 0.002, gazeX: 0.002),
    KeyPose(talking, .start): CharacterPose(
      headX: 0.0, headY: -0.004, tilt: -0.02, brow: 0.003, smile: 0.5),
    KeyPose(talking, .end): CharacterPose(
      headX: 0.006, headY: -0.002, tilt: 0.018, brow: 0.002, smile: 0.5, gazeX: 0.001),
    KeyPose(talking2, .start): CharacterPose(
      headX: -0.004, headY: 0.002, tilt: -0.03, brow: 0.005, smile: 0.7, gazeX: -0.001),
    KeyPose(talking2, .end): CharacterPose(
      headX: 0.002, headY: 0.003, tilt: -0.01, brow: 0.004, smile: 0.7, gazeX: 0.001),
    KeyPose(hi, .start): CharacterPose(
      headX: 0.004, tilt: 0.03, brow: 0.007, smile: 1, hand: 1, wave: -0.2),
    KeyPose(hi, .end): CharacterPose(
      headX: 0.004, tilt: 0.03, brow: 0.007, smile: 1, hand: 1, wave: -0.2),
  ]

  static func bump(_ u: Double) -> Double { sin(Double.pi * u) }
  static func wave(_ u: Double, _ cycles: Double) -> Double {
    sin(2 * Double.pi * cycles * u)
  }
  /// A blink: 0 (closed) at `center` seconds, open again `halfWidth` seconds away.
  static func blink(_ seconds: Double, center: Double, halfWidth: Double = 0.15) -> Double {
    min(1, abs(seconds - center) / halfWidth)
  }

  var specs: [Spec] {
    let idle: @Sendable (inout CharacterPose, Double, Double) -> Void = { pose, u, _ in
      pose.bodyY += 0.003 * Self.bump(u)
      pose.headY += 0.002 * Self.bump(u)
    }
    var list: [Spec] = [
      Spec(name: .idleForward, frames: 10, fps: 10, speech: false) { pose, u, seconds in
        idle(&pose, u, seconds)
        pose.eyeOpen = Self.blink(seconds, center: 0.55)
      },
      Spec(name: .idleBack, frames: 10, fps: 10, speech: false, motion: idle),
      Spec(
        name: AnimationName(from: .idleEnd, to: KeyPose(Self.talking, .start)), frames: 8,
        fps: 30, speech: true
      ) { pose, u, _ in
        pose.brow += 0.003 * Self.bump(u)
      },
      Spec(
        name: AnimationName(from: KeyPose(Self.talking, .start), to: KeyPose(Self.talking, .end)),
        frames: 20, fps: 30, speech: true
      ) { pose, u, _ in
        pose.headY += 0.006 * Self.wave(u, 2)
        pose.tilt += 0.012 * Self.wave(u, 1)
        pose.brow += 0.004 * Self.bump(u)
      },
      Spec(
        name: AnimationName(from: KeyPose(Self.talking, .end), to: KeyPose(Self.talking, .start)),
        frames: 20, fps: 30, speech: true
      ) { pose, u, seconds in
        pose.headY += 0.005 * Self.wave(u, 2)
        pose.headX += 0.004 * Self.wave(u, 1)
        pose.eyeOpen = Self.blink(seconds, center: 0.3, halfWidth: 0.1)
      },
      Spec(
        name: AnimationName(from: KeyPose(Self.talking, .end), to: .idleStart), frames: 8,
        fps: 30, speech: true
      ) { _, _, _ in },
    ]
    if configuration.includesSecondTalkingPose {
      let talking = Self.talking
      let talking2 = Self.talking2
      let start2 = KeyPose(talking2, .start)
      let end2 = KeyPose(talking2, .end)
      list += [
        Spec(name: AnimationName(from: .idleEnd, to: start2), frames: 8, fps: 30, speech: true) {
          pose, u, _ in pose.brow += 0.004 * Self.bump(u)
        },
        Spec(name: AnimationName(from: start2, to: end2), frames: 20, fps: 30, speech: true) {
          pose, u, _ in
          pose.headY += 0.005 * Self.wave(u, 2)
          pose.tilt += 0.01 * Self.wave(u, 1)
        },
        Spec(name: AnimationName(from: end2, to: .idleStart), frames: 8, fps: 30, speech: true) {
          _, _, _ in
        },
        Spec(name: AnimationName(from: end2, to: start2), frames: 20, fps: 30, speech: true) {
          pose, u, seconds in
          pose.headX += 0.004 * Self.wave(u, 1)
          pose.eyeOpen = Self.blink(seconds, center: 0.4, halfWidth: 0.1)
        },
        Spec(
          name: AnimationName(from: KeyPose(talking, .end), to: start2), frames: 8, fps: 30,
          speech: true
        ) { _, _, _ in },
        Spec(
          name: AnimationName(from: end2, to: KeyPose(talking, .start)), frames: 8, fps: 30,
          speech: true
        ) { _, _, _ in },
      ]
    }
    if configuration.includesGreeting {
      list += [
        Spec(
          name: AnimationName(from: .idleEnd, to: KeyPose(Self.hi, .start)), frames: 8, fps: 30,
          speech: false
        ) { pose, u, _ in
          pose.brow += 0.004 * Self.bump(u)
        },
        Spec(
          name: AnimationName(from: KeyPose(Self.hi, .start), to: KeyPose(Self.hi, .end)),
          frames: 24, fps: 30, speech: false
        ) { pose, u, _ in
          pose.wave += 0.38 * Self.wave(u, 2)
          pose.headY += 0.003 * Self.wave(u, 1)
        },
        Spec(
          name: AnimationName(from: KeyPose(Self.hi, .end), to: .idleStart), frames: 8, fps: 30,
          speech: false
        ) { _, _, _ in },
      ]
    }
    return list
  }

  /// The animations, in the protocol's load-priority order.
  public var animations: [AnimationName] { specs.map(\.name) }

  /// The frame count of an animation, or nil when the sample avatar does not have it.
  public func frameCount(of animation: AnimationName) -> Int? {
    specs.first { $0.name == animation }?.frames
  }

  func spec(_ animation: AnimationName, _ frame: Int) throws(LIVAServerError) -> Spec {
    guard let spec = specs.first(where: { $0.name == animation }) else {
      throw LIVAServerError(.missingAnimation, "the sample avatar has no \(animation)")
    }
    guard (0..<spec.frames).contains(frame) else {
      throw LIVAServerError(
        .missingAnimation, "\(animation) has no frame \(frame) (it has \(spec.frames))")
    }
    return spec
  }

  /// The pose of one frame: its key poses interpolated (eased), plus the animation's own
  /// motion. The first and last frames are exactly the key poses.
  func pose(_ spec: Spec, _ frame: Int) -> CharacterPose {
    let start = Self.keyPoses[spec.name.from] ?? CharacterPose()
    let end = Self.keyPoses[spec.name.to] ?? CharacterPose()
    var pose: CharacterPose
    if frame == 0 {
      pose = start
    } else if frame == spec.frames - 1 {
      pose = end
    } else {
      let u = Double(frame) / Double(spec.frames - 1)
      pose = CharacterPose.mix(start, end, CharacterRenderer.smoothstep(0, 1, u))
      spec.motion(&pose, u, Double(frame) / Double(spec.fps))
    }
    if configuration.photographic {
      // One seed per frame (FNV-1a of the animation's name, then the index), never 0.
      var seed: UInt64 = 0xCBF2_9CE4_8422_2325
      for byte in spec.name.rawValue.utf8 { seed = (seed ^ UInt64(byte)) &* 0x100_0000_01B3 }
      pose.grain = CharacterRenderer.mixBits(seed ^ UInt64(frame)) | 1
    }
    return pose
  }
}
