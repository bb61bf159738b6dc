import Foundation
import SocketIO

/// How the benchmark's images travel: as base64 strings in the JSON, or as binary attachments.
public enum SocketIOBenchMode: String, CaseIterable, Sendable {
  /// Images as base64 strings inside the event's JSON.
  case base64
  /// Images as Socket.IO binary attachments.
  case binary

  /// Reads `base64` or `binary`, in any case; nil for anything else.
  public init?(name: String) {
    self.init(rawValue: name.lowercased())
  }

  /// Whether images are sent as binary attachments.
  public var isBinary: Bool { self == .binary }

  /// The name in benchmark names and report lines: `Base64` or `Binary`.
  public var title: String { isBinary ? "Binary" : "Base64" }
}

/// The events the benchmark's server streams: `receive_frame_images_batch` events of 50 frames
/// with about 6 KB of (fake) WebP each, made as the python peer
/// (`scripts/interop/socketio_peer.py`) makes them.
public enum SocketIOBenchPayload {
  /// Distinct batches the server encodes once and sends in turn.
  public static let distinctBatches = 40
  /// Frames in each batch event.
  public static let framesPerEvent = 50
  /// Bytes of each frame's image, after decoding.
  public static let imageSize = 6_000

  /// Fake WebP bytes, as the python peer's `image_bytes(index, size)` makes them.
  public static func imageBytes(_ index: Int, size: Int) -> [UInt8] {
    let header = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBP".utf8)
    return header + (0..<(size - header.count)).map { UInt8((index * 7 + $0) % 256) }
  }

  /// One batch event's argument, as the python peer's `bench_batch(index, mode)` makes it.
  public static func batch(_ index: Int, mode: SocketIOBenchMode) -> JSONValue {
    let frames: [JSONValue] = (0..<framesPerEvent).map { i in
      let bytes = imageBytes(index * framesPerEvent + i, size: imageSize)
      return [
        "overlay_id": .string("talking_1_s_talking_1_e/\(i)/J1_X2_M\(i % 8).webp"),
        "animation_name": "talking_1_s_talking_1_e",
        "matched_sprite_frame_number": .number(Double(i)),
        "sheet_filename": .string("J1_X2_M\(i % 8).webp"), "sequence_index": .number(Double(i)),
        "section_index": 0, "frame_index": .number(Double(i)),
        "image_data": mode.isBinary
          ? .binary(bytes) : .string(Data(bytes).base64EncodedString()),
        "image_mime": "image/webp",
      ]
    }
    return [
      "frames": .array(frames), "chunk_index": .number(Double(index)), "batch_index": 0,
      "batch_start_index": 0, "batch_size": .number(Double(framesPerEvent)), "total_batches": 1,
      "emission_timestamp": 1_738_000_000_000,
    ]
  }
}
