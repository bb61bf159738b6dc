import Foundation

/// Encoded image bytes (WebP, PNG or JPEG) as received, not yet decoded.
public struct EncodedImage: Sendable, Hashable {
  /// The encoded bytes.
  public var data: Data
  /// The declared media type (`image_mime`, or the type of a `data:` URL), e.g.
  /// `"image/webp"`; nil when the server did not say. Decoders should sniff the bytes anyway.
  public var mimeType: String?

  /// Creates an encoded image.
  public init(data: Data, mimeType: String? = nil) {
    self.data = data
    self.mimeType = mimeType
  }
}

/// A frame object: one overlay (a mouth sprite) placed on one base frame.
public struct OverlayFrame: Sendable, Hashable {
  /// The content key: `overlay_id`, or `"{animation_name}/{matched_sprite_frame_number}/{sheet_filename}"`
  /// when the server sent none. The same id always means the same image.
  public var overlayId: String
  /// The base animation this frame belongs to (per frame: it can change inside a chunk).
  public var animationName: AnimationName
  /// The base frame this overlay is drawn on. Non-negative; checking it against the
  /// animation's frame count (and wrapping) is the engine's job.
  public var matchedSpriteFrameNumber: Int
  /// Position within the chunk, when sent.
  public var sequenceIndex: Int?
  /// Section within the chunk, when sent (or implied by the section the frame was listed in).
  public var sectionIndex: Int?
  /// Position within the section, when sent.
  public var frameIndex: Int?
  /// The sprite sheet file name, e.g. `J1_X2_M0.webp`, when sent.
  public var sheetFilename: String?
  /// The sprite folder number (`sprite_index_folder`, an int in production), when sent.
  /// Informational: a value that is not a whole number is dropped (and noted), never the frame.
  public var spriteIndexFolder: Int?
  /// Where to draw the overlay, `[x, y, w, h]`, when sent.
  public var coordinates: PlacementRect?
  /// The `zone_top_left` of the section the frame was listed in, when known: where to place
  /// the image at its natural size when ``coordinates`` is absent.
  public var zoneTopLeft: SIMD2<Double>?
  /// The phoneme class (`"vowel"`, ...), when sent.
  public var phonemeClass: String?
  /// The viseme label, when sent.
  public var viseme: String?
  /// The chunk the frame belongs to, when the event says so per frame.
  public var chunkIndex: Int?
  /// The encoded image, in the image events (`receive_frame_images_batch`,
  /// `receive_frame_image`); nil in animation plans, and nil in an image event when the
  /// image was rejected (see ``rejection``).
  public var image: EncodedImage?
  /// Why this frame object (or, in an image event, its image) was rejected; nil for a good
  /// frame. A rejected frame of a chunk plan keeps its slot (its 1/30 s) with no mouth: its
  /// ``overlayId`` is empty and ``matchedSpriteFrameNumber`` is -1. A frame of an image event
  /// whose image was rejected keeps its ``overlayId``, so the player knows the mouth will not
  /// come. The problem was also reported with the event's issues.
  public var rejection: LIVAProtocolError?

  /// Creates a frame object.
  public init(
    overlayId: String, animationName: AnimationName, matchedSpriteFrameNumber: Int,
    sequenceIndex: Int? = nil, sectionIndex: Int? = nil, frameIndex: Int? = nil,
    sheetFilename: String? = nil, spriteIndexFolder: Int? = nil,
    coordinates: PlacementRect? = nil, zoneTopLeft: SIMD2<Double>? = nil,
    phonemeClass: String? = nil, viseme: String? = nil, chunkIndex: Int? = nil,
    image: EncodedImage? = nil
  ) {
    self.overlayId = overlayId
    self.animationName = animationName
    self.matchedSpriteFrameNumber = matchedSpriteFrameNumber
    self.sequenceIndex = sequenceIndex
    self.sectionIndex = sectionIndex
    self.frameIndex = frameIndex
    self.sheetFilename = sheetFilename
    self.spriteIndexFolder = spriteIndexFolder
    self.coordinates = coordinates
    self.zoneTopLeft = zoneTopLeft
    self.phonemeClass = phonemeClass
    self.viseme = viseme
    self.chunkIndex = chunkIndex
    self.image = image
  }

