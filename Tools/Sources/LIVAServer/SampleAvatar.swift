import Dispatch
import Foundation
import LIVAMedia
import LIVAProtocol
import Locking

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
  private let renderer: CharacterRenderer

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

  // MARK: - Animations

  private struct Spec {
    var name: AnimationName
    var frames: Int
    var fps: Int
    var speech: Bool
    /// Motion added on top of the key-pose interpolation, zero at u = 0 and u = 1.
    var motion: @Sendable (_ pose: inout CharacterPose, _ u: Double, _ seconds: Double) -> Void
  }

  private static let talking = Pose(state: "talking", number: 1)
  private static let talking2 = Pose(state: "talking", number: 2)
  private static let hi = Pose(state: "hi", number: 1)

  private static let keyPoses: [KeyPose: CharacterPose] = [
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

  private static func bump(_ u: Double) -> Double { sin(Double.pi * u) }
  private static func wave(_ u: Double, _ cycles: Double) -> Double {
    sin(2 * Double.pi * cycles * u)
  }
  /// A blink: 0 (closed) at `center` seconds, open again `halfWidth` seconds away.
  private static func blink(_ seconds: Double, center: Double, halfWidth: Double = 0.15) -> Double {
    min(1, abs(seconds - center) / halfWidth)
  }

  private var specs: [Spec] {
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

  private func spec(_ animation: AnimationName, _ frame: Int) throws(LIVAServerError) -> Spec {
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
  private func pose(_ spec: Spec, _ frame: Int) -> CharacterPose {
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

  // MARK: - Writing

  /// Writes the pack into `directory` (created if needed; existing files are overwritten),
  /// manifest last, and returns it. Frames are drawn on all cores. `progress` is called with
  /// (frames done, frames in all) from worker threads.
  @discardableResult
  public func write(
    to directory: URL, codec: some ImageCodec = SystemImageCodec(),
    progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil
  ) throws(LIVAServerError) -> AvatarPack {
    let manifest = manifest()
    let jobs = specs.flatMap { spec in (0..<spec.frames).map { (spec, $0) } }
    let state = WriteState()
    let pack = try AvatarPack(root: directory, manifest: manifest)
    DispatchQueue.concurrentPerform(iterations: jobs.count) { index in
      guard !state.failed else { return }
      let (spec, frame) = jobs[index]
      do {
        try writeFrame(spec, frame, into: directory, codec: codec)
        let done = state.finishOne()
        progress?(done, jobs.count)
      } catch {
        state.fail(error)
      }
    }
    if let error = state.error { throw error }
    try Self.write(
      manifest.jsonData(), to: directory.appendingPathComponent(AvatarPack.manifestFilename))
    return pack
  }

  private func writeFrame(_ spec: Spec, _ frame: Int, into directory: URL, codec: some ImageCodec)
    throws(LIVAServerError)
  {
    let pose = pose(spec, frame)
    let base = renderer.frame(pose)
    try Self.write(
      Self.encode(base, .png, codec),
      to: directory.appendingPathComponent(AvatarPack.baseFramePath(spec.name, frame: frame)))
    guard spec.speech else { return }
    let rect = renderer.mouthRect(pose)
    for viseme in Viseme.allCases {
      let sprite = renderer.sprite(pose, mouth: .viseme(viseme, smile: pose.smile), rect: rect)
      try Self.write(
        Self.encode(sprite, .webp, codec),
        to: directory.appendingPathComponent(
          AvatarPack.overlayPath(spec.name, frame: frame, viseme: viseme)))
    }
  }

  private static func encode(_ image: RGBAImage, _ format: ImageFormat, _ codec: some ImageCodec)
    throws(LIVAServerError) -> Data
  {
    do {
      return try codec.encode(image, as: format)
    } catch {
      throw LIVAServerError(.imageFailure, "cannot encode \(format.rawValue): \(error)")
    }
  }

  private static func write(_ data: Data, to url: URL) throws(LIVAServerError) {
    do {
      try FileManager.default.createDirectory(
        at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try data.write(to: url, options: .atomic)
    } catch {
      throw LIVAServerError(
        .ioFailure, "cannot write: \(error.localizedDescription)", location: url.path)
    }
  }

  // MARK: - Cache

  /// The directory name of this generator's pack inside a cache directory, e.g.
  /// `sample-avatar-512x512`.
  public var cacheDirectoryName: String {
    "sample-avatar-\(configuration.width)x\(configuration.height)"
      + (configuration.photographic ? "-photographic" : "")
  }

  /// The pack in `cacheDirectory`, generated when it is missing, unreadable, or made by
  /// another generator version (or greeting setting).
  ///
  /// A new pack is written into a temporary sibling directory and renamed into place, so a
  /// crash or a concurrent generation never leaves a half pack under the final name. A stale
  /// pack is first renamed aside (one atomic step) and removed there, so that a process
  /// regenerating the same cache at the same time never reads a half-removed pack nor
  /// removes one that is current; when another process's pack landed first, it is used.
  public func cachedPack(
    in cacheDirectory: URL, codec: some ImageCodec = SystemImageCodec(),
    progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil
  ) throws(LIVAServerError) -> AvatarPack {
    let target = cacheDirectory.appendingPathComponent(cacheDirectoryName)
    if let existing = currentPack(at: target) { return existing }
    let fileManager = FileManager.default
    let temporary = cacheDirectory.appendingPathComponent(
      ".\(cacheDirectoryName).tmp-\(UUID().uuidString)")
    defer { try? fileManager.removeItem(at: temporary) }
    try write(to: temporary, codec: codec, progress: progress)
    var lastError: (any Error)?
    // Each round either puts this pack in place or finds why not; a few rounds cover other
    // processes' moves landing in between.
    for _ in 0..<4 {
      if let existing = currentPack(at: target) { return existing }
      if fileManager.fileExists(atPath: target.path) {
        let aside = cacheDirectory.appendingPathComponent(
          ".\(cacheDirectoryName).stale-\(UUID().uuidString)")
        // Fails when another process moved it first: then there is nothing to remove.
        if (try? fileManager.moveItem(at: target, to: aside)) != nil {
          try? fileManager.removeItem(at: aside)
        }
      }
      do {
        try fileManager.moveItem(at: temporary, to: target)
        return try AvatarPack(loadingFrom: target)
      } catch {
        lastError = error  // another process's pack landed first: the next round looks at it
      }
    }
    if let existing = currentPack(at: target) { return existing }
    throw LIVAServerError(
      .ioFailure,
      "cannot move the new pack into place: \(lastError.map { "\($0)" } ?? "")",
      location: target.path)
  }

  /// The pack at `directory` when it is readable and current.
  private func currentPack(at directory: URL) -> AvatarPack? {
    guard let pack = try? AvatarPack(loadingFrom: directory), isCurrent(pack) else { return nil }
    return pack
  }

  /// Whether a pack was made by this generator, version and configuration.
  public func isCurrent(_ pack: AvatarPack) -> Bool {
    pack.manifest.generator == Self.generatorName
      && pack.manifest.generatorVersion == Self.generatorVersion
      && pack.manifest.width == configuration.width
      && pack.manifest.height == configuration.height
      && Set(pack.animations.keys) == Set(animations)
      && pack.animations.values.allSatisfy { $0.version == version }
  }
}

/// Progress and the first error of a parallel write.
private final class WriteState: Sendable {
  private let state = Locked<(done: Int, firstError: LIVAServerError?)>((0, nil))

  var failed: Bool { state.withLock { $0.firstError != nil } }
  var error: LIVAServerError? { state.withLock { $0.firstError } }

  func finishOne() -> Int {
    state.withLock {
      $0.done += 1
      return $0.done
    }
  }

  func fail(_ error: any Error) {
    let converted =
      error as? LIVAServerError ?? LIVAServerError(.ioFailure, "\(error)")
    state.withLock { if $0.firstError == nil { $0.firstError = converted } }
  }
}
