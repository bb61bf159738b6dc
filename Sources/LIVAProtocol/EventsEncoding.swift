import Foundation

/// How bytes (audio, images) travel in a server event.
public enum BinaryEncoding: String, Hashable, Sendable, CaseIterable {
  /// A base64 string in the JSON.
  case base64
  /// A Socket.IO binary attachment (``WireValue/binary(_:)``).
  case binary
}

/// A server → client LIVA event: its wire name and payload, ready to emit.
///
/// The encoding half of the one LIVA codec: the static constructors write the field names and
/// types exactly as docs/Protocol.md gives them (production's types: ints as JSON numbers,
/// `sprite_index_folder` an int, frames without `overlay_id` when it is the derived one), and
/// everything they write decodes back with ``ServerEvent/decode(name:payload:limits:)``, which
/// is the other half. The reference backend and the tests use it.
public struct OutgoingEvent: Hashable, Sendable {
  /// The event name on the wire.
  public var name: String
  /// The payload object.
  public var payload: WireValue

  /// Creates an event from raw parts (prefer the static constructors).
  public init(name: String, payload: WireValue) {
    self.name = name
    self.payload = payload
  }

  static func bytes(_ data: Data, _ encoding: BinaryEncoding) -> WireValue {
    encoding == .binary ? .binary(data) : .string(data.base64EncodedString())
  }

  static func int(_ value: Int) -> WireValue { .number(Double(value)) }

  /// `receive_audio`: a chunk's audio and animation plan.
  public static func receiveAudio(_ chunk: AudioChunk, encoding: BinaryEncoding) -> OutgoingEvent {
    var payload: [String: WireValue] = [
      Wire.Field.audioData: bytes(chunk.audio, encoding),
      Wire.Field.chunkIndex: int(chunk.chunkIndex),
      Wire.Field.totalFrameImages: int(chunk.totalFrameImages),
      Wire.Field.animationFramesChunk: .array(chunk.animations.map(chunkAnimation)),
    ]
    if let master = chunk.masterChunkIndex { payload[Wire.Field.masterChunkIndex] = int(master) }
    if let timestamp = chunk.timestamp { payload[Wire.Field.timestamp] = .string(timestamp) }
    if let first = chunk.firstFrameImage {
      var members: [String: WireValue] = [Wire.Field.imageData: bytes(first.image.data, encoding)]
      if let mime = first.image.mimeType { members[Wire.Field.imageMime] = .string(mime) }
      if let sheet = first.sheetFilename { members[Wire.Field.sheetFilename] = .string(sheet) }
      payload[Wire.Field.firstFrameImage] = .object(members)
    }
    return OutgoingEvent(name: Wire.Event.receiveAudio, payload: .object(payload))
  }

  /// `receive_frame_images_batch`: up to 50 overlay images of a chunk. `emissionTimestamp`
  /// (Unix milliseconds) overrides the batch's own when given.
  public static func frameImagesBatch(
    _ batch: FrameImagesBatch, encoding: BinaryEncoding, emissionTimestamp: Double? = nil
  ) -> OutgoingEvent {
    var payload: [String: WireValue] = [
      Wire.Field.frames: .array(batch.frames.map { frame(withImage: $0, encoding: encoding) }),
      Wire.Field.chunkIndex: int(batch.chunkIndex),
    ]
    if let value = batch.batchIndex { payload[Wire.Field.batchIndex] = int(value) }
    if let value = batch.batchStartIndex { payload[Wire.Field.batchStartIndex] = int(value) }
    if let value = batch.batchSize { payload[Wire.Field.batchSize] = int(value) }
    if let value = batch.totalBatches { payload[Wire.Field.totalBatches] = int(value) }
    if let value = emissionTimestamp ?? batch.emissionTimestamp {
      payload[Wire.Field.emissionTimestamp] = .number(value)
    }
    return OutgoingEvent(name: Wire.Event.receiveFrameImagesBatch, payload: .object(payload))
  }

  /// `animation_chunk_metadata` (older variant) — `{chunk_index, total_frame_images,
  /// sections: [{animation_name, frames}]}`.
  public static func animationChunkMetadata(_ metadata: AnimationChunkMetadata) -> OutgoingEvent {
    OutgoingEvent(
      name: Wire.Event.animationChunkMetadata,
      payload: [
        Wire.Field.chunkIndex: int(metadata.chunkIndex),
        Wire.Field.totalFrameImages: int(metadata.totalFrameImages),
        Wire.Field.sections: .array(
          metadata.sections.map { section in
            [
              Wire.Field.animationName: .string(section.animationName.rawValue),
              Wire.Field.frames: .array(section.frames.map { frame($0) }),
            ]
          }),
      ])
  }

  /// `receive_frame_image` (older variant) — one frame object with its image and
  /// `chunk_index` (the frame's own, which must be set).
  public static func frameImage(_ frame: OverlayFrame, encoding: BinaryEncoding) -> OutgoingEvent {
    OutgoingEvent(
      name: Wire.Event.receiveFrameImage, payload: self.frame(withImage: frame, encoding: encoding))
  }

  /// `chunk_images_ready` — `{chunk_index, total_images_sent}`.
  public static func chunkImagesReady(chunkIndex: Int, totalImagesSent: Int) -> OutgoingEvent {
    OutgoingEvent(
      name: Wire.Event.chunkImagesReady,
      payload: [
        Wire.Field.chunkIndex: int(chunkIndex), Wire.Field.totalImagesSent: int(totalImagesSent),
      ])
  }