  /// A frame object that was rejected: it keeps its place (and its time slot) in a chunk plan
  /// but has no mouth. `animationName` is the enclosing section's animation.
  public static func rejected(
    _ error: LIVAProtocolError, animationName: AnimationName, sectionIndex: Int? = nil
  ) -> OverlayFrame {
    var frame = OverlayFrame(
      overlayId: "", animationName: animationName, matchedSpriteFrameNumber: -1,
      sectionIndex: sectionIndex)
    frame.rejection = error
    return frame
  }

  /// Whether this frame object was rejected (see ``rejection``).
  public var isRejected: Bool { rejection != nil }

  /// The overlay id the protocol derives when a frame has none.
  public static func derivedOverlayId(
    animationName: AnimationName, matchedSpriteFrameNumber: Int, sheetFilename: String
  ) -> String {
    "\(animationName.rawValue)/\(matchedSpriteFrameNumber)/\(sheetFilename)"
  }

  /// Where to draw the overlay: ``coordinates`` when sent, else the section's
  /// ``zoneTopLeft`` at the image's natural size, else nil.
  public var placement: PlacementRect? {
    if let coordinates { return coordinates }
    if let zoneTopLeft { return .at(x: zoneTopLeft.x, y: zoneTopLeft.y) }
    return nil
  }
}

/// One animation section of a `receive_audio` chunk plan (an element of `animationFramesChunk`).
public struct ChunkAnimation: Sendable, Hashable {
  /// The section's base animation. Frames carry their own, which may differ.
  public var animationName: AnimationName
  /// The frames, section by section, in playback order.
  public var sections: [[OverlayFrame]]
  /// `zone_top_left`: where overlays without coordinates go.
  public var zoneTopLeft: SIMD2<Double>?
  /// The frame (at 30 fps, from the start of the message) at which this chunk starts.
  /// Uncertain semantics: a hint only.
  public var masterFramePlayAt: Int?
  /// The mode, e.g. `"talking"`.
  public var mode: String?

  /// Creates a chunk animation.
  public init(
    animationName: AnimationName, sections: [[OverlayFrame]], zoneTopLeft: SIMD2<Double>? = nil,
    masterFramePlayAt: Int? = nil, mode: String? = nil
  ) {
    self.animationName = animationName
    self.sections = sections
    self.zoneTopLeft = zoneTopLeft
    self.masterFramePlayAt = masterFramePlayAt
    self.mode = mode
  }
}

/// `receive_audio`: one chunk of speech, its audio and its animation plan.
public struct AudioChunk: Sendable, Hashable {
  /// The MP3 bytes of the chunk (`audio_data`).
  public var audio: Data
  /// 0-based within the current message; 0 starts a new message.
  public var chunkIndex: Int
  /// The global chunk index, when sent.
  public var masterChunkIndex: Int?
  /// How many overlay images this chunk has (`total_frame_images`); 0 when absent.
  public var totalFrameImages: Int
  /// Server time, `"YYYY-MM-DD HH:MM:SS.mmm"`, as sent.
  public var timestamp: String?
  /// The animation plan (`animationFramesChunk`); empty when absent.
  public var animations: [ChunkAnimation]
  /// An image to show at once (`first_frame_image`), when sent.
  public var firstFrameImage: FirstFrameImage?

  /// Creates an audio chunk.
  public init(
    audio: Data, chunkIndex: Int, masterChunkIndex: Int? = nil, totalFrameImages: Int = 0,
    timestamp: String? = nil, animations: [ChunkAnimation] = [],
    firstFrameImage: FirstFrameImage? = nil
  ) {
    self.audio = audio
    self.chunkIndex = chunkIndex
    self.masterChunkIndex = masterChunkIndex
    self.totalFrameImages = totalFrameImages
    self.timestamp = timestamp
    self.animations = animations
    self.firstFrameImage = firstFrameImage
  }

