import Foundation
import LIVAProtocol

/// An integer rectangle in a base frame's pixels (origin top-left, y down), written
/// `[x, y, w, h]` in JSON.
public struct PixelRect: Hashable, Sendable, Codable, CustomStringConvertible {
  /// Left edge.
  public var x: Int
  /// Top edge.
  public var y: Int
  /// Width.
  public var width: Int
  /// Height.
  public var height: Int

  /// Creates a rectangle.
  public init(x: Int, y: Int, width: Int, height: Int) {
    self.x = x
    self.y = y
    self.width = width
    self.height = height
  }

  /// The same rectangle as the protocol's `coordinates`.
  public var placement: PlacementRect {
    PlacementRect(x: Double(x), y: Double(y), width: Double(width), height: Double(height))
  }

  /// Whether the rectangle is non-empty and lies within a `width`×`height` frame.
  public func isInside(width frameWidth: Int, height frameHeight: Int) -> Bool {
    width > 0 && height > 0 && x >= 0 && y >= 0 && x + width <= frameWidth
      && y + height <= frameHeight
  }

  /// Decodes `[x, y, w, h]`.
  public init(from decoder: any Decoder) throws {
    var container = try decoder.unkeyedContainer()
    x = try container.decode(Int.self)
    y = try container.decode(Int.self)
    width = try container.decode(Int.self)
    height = try container.decode(Int.self)
    guard container.isAtEnd else {
      throw DecodingError.dataCorruptedError(
        in: container, debugDescription: "a rectangle has exactly four numbers")
    }
  }

  /// Encodes `[x, y, w, h]`.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.unkeyedContainer()
    try container.encode(x)
    try container.encode(y)
    try container.encode(width)
    try container.encode(height)
  }

  /// `[x, y, w, h]`.
  public var description: String { "[\(x), \(y), \(width), \(height)]" }
}

/// The `manifest.json` of an avatar pack.
///
/// ```json
/// {
///   "format": 1, "generator": "liva-sample-avatar", "generator_version": "1",
///   "width": 512, "height": 512, "fps": 30,
///   "visemes": ["A", "B", "C", "D", "E", "F", "G", "H", "X"],
///   "animations": {
///     "idle_1_s_idle_1_e": {"frames": 10, "version": "sample-1-512x512", "fps": 10,
///                           "speech": false, "mouths": [[205, 255, 82, 64], ...]},
///     "talking_1_s_talking_1_e": {"frames": 20, "version": "...", "fps": 30,
///                                 "speech": true, "mouths": [...]}
///   }
/// }
/// ```
///
/// `animations.{name}.frames` and `.version` are exactly what the wire's
/// `base_animations_manifest` carries (see ``AvatarPack/wireManifest``); `fps` is the rate the
/// animation is meant to play at, `speech` says whether it has a mouth sprite for every viseme
/// on every frame, and `mouths[i]` is where frame `i`'s mouth is (the sprites' placement).
public struct AvatarManifest: Hashable, Sendable, Codable {
  /// The pack format this type reads and writes.
  public static let currentFormat = 1

  /// One base animation of the pack.
  public struct Animation: Hashable, Sendable, Codable {
    /// How many base frames it has.
    public var frames: Int
    /// Its version: a client's cached copy with another version is stale.
    public var version: String
    /// The rate it is meant to play at, frames per second.
    public var fps: Int
    /// Whether every frame has a mouth sprite for every viseme of the pack.
    public var speech: Bool
    /// Per frame, where the mouth is (and where the sprites go), in frame pixels.
    public var mouths: [PixelRect]

    /// Creates an entry.
    public init(frames: Int, version: String, fps: Int, speech: Bool, mouths: [PixelRect]) {
      self.frames = frames
      self.version = version
      self.fps = fps
      self.speech = speech
      self.mouths = mouths
    }
  }

  /// The pack format (``currentFormat``).
  public var format: Int
  /// What made the pack, e.g. `liva-sample-avatar`.
  public var generator: String
  /// The version of what made it; a cache regenerates when its generator's version changes.
  public var generatorVersion: String
  /// Frame width in pixels.
  public var width: Int
  /// Frame height in pixels.
  public var height: Int
  /// The speaking frame rate: overlay frame `k` of a chunk belongs at `k / fps` seconds.
  public var fps: Int
  /// The visemes that have sprites on every frame of the speech animations.
  public var visemes: [Viseme]
  /// The animations, by their wire name.
  public var animations: [String: Animation]

  /// Creates a manifest.
  public init(
    format: Int = AvatarManifest.currentFormat, generator: String, generatorVersion: String,
    width: Int, height: Int, fps: Int, visemes: [Viseme], animations: [String: Animation]
  ) {
    self.format = format
    self.generator = generator
    self.generatorVersion = generatorVersion
    self.width = width
    self.height = height
    self.fps = fps
    self.visemes = visemes
    self.animations = animations
  }

  enum CodingKeys: String, CodingKey {
    case format, generator, width, height, fps, visemes, animations
    case generatorVersion = "generator_version"
  }

  /// The manifest as pretty-printed JSON with sorted keys (stable bytes for equal manifests).
  public func jsonData() throws(LIVAServerError) -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    do {
      return try encoder.encode(self)
    } catch {
      throw LIVAServerError(.invalidPack, "the manifest cannot be encoded: \(error)")
    }
  }

  /// Parses and validates a manifest: the format is known, sizes are positive, every
  /// animation name follows the grammar, frame counts are positive and match the mouth
  /// lists, and every mouth rectangle lies inside the frame.
  public init(jsonData data: Data, location: String? = nil) throws(LIVAServerError) {
    let decoded: AvatarManifest
    do {
      decoded = try JSONDecoder().decode(AvatarManifest.self, from: data)
    } catch {
      throw LIVAServerError(.invalidPack, "malformed manifest: \(error)", location: location)
    }
    try decoded.validate(location: location)
    self = decoded
  }

  /// Throws ``LIVAServerError/Code-swift.struct/invalidPack`` naming the offending field when
  /// the manifest is inconsistent (see ``init(jsonData:location:)``).
  public func validate(location: String? = nil) throws(LIVAServerError) {
    func fail(_ message: String, _ field: String) -> LIVAServerError {
      LIVAServerError(
        .invalidPack, message, location: location.map { "\($0): \(field)" } ?? field)
    }
    guard format == Self.currentFormat else {
      throw fail("unknown pack format \(format)", "format")
    }
    guard (1...8192).contains(width), (1...8192).contains(height) else {
      throw fail("impossible frame size \(width)×\(height)", "width")
    }
    guard (1...240).contains(fps) else { throw fail("impossible frame rate \(fps)", "fps") }
    guard !animations.isEmpty else { throw fail("no animations", "animations") }
    for (name, entry) in animations.sorted(by: { $0.key < $1.key }) {
      let field = "animations.\(name.prefix(64))"
      do {
        _ = try AnimationName(parsing: name)
      } catch {
        throw fail(error.message, field)
      }
      guard (1...100_000).contains(entry.frames) else {
        throw fail("impossible frame count \(entry.frames)", "\(field).frames")
      }
      guard (1...240).contains(entry.fps) else {
        throw fail("impossible frame rate \(entry.fps)", "\(field).fps")
      }
      guard entry.mouths.count == entry.frames else {
        throw fail(
          "\(entry.mouths.count) mouth rectangles for \(entry.frames) frames", "\(field).mouths")
      }
      for (index, rect) in entry.mouths.enumerated()
      where !rect.isInside(width: width, height: height) {
        throw fail("mouth \(rect) is not inside the frame", "\(field).mouths[\(index)]")
      }
    }
  }
}