  /// `audio_end` — `{}`.
  public static let audioEnd = OutgoingEvent(name: Wire.Event.audioEnd, payload: .object([:]))

  /// `play_base_animation` — `{animation_name}`.
  public static func playBaseAnimation(_ animation: AnimationName) -> OutgoingEvent {
    OutgoingEvent(
      name: Wire.Event.playBaseAnimation,
      payload: [Wire.Field.animationName: .string(animation.rawValue)])
  }

  /// `base_animations_manifest` — `{animations: {name: {frames, version}}}`.
  public static func baseAnimationsManifest(_ animations: [AnimationName: BaseAnimationInfo])
    -> OutgoingEvent
  {
    var members: [String: WireValue] = [:]
    for (name, info) in animations {
      var entry: [String: WireValue] = [Wire.Field.frames: int(info.frameCount)]
      if let version = info.version { entry[Wire.Field.version] = .string(version) }
      members[name.rawValue] = .object(entry)
    }
    return OutgoingEvent(
      name: Wire.Event.baseAnimationsManifest, payload: [Wire.Field.animations: .object(members)])
  }

  /// `animation_total_frames` — `{animation_type, total_frames}`.
  public static func animationTotalFrames(_ animation: AnimationName, totalFrames: Int)
    -> OutgoingEvent
  {
    OutgoingEvent(
      name: Wire.Event.animationTotalFrames,
      payload: [
        Wire.Field.animationType: .string(animation.rawValue),
        Wire.Field.totalFrames: int(totalFrames),
      ])
  }

  /// `receive_base_frame` — `{animation_type, frame_index, frame_data: {data}}`, the image as a
  /// data URL (`data:image/png;base64,...`) as production sends it.
  public static func receiveBaseFrame(
    _ animation: AnimationName, frameIndex: Int, image: Data, mimeType: String = "image/png"
  ) -> OutgoingEvent {
    OutgoingEvent(
      name: Wire.Event.receiveBaseFrame,
      payload: [
        Wire.Field.animationType: .string(animation.rawValue),
        Wire.Field.frameIndex: int(frameIndex),
        Wire.Field.frameData: [
          Wire.Field.data: .string("data:\(mimeType);base64,\(image.base64EncodedString())")
        ],
      ])
  }

  /// `animation_frames_complete` — `{animation_type}`.
  public static func animationFramesComplete(_ animation: AnimationName) -> OutgoingEvent {
    OutgoingEvent(
      name: Wire.Event.animationFramesComplete,
      payload: [Wire.Field.animationType: .string(animation.rawValue)])
  }

  // MARK: - Frame objects

  static func chunkAnimation(_ animation: ChunkAnimation) -> WireValue {
    var members: [String: WireValue] = [
      Wire.Field.animationName: .string(animation.animationName.rawValue),
      Wire.Field.sections: .array(animation.sections.map { .array($0.map { frame($0) }) }),
    ]
    if let zone = animation.zoneTopLeft {
      members[Wire.Field.zoneTopLeft] = [.number(zone.x), .number(zone.y)]
    }
    if let play = animation.masterFramePlayAt { members[Wire.Field.masterFramePlayAt] = int(play) }
    if let mode = animation.mode { members[Wire.Field.mode] = .string(mode) }
    return .object(members)
  }

  /// A frame object without its image (as in `animationFramesChunk`).
  static func frame(_ frame: OverlayFrame) -> WireValue { .object(frameMembers(frame)) }

  static func frame(withImage frame: OverlayFrame, encoding: BinaryEncoding) -> WireValue {
    var members = frameMembers(frame)
    if let image = frame.image {
      members[Wire.Field.imageData] = bytes(image.data, encoding)
      if let mime = image.mimeType { members[Wire.Field.imageMime] = .string(mime) }
    }
    return .object(members)
  }

  private static func frameMembers(_ frame: OverlayFrame) -> [String: WireValue] {
    var members: [String: WireValue] = [
      Wire.Field.animationName: .string(frame.animationName.rawValue),
      Wire.Field.matchedSpriteFrameNumber: int(frame.matchedSpriteFrameNumber),
    ]
    // Production omits `overlay_id`; the client derives it from these fields. It is written
    // only when it differs from the derived one.
    if frame.sheetFilename.map({
      OverlayFrame.derivedOverlayId(
        animationName: frame.animationName,
        matchedSpriteFrameNumber: frame.matchedSpriteFrameNumber, sheetFilename: $0)
    }) != frame.overlayId {
      members[Wire.Field.overlayId] = .string(frame.overlayId)
    }
    if let value = frame.sequenceIndex { members[Wire.Field.sequenceIndex] = int(value) }
    if let value = frame.sectionIndex { members[Wire.Field.sectionIndex] = int(value) }
    if let value = frame.frameIndex { members[Wire.Field.frameIndex] = int(value) }
    if let value = frame.sheetFilename { members[Wire.Field.sheetFilename] = .string(value) }
    if let value = frame.spriteIndexFolder { members[Wire.Field.spriteIndexFolder] = int(value) }
    if let rect = frame.coordinates {
      members[Wire.Field.coordinates] = [
        .number(rect.x), .number(rect.y), .number(rect.width), .number(rect.height),
      ]
    }
    if let value = frame.phonemeClass { members[Wire.Field.phonemeClass] = .string(value) }
    if let value = frame.viseme { members[Wire.Field.viseme] = .string(value) }
    if let value = frame.chunkIndex { members[Wire.Field.chunkIndex] = int(value) }
    return members
  }
}
