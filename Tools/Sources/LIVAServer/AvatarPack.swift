import Foundation
import LIVAMedia
import LIVAProtocol

/// An avatar pack on disk: the base animations and mouth sprites a backend streams.
///
/// Layout under ``root``:
/// ```
/// manifest.json                                   (AvatarManifest; written last)
/// base/<animation>/frame_%04d.png                 (full base frames)
/// overlays/<animation>/<frame>/mouth_<V>.webp     (one sprite per viseme V, speech animations)
/// ```
/// A sprite's path under `overlays/` is exactly its protocol `overlay_id`,
/// `{animation}/{frame}/{sheet_filename}` (see ``overlayID(animation:frame:viseme:)``).
///
/// Loading validates the manifest (``AvatarManifest/validate(location:)``) but does not read
/// the images; ``verify(codec:)`` checks that every listed file exists and decodes.
public struct AvatarPack: Sendable {
  /// The pack's directory.
  public let root: URL
  /// The validated manifest.
  public let manifest: AvatarManifest
  /// The animations by validated name.
  public let animations: [AnimationName: AvatarManifest.Animation]

  /// The manifest's file name.
  public static let manifestFilename = "manifest.json"

  /// Loads and validates `root/manifest.json`.
  public init(loadingFrom root: URL) throws(LIVAServerError) {
    let url = root.appendingPathComponent(Self.manifestFilename)
    let data: Data
    do {
      data = try Data(contentsOf: url)
    } catch {
      throw LIVAServerError(
        .invalidPack, "no readable manifest: \(error.localizedDescription)", location: url.path)
    }
    try self.init(root: root, manifest: AvatarManifest(jsonData: data, location: url.path))
  }

  /// Wraps a manifest for the pack at `root` (validated; files are not read).
  public init(root: URL, manifest: AvatarManifest) throws(LIVAServerError) {
    try manifest.validate(location: root.appendingPathComponent(Self.manifestFilename).path)
    var animations: [AnimationName: AvatarManifest.Animation] = [:]
    for (name, entry) in manifest.animations {
      // Validated above: every name parses.
      guard let parsed = try? AnimationName(parsing: name) else { continue }
      animations[parsed] = entry
    }
    self.root = root
    self.manifest = manifest
    self.animations = animations
  }

  /// The animation graph of the pack (key poses as nodes, animations as edges).
  public var graph: AnimationGraph {
    AnimationGraph(frameCounts: animations.mapValues(\.frames))
  }

  /// The frame count of an animation, or nil when the pack does not have it.
  public func frameCount(of animation: AnimationName) -> Int? { animations[animation]?.frames }

  /// Whether an animation has a sprite for every viseme on every frame.
  public func carriesSpeech(_ animation: AnimationName) -> Bool {
    animations[animation]?.speech ?? false
  }

  /// Where frame `frame` of `animation` has its mouth, or nil when out of range.
  public func mouthRect(_ animation: AnimationName, frame: Int) -> PixelRect? {
    guard let entry = animations[animation], entry.mouths.indices.contains(frame) else {
      return nil
    }
    return entry.mouths[frame]
  }

  /// What the wire's `base_animations_manifest` carries: frame count and version per animation.
  public var wireManifest: [AnimationName: BaseAnimationInfo] {
    animations.mapValues { BaseAnimationInfo(frameCount: $0.frames, version: $0.version) }
  }

  /// The protocol's overlay id of a sprite: `{animation}/{frame}/{sheet_filename}`.
  public static func overlayID(animation: AnimationName, frame: Int, viseme: Viseme) -> String {
    OverlayFrame.derivedOverlayId(
      animationName: animation, matchedSpriteFrameNumber: frame,
      sheetFilename: viseme.sheetFilename)
  }

  /// The relative path of a base frame: `base/<animation>/frame_%04d.png`.
  public static func baseFramePath(_ animation: AnimationName, frame: Int) -> String {
    "base/\(animation.rawValue)/\(frameFilename(frame))"
  }

  /// The relative path of a mouth sprite: `overlays/<overlay id>`.
  public static func overlayPath(_ animation: AnimationName, frame: Int, viseme: Viseme)
    -> String
  {
    "overlays/" + overlayID(animation: animation, frame: frame, viseme: viseme)
  }

