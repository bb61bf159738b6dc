import Foundation
import LIVA
import LIVAEngine
import LIVAPlatform
import LIVAProtocol
import LIVATestSupport
import Testing

@testable import LIVAMedia

/// A tiny avatar: 32×32 frames, each a flat colour encoding its animation and index, and 8×8
/// mouth sprites of a colour that encodes the frame they belong to.
struct FixtureAvatar {
  static let counts: [String: Int] = [
    "idle_1_s_idle_1_e": 6, "idle_1_e_idle_1_s": 6, "idle_1_e_talking_1_s": 4,
    "talking_1_s_talking_1_e": 12, "talking_1_e_talking_1_s": 12, "talking_1_e_idle_1_s": 4,
  ]
  static let size = 32
  let root: URL
  let store: BaseFrameStore

  /// - Parameter memoryByteLimit: the store's decoded-frame memory; `preload`: decode every
  ///   frame now (else only the player's window ever is).
  init(memoryByteLimit: Int = 64 << 20, preload: Bool = true) throws {
    root = FileManager.default.temporaryDirectory.appendingPathComponent(
      "liva-player-\(UUID().uuidString)")
    store = try BaseFrameStore(root: root, memoryByteLimit: memoryByteLimit)
    let codec = SystemImageCodec()
    for (text, count) in Self.counts.sorted(by: { $0.key < $1.key }) {
      let name = try AnimationName(parsing: text)
      try store.beginDownload(name, frames: count)
      for index in 0..<count {
        let image = RGBAImage(
          width: Self.size, height: Self.size, fill: Self.baseColour(text, index))
        try store.storeFrame(try codec.encode(image, as: .png), index: index, of: name)
      }
      try store.finishDownload(name, version: "1")
      if preload { try store.preload(name) }
    }
  }

  static func baseColour(_ animation: String, _ index: Int) -> RGBA {
    RGBA(UInt8(counts.keys.sorted().firstIndex(of: animation)! * 30), UInt8(index * 10), 40)
  }

  static let mouth = RGBA(250, 20, 200)

  static func sprite() throws -> Data {
    try SystemImageCodec().encode(RGBAImage(width: 8, height: 8, fill: mouth), as: .png)
  }
}

/// MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz, no padding), enough for frame-header timing.
func silentMP3(seconds: Double) -> Data {
  let frames = Int((seconds * 44_100 / 1152).rounded(.up))
  var data = Data()
  for _ in 0..<frames {
    var frame = [UInt8](repeating: 0, count: 417)
    frame[0] = 0xFF
    frame[1] = 0xFB
    frame[2] = 0x90
    frame[3] = 0x44
    data.append(contentsOf: frame)
  }
  return data
}

/// The base frames of a message, walking the fixture avatar's graph as production streams it:
/// into talking, then the talking ping-pong.
func wireWalk(_ count: Int) -> [(String, Int)] {
  var sequence: [(String, Int)] = (0..<4).map { ("idle_1_e_talking_1_s", $0) }
  var forward = true
  while sequence.count < count {
    let anim = forward ? "talking_1_s_talking_1_e" : "talking_1_e_talking_1_s"
    sequence += (0..<12).map { (anim, $0) }
    forward.toggle()
  }
  return Array(sequence.prefix(count))
}

/// Overlay frames for a message on ``wireWalk(_:)``.
func wireFrames(count: Int, tag: String) throws -> [OverlayFrame] {
  let sprite = try FixtureAvatar.sprite()
  return try wireWalk(count).enumerated().map { position, entry in
    OverlayFrame(
      overlayId: "\(entry.0)/\(entry.1)/\(tag).png",
      animationName: try AnimationName(parsing: entry.0),
      matchedSpriteFrameNumber: entry.1, sequenceIndex: position,
      coordinates: PlacementRect(x: 12, y: 20, width: 8, height: 8),
      image: EncodedImage(data: sprite, mimeType: "image/png"))
  }
}

/// A `receive_audio` of chunk `index` planning `frames` (their images come in batches), with
/// `seconds` of audio.
func planned(_ frames: [OverlayFrame], chunk index: Int, seconds: Double) -> ServerEvent {
  let plan = frames.map {
    var frame = $0
    frame.image = nil
    return frame
  }
  return .audioChunk(
    AudioChunk(
      audio: silentMP3(seconds: seconds), chunkIndex: index,
      animations: [ChunkAnimation(animationName: plan[0].animationName, sections: [plan])]))
}