  /// Whether this chunk starts a new message (`chunk_index == 0`): everything older must go.
  public var startsNewMessage: Bool { chunkIndex == 0 }
}

/// `first_frame_image` of a `receive_audio` chunk.
public struct FirstFrameImage: Sendable, Hashable {
  /// The image.
  public var image: EncodedImage
  /// Its sprite sheet file name, when sent.
  public var sheetFilename: String?

  /// Creates a first-frame image.
  public init(image: EncodedImage, sheetFilename: String? = nil) {
    self.image = image
    self.sheetFilename = sheetFilename
  }
}

/// `receive_frame_images_batch`: up to 50 overlay images of one chunk.
public struct FrameImagesBatch: Sendable, Hashable {
  /// The frames, each with its ``OverlayFrame/image``.
  public var frames: [OverlayFrame]
  /// The chunk the images belong to.
  public var chunkIndex: Int
  /// The batch number within the chunk, when sent.
  public var batchIndex: Int?
  /// The index of the batch's first image within the chunk, when sent.
  public var batchStartIndex: Int?
  /// The batch size, when sent.
  public var batchSize: Int?
  /// How many batches the chunk has, when sent.
  public var totalBatches: Int?
  /// When the server emitted the batch, Unix milliseconds, when sent.
  public var emissionTimestamp: Double?

  /// Creates a batch.
  public init(
    frames: [OverlayFrame], chunkIndex: Int, batchIndex: Int? = nil, batchStartIndex: Int? = nil,
    batchSize: Int? = nil, totalBatches: Int? = nil, emissionTimestamp: Double? = nil
  ) {
    self.frames = frames
    self.chunkIndex = chunkIndex
    self.batchIndex = batchIndex
    self.batchStartIndex = batchStartIndex
    self.batchSize = batchSize
    self.totalBatches = totalBatches
    self.emissionTimestamp = emissionTimestamp
  }
}

/// `animation_chunk_metadata` (older variant): the plan of a chunk whose images come one by one.
public struct AnimationChunkMetadata: Sendable, Hashable {
  /// One section of the plan.
  public struct Section: Sendable, Hashable {
    /// The section's base animation.
    public var animationName: AnimationName
    /// Its frames in order.
    public var frames: [OverlayFrame]

    /// Creates a section.
    public init(animationName: AnimationName, frames: [OverlayFrame]) {
      self.animationName = animationName
      self.frames = frames
    }
  }

  /// The chunk.
  public var chunkIndex: Int
  /// How many images the chunk has; 0 when absent.
  public var totalFrameImages: Int
  /// The sections in order.
  public var sections: [Section]

  /// Creates chunk metadata.
  public init(chunkIndex: Int, totalFrameImages: Int, sections: [Section]) {
    self.chunkIndex = chunkIndex
    self.totalFrameImages = totalFrameImages
    self.sections = sections
  }
}

/// One entry of `base_animations_manifest`.
public struct BaseAnimationInfo: Sendable, Hashable {
  /// How many frames the animation has.
  public var frameCount: Int
  /// Its version, as sent (a number is kept as its decimal text); nil when absent.
  public var version: String?

  /// Creates an entry.
  public init(frameCount: Int, version: String? = nil) {
    self.frameCount = frameCount
    self.version = version
  }
}

/// `receive_base_frame`: one full frame of a base animation.
public struct BaseFrame: Sendable, Hashable {
  /// The animation (`animation_type`).
  public var animationName: AnimationName
  /// The frame's index.
  public var frameIndex: Int
  /// The image (`frame_data.data`).
  public var image: EncodedImage

  /// Creates a base frame.
  public init(animationName: AnimationName, frameIndex: Int, image: EncodedImage) {
    self.animationName = animationName
    self.frameIndex = frameIndex
    self.image = image
  }
}