  /// `frame_%04d.png`.
  static func frameFilename(_ frame: Int) -> String {
    let digits = String(frame)
    return "frame_" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits + ".png"
  }

  /// The URL of a base frame (whether or not it exists).
  public func baseFrameURL(_ animation: AnimationName, frame: Int) -> URL {
    root.appendingPathComponent(Self.baseFramePath(animation, frame: frame))
  }

  /// The URL of a mouth sprite (whether or not it exists).
  public func overlayURL(_ animation: AnimationName, frame: Int, viseme: Viseme) -> URL {
    root.appendingPathComponent(Self.overlayPath(animation, frame: frame, viseme: viseme))
  }

  /// The PNG bytes of a base frame. Throws `missingAnimation` for an animation or frame the
  /// pack does not list, `ioFailure` when the file cannot be read.
  public func baseFrameData(_ animation: AnimationName, frame: Int) throws(LIVAServerError)
    -> Data
  {
    try checkFrame(animation, frame)
    return try Self.read(baseFrameURL(animation, frame: frame))
  }

  /// The WebP bytes of a mouth sprite. Throws `missingAnimation` for an animation, frame or
  /// viseme without a sprite, `ioFailure` when the file cannot be read.
  public func overlayData(_ animation: AnimationName, frame: Int, viseme: Viseme)
    throws(LIVAServerError) -> Data
  {
    try checkFrame(animation, frame)
    guard carriesSpeech(animation), manifest.visemes.contains(viseme) else {
      throw LIVAServerError(
        .missingAnimation, "\(animation) has no \(viseme.rawValue) mouth sprites",
        location: root.path)
    }
    return try Self.read(overlayURL(animation, frame: frame, viseme: viseme))
  }

  /// Checks that every base frame and every sprite the manifest lists exists, decodes, and
  /// has the right size (base frames: the pack's size; sprites: their mouth rectangle's).
  /// Returns the number of files checked.
  @discardableResult
  public func verify(codec: some ImageCodec = SystemImageCodec()) throws(LIVAServerError) -> Int {
    var checked = 0
    for (animation, entry) in animations.sorted(by: { $0.key < $1.key }) {
      for frame in 0..<entry.frames {
        let base = try decode(baseFrameData(animation, frame: frame), codec, "base frame")
        try expect(
          base, width: manifest.width, height: manifest.height,
          Self.baseFramePath(animation, frame: frame))
        checked += 1
        guard entry.speech else { continue }
        let rect = entry.mouths[frame]
        for viseme in manifest.visemes {
          let sprite = try decode(
            overlayData(animation, frame: frame, viseme: viseme), codec, "sprite")
          try expect(
            sprite, width: rect.width, height: rect.height,
            Self.overlayPath(animation, frame: frame, viseme: viseme))
          checked += 1
        }
      }
    }
    return checked
  }

  private func decode(_ data: Data, _ codec: some ImageCodec, _ what: String)
    throws(LIVAServerError) -> RGBAImage
  {
    do {
      return try codec.decode(data)
    } catch {
      throw LIVAServerError(.imageFailure, "a \(what) does not decode: \(error)")
    }
  }

  private func expect(_ image: RGBAImage, width: Int, height: Int, _ path: String)
    throws(LIVAServerError)
  {
    guard image.width == width, image.height == height else {
      throw LIVAServerError(
        .invalidPack, "\(image.width)×\(image.height), expected \(width)×\(height)",
        location: root.appendingPathComponent(path).path)
    }
  }

  private func checkFrame(_ animation: AnimationName, _ frame: Int) throws(LIVAServerError) {
    guard let count = frameCount(of: animation) else {
      throw LIVAServerError(
        .missingAnimation, "the pack has no animation \(animation)", location: root.path)
    }
    guard (0..<count).contains(frame) else {
      throw LIVAServerError(
        .missingAnimation, "\(animation) has no frame \(frame) (it has \(count))",
        location: root.path)
    }
  }

  static func read(_ url: URL) throws(LIVAServerError) -> Data {
    do {
      return try Data(contentsOf: url)
    } catch {
      throw LIVAServerError(
        .ioFailure, "cannot read: \(error.localizedDescription)", location: url.path)
    }
  }
}
