import Foundation
import LIVAMedia
import LIVAProtocol

/// Generates the sample avatar: a simple, friendly character (head and shoulders) drawn in
/// pure Swift, written as an ``AvatarPack``.
///
/// Animations (frame counts at the default configuration):
///
/// | animation | frames | fps | |
/// |---|---|---|---|
/// | `idle_1_s_idle_1_e`, `idle_1_e_idle_1_s` | 10 + 10 | 10 | a 2 s idle loop: sway, breathing, a blink |
/// | `idle_1_e_talking_1_s` | 8 | 30 | into talking (with mouth sprites) |
/// | `talking_1_s_talking_1_e`, `talking_1_e_talking_1_s` | 20 + 20 | 30 | a 1.33 s talking loop: nods, livelier motion |
/// | `talking_1_e_idle_1_s` | 8 | 30 | back to idle (with mouth sprites) |
/// | `idle_1_e_talking_2_s`, `talking_2_s_talking_2_e`, `talking_2_e_talking_2_s`, `talking_2_e_idle_1_s`, `talking_1_e_talking_2_s`, `talking_2_e_talking_1_s` | 8 + 20 + 20 + 8 + 8 + 8 | 30 | a second talking pose, leaning in, and the switches between the two (optional) |
/// | `idle_1_e_hi_1_s`, `hi_1_s_hi_1_e`, `hi_1_e_idle_1_s` | 8 + 24 + 8 | 30 | a wave (optional) |
///
/// With both options (the default) these are the 15 animations of the production set
/// (docs/Protocol.md).
///
/// **Key poses match exactly:** every animation's first frame is its start key pose and its
/// last frame its end key pose, drawn from the same pose parameters, so any walk of the
/// animation graph joins without a visible jump. Motion inside an animation is added on top
/// of the interpolation between its key poses and vanishes at both ends.
///
/// **Mouth sprites:** every frame of the speech animations (the talking loop and the
/// transitions into and out of it) has one sprite per ``Viseme``, drawn at that frame's mouth
/// position and covering the base frame's own mouth, with a soft elliptical edge.
///
/// Generation is deterministic. ``cachedPack(in:codec:progress:)`` reuses a pack made by the
/// same generator version at the same size and regenerates it otherwise.
public struct SampleAvatar: Sendable {
  /// The `generator` written into the manifest.
  public static let generatorName = "liva-sample-avatar"
  /// The generator's version: change it whenever the drawing or the animations change, so
  /// that cached packs are regenerated and clients refetch.
  public static let generatorVersion = "2"

  /// What to generate.
  public struct Configuration: Hashable, Sendable {
    /// Frame width in pixels (default 512).
    public var width: Int
    /// Frame height in pixels (default 512).
    public var height: Int
    /// Whether to include the greeting (`idle_1_e_hi_1_s`, `hi_1_s_hi_1_e`, `hi_1_e_idle_1_s`).
    public var includesGreeting: Bool
    /// Whether to include the second talking pose (`talking_2`) and the switches between the
    /// two talking poses.
    public var includesSecondTalkingPose: Bool
    /// Whether frames carry camera-like grain (a fixed fine texture and per-frame sensor
    /// noise), so that they compress as a filmed avatar's do rather than as flat cartoon
    /// colours (about 10× better). Sprites carry the same grain as their frame.
    public var photographic: Bool

    /// Creates a configuration.
    public init(
      width: Int = 512, height: Int = 512, includesGreeting: Bool = true,
      includesSecondTalkingPose: Bool = true, photographic: Bool = false
    ) {
      self.width = width
      self.height = height
      self.includesGreeting = includesGreeting
      self.includesSecondTalkingPose = includesSecondTalkingPose
      self.photographic = photographic
    }
  }

  /// The configuration.
  public let configuration: Configuration
  let renderer: CharacterRenderer

  /// Creates a generator. Throws `invalidArgument` for a frame size outside 16...4096.
  public init(configuration: Configuration = Configuration()) throws(LIVAServerError) {
    guard (16...4096).contains(configuration.width), (16...4096).contains(configuration.height)
    else {
      throw LIVAServerError(
        .invalidArgument,
        "a sample avatar is 16 to 4096 pixels wide and high, not "
          + "\(configuration.width)×\(configuration.height)")
    }
    self.configuration = configuration
    renderer = CharacterRenderer(width: configuration.width, height: configuration.height)
  }

  /// The version string of every animation: generator version, size, and `-photographic`
  /// for the grained variant.
  public var version: String {
    "sample-\(Self.generatorVersion)-\(configuration.width)x\(configuration.height)"
      + (configuration.photographic ? "-photographic" : "")
  }

  // MARK: - Drawing

  /// Draws one base frame.
  public func baseFrame(_ animation: AnimationName, frame: Int) throws(LIVAServerError)
    -> RGBAImage
  {
    renderer.frame(pose(try spec(animation, frame), frame))
  }

  /// Where the mouth of one base frame is (the placement of its sprites).
  public func mouthRect(_ animation: AnimationName, frame: Int) throws(LIVAServerError)
    -> PixelRect
  {
    renderer.mouthRect(pose(try spec(animation, frame), frame))
  }

  /// Draws the sprite of one viseme for one base frame (``mouthRect(_:frame:)``-sized).
  public func mouthSprite(_ animation: AnimationName, frame: Int, viseme: Viseme)
    throws(LIVAServerError) -> RGBAImage
  {
    let pose = pose(try spec(animation, frame), frame)
    return renderer.sprite(
      pose, mouth: .viseme(viseme, smile: pose.smile), rect: renderer.mouthRect(pose))
  }

  /// The manifest of the pack this generator writes.
  public func manifest() -> AvatarManifest {
    var animations: [String: AvatarManifest.Animation] = [:]
    for spec in specs {
      animations[spec.name.rawValue] = AvatarManifest.Animation(
        frames: spec.frames, version: version, fps: spec.fps, speech: spec.speech,
        mouths: (0..<spec.frames).map { renderer.mouthRect(pose(spec, $0)) })
    }
    return AvatarManifest(
      generator: Self.generatorName, generatorVersion: Self.generatorVersion,
      width: configuration.width, height: configuration.height, fps: 30,
      visemes: Viseme.allCases, animations: animations)
  }

}