/// A decoded server → client LIVA event.
public enum ServerEvent: Sendable, Hashable {
  /// `receive_audio`.
  case audioChunk(AudioChunk)
  /// `receive_frame_images_batch`.
  case frameImagesBatch(FrameImagesBatch)
  /// `chunk_images_ready`: every image of the chunk was sent.
  case chunkImagesReady(chunkIndex: Int, totalImagesSent: Int)
  /// `audio_end`: no more chunks for this message.
  case audioEnd
  /// `play_base_animation` or `play_animation`.
  case playBaseAnimation(AnimationName)
  /// `animation_chunk_metadata` (older variant).
  case animationChunkMetadata(AnimationChunkMetadata)
  /// `receive_frame_image` (older variant): one frame with its image and `chunk_index`.
  case frameImage(OverlayFrame)
  /// `base_animations_manifest`: the animations that exist and their versions.
  case baseAnimationsManifest([AnimationName: BaseAnimationInfo])
  /// `animation_total_frames`: announced before a base animation download.
  case animationTotalFrames(AnimationName, totalFrames: Int)
  /// `receive_base_frame`.
  case baseFrame(BaseFrame)
  /// `animation_frames_complete`.
  case animationFramesComplete(AnimationName)

  /// The wire names of every event this type decodes.
  public static let eventNames: Set<String> = [
    Wire.Event.receiveAudio, Wire.Event.receiveFrameImagesBatch, Wire.Event.chunkImagesReady,
    Wire.Event.audioEnd,
    Wire.Event.playBaseAnimation, Wire.Event.playAnimation, Wire.Event.animationChunkMetadata,
    Wire.Event.receiveFrameImage,
    Wire.Event.baseAnimationsManifest, Wire.Event.animationTotalFrames, Wire.Event.receiveBaseFrame,
    Wire.Event.animationFramesComplete,
  ]

  /// Decodes an event from its name and its Socket.IO arguments (the payload is the first),
  /// tolerantly, as docs/Protocol.md's "Bad input" asks: what playback needs is read strictly,
  /// informational fields tolerantly (a number where a string is expected and the other way
  /// round, `7.0` as 7, `null` and booleans as absent, unknown fields ignored), and a problem
  /// costs the smallest unit it can: a field's value, then a frame, then the event. Problems
  /// smaller than the event are appended to `issues` (their ``LIVAProtocolError/scope`` says
  /// what they cost); a rejected frame of a chunk plan keeps its slot (see
  /// ``OverlayFrame/rejection``).
  ///
  /// - Returns: nil when `name` is not a LIVA event (see ``eventNames``).
  /// - Throws: ``LIVAProtocolError`` (scope `event`) naming the event and the field path when
  ///   the event cannot be used at all: no payload object, a required event field (e.g.
  ///   `chunk_index`) missing or mistyped, more frames than the limit.
  public static func decode(
    name: String, arguments: [WireValue], limits: LIVAEventLimits = .default,
    issues: inout [LIVAProtocolError]
  ) throws(LIVAProtocolError) -> ServerEvent? {
    guard eventNames.contains(name) else { return nil }
    var reader = EventReader(event: name, limits: limits)
    if name == Wire.Event.audioEnd { return .audioEnd }
    guard let payload = arguments.first, payload != .null else {
      throw reader.error(.missingField, "the event has no payload", at: "")
    }
    let event = try reader.decode(payload)
    issues += reader.issues
    return event
  }

  /// Decodes an event as ``decode(name:arguments:limits:issues:)`` does, discarding the
  /// problems that cost less than the event.
  public static func decode(
    name: String, arguments: [WireValue], limits: LIVAEventLimits = .default
  ) throws(LIVAProtocolError) -> ServerEvent? {
    var ignored: [LIVAProtocolError] = []
    return try decode(name: name, arguments: arguments, limits: limits, issues: &ignored)
  }

  /// Decodes an event from its name and payload object.
  public static func decode(
    name: String, payload: WireValue, limits: LIVAEventLimits = .default
  ) throws(LIVAProtocolError) -> ServerEvent? {
    try decode(name: name, arguments: [payload], limits: limits)
  }
}
