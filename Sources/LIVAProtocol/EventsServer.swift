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
    "receive_audio", "receive_frame_images_batch", "chunk_images_ready", "audio_end",
    "play_base_animation", "play_animation", "animation_chunk_metadata", "receive_frame_image",
    "base_animations_manifest", "animation_total_frames", "receive_base_frame",
    "animation_frames_complete",
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
    if name == "audio_end" { return .audioEnd }
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

extension EventReader {
  fileprivate mutating func decode(_ payload: WireValue) throws(LIVAProtocolError) -> ServerEvent {
    let root = try object(payload, at: "")
    switch event {
    case "receive_audio": return .audioChunk(try audioChunk(root))
    case "receive_frame_images_batch": return .frameImagesBatch(try batch(root))
    case "chunk_images_ready":
      return .chunkImagesReady(
        chunkIndex: try requiredIndex(root, "chunk_index", in: ""),
        totalImagesSent: informationalInt(root["total_images_sent"], "total_images_sent", in: "")
          ?? 0)
    case "play_base_animation", "play_animation":
      return .playBaseAnimation(try requiredAnimationName(root, "animation_name", in: ""))
    case "animation_chunk_metadata": return .animationChunkMetadata(try chunkMetadata(root))
    case "receive_frame_image":
      let chunkIndex = try requiredIndex(root, "chunk_index", in: "")
      // The event is this one frame: a frame that cannot be used costs the event.
      var frame = try frame(
        root, in: "", sectionAnimation: nil, zoneTopLeft: nil, sectionIndex: nil,
        withImage: true)
      frame.chunkIndex = chunkIndex
      return .frameImage(frame)
    case "base_animations_manifest": return .baseAnimationsManifest(try manifest(root))
    case "animation_total_frames":
      return .animationTotalFrames(
        try requiredAnimationName(root, "animation_type", in: ""),
        totalFrames: try requiredCount(root, "total_frames", in: ""))
    case "receive_base_frame":
      let name = try requiredAnimationName(root, "animation_type", in: "")
      let index = try requiredIndex(root, "frame_index", in: "")
      // `frame_data` is `{data}`; a bare data URL or base64 string is accepted too.
      let frameData = try required(root, "frame_data", in: "")
      let image: EncodedImage
      if case .object(let members) = frameData {
        image = try self.image(members, key: "data", mimeKey: nil, in: "frame_data")
      } else {
        image = try self.image(root, key: "frame_data", mimeKey: nil, in: "")
      }
      return .baseFrame(BaseFrame(animationName: name, frameIndex: index, image: image))
    default:  // "animation_frames_complete"; decode(name:) admits only known names.
      return .animationFramesComplete(try requiredAnimationName(root, "animation_type", in: ""))
    }
  }

  private mutating func audioChunk(_ root: [String: WireValue]) throws(LIVAProtocolError)
    -> AudioChunk
  {
    let chunkIndex = try requiredIndex(root, "chunk_index", in: "")
    // Bad audio costs the audio, not the chunk's plan: the mouths still play on the frame clock.
    var audio = Data()
    do {
      (audio, _) = try bytes(
        required(root, "audio_data", in: ""), maximumBytes: limits.maximumAudioBytes,
        at: "audio_data")
    } catch {
      note(error, costing: .field)
    }
    var chunk = AudioChunk(audio: audio, chunkIndex: chunkIndex)
    chunk.masterChunkIndex = informationalInt(
      root["master_chunk_index"], "master_chunk_index", in: "")
    chunk.totalFrameImages =
      informationalInt(root["total_frame_images"], "total_frame_images", in: "") ?? 0
    chunk.timestamp = informationalString(root["timestamp"], "timestamp", in: "")
    let plan = lenient(root["animationFramesChunk"]) { (value) throws(LIVAProtocolError) in
      try array(value, at: "animationFramesChunk")
    }
    if let elements = plan {
      chunk.animations.reserveCapacity(elements.count)
      for (offset, element) in elements.enumerated() {
        let path = "animationFramesChunk[\(offset)]"
        do {
          chunk.animations.append(try chunkAnimation(object(element, at: path), at: path))
        } catch  where error.code == .tooLarge {
          throw error
        } catch {
          // Not an object: its frames (however many) cannot be placed.
          note(error, costing: .frame)
        }
      }
    }
    chunk.firstFrameImage = lenient(root["first_frame_image"]) {
      (value) throws(LIVAProtocolError) -> FirstFrameImage in
      let members = try object(value, at: "first_frame_image")
      return FirstFrameImage(
        image: try image(
          members, key: "image_data", mimeKey: "image_mime", in: "first_frame_image"),
        sheetFilename: try optional(members, "sheet_filename").map {
          (value) throws(LIVAProtocolError) in
          try fileName(value, at: "first_frame_image.sheet_filename")
        })
    }
    return chunk
  }

  private mutating func chunkAnimation(_ members: [String: WireValue], at path: String)
    throws(LIVAProtocolError) -> ChunkAnimation
  {
    // The section's name is the default of frames without their own; frames that carry one
    // can play even when the section's is bad.
    let name = lenient(members["animation_name"]) { (value) throws(LIVAProtocolError) in
      try animationName(value, at: Self.join(path, "animation_name"))
    }
    let zone = lenient(members["zone_top_left"]) { (value) throws(LIVAProtocolError) in
      try point(value, at: Self.join(path, "zone_top_left"))
    }
    var animation = ChunkAnimation(
      animationName: name ?? .talkingFallback, sections: [], zoneTopLeft: zone)
    animation.masterFramePlayAt = informationalInt(
      members["master_frame_play_at"], "master_frame_play_at", in: path)
    animation.mode = informationalString(members["mode"], "mode", in: path)
    let sectionsPath = Self.join(path, "sections")
    guard
      let sections = lenient(
        members["sections"],
        { (value) throws(LIVAProtocolError) in
          try array(value, at: sectionsPath)
        })
    else { return animation }
    animation.sections.reserveCapacity(sections.count)
    for (sectionOffset, section) in sections.enumerated() {
      let sectionPath = "\(sectionsPath)[\(sectionOffset)]"
      guard
        let frames = lenient(
          section,
          { (value) throws(LIVAProtocolError) in
            try array(value, at: sectionPath)
          })
      else {
        animation.sections.append([])
        continue
      }
      animation.sections.append(
        try planFrames(
          frames, at: sectionPath, sectionAnimation: name, zoneTopLeft: zone,
          sectionIndex: sectionOffset))
    }
    return animation
  }

  /// The frames of one plan section. A frame that cannot be used keeps its slot as a
  /// rejected frame (``OverlayFrame/rejected(_:animationName:sectionIndex:)``).
  private mutating func planFrames(
    _ values: [WireValue], at path: String, sectionAnimation: AnimationName?,
    zoneTopLeft: SIMD2<Double>?, sectionIndex: Int
  ) throws(LIVAProtocolError) -> [OverlayFrame] {
    var decoded: [OverlayFrame] = []
    decoded.reserveCapacity(values.count)
    for (frameOffset, frameValue) in values.enumerated() {
      let framePath = "\(path)[\(frameOffset)]"
      do {
        decoded.append(
          try frame(
            object(frameValue, at: framePath), in: framePath, sectionAnimation: sectionAnimation,
            zoneTopLeft: zoneTopLeft, sectionIndex: sectionIndex, withImage: false))
      } catch  where error.code == .tooLarge && error.fieldPath == framePath {
        throw error  // over the frame limit: the event is hostile
      } catch {
        note(error, costing: .frame)
        decoded.append(
          .rejected(
            error,
            animationName: decoded.last?.animationName ?? sectionAnimation
              ?? .talkingFallback, sectionIndex: sectionIndex))
      }
    }
    return decoded
  }

  private mutating func batch(_ root: [String: WireValue]) throws(LIVAProtocolError)
    -> FrameImagesBatch
  {
    let framesValue = try array(required(root, "frames", in: ""), at: "frames")
    var frames: [OverlayFrame] = []
    frames.reserveCapacity(min(framesValue.count, limits.maximumFramesPerEvent))
    let chunkIndex = try requiredIndex(root, "chunk_index", in: "")
    for (offset, value) in framesValue.enumerated() {
      let path = "frames[\(offset)]"
      do {
        var frame = try frame(
          object(value, at: path), in: path, sectionAnimation: nil, zoneTopLeft: nil,
          sectionIndex: nil, withImage: true)
        if frame.chunkIndex == nil { frame.chunkIndex = chunkIndex }
        frames.append(frame)
      } catch  where error.code == .tooLarge && error.fieldPath == path {
        throw error
      } catch {
        // No key to file the image under: only this image is lost.
        note(error, costing: .frame)
      }
    }
    var batch = FrameImagesBatch(frames: frames, chunkIndex: chunkIndex)
    batch.batchIndex = informationalInt(root["batch_index"], "batch_index", in: "")
    batch.batchStartIndex = informationalInt(root["batch_start_index"], "batch_start_index", in: "")
    batch.batchSize = informationalInt(root["batch_size"], "batch_size", in: "")
    batch.totalBatches = informationalInt(root["total_batches"], "total_batches", in: "")
    batch.emissionTimestamp = lenient(root["emission_timestamp"]) {
      (value) throws(LIVAProtocolError) in
      if case .string(let text) = value, let number = Double(text), number.isFinite {
        return number
      }
      return try number(value, at: "emission_timestamp")
    }
    return batch
  }

  private mutating func chunkMetadata(_ root: [String: WireValue]) throws(LIVAProtocolError)
    -> AnimationChunkMetadata
  {
    var metadata = AnimationChunkMetadata(
      chunkIndex: try requiredIndex(root, "chunk_index", in: ""),
      totalFrameImages: informationalInt(root["total_frame_images"], "total_frame_images", in: "")
        ?? 0, sections: [])
    let sections = try array(required(root, "sections", in: ""), at: "sections")
    for (sectionOffset, sectionValue) in sections.enumerated() {
      let path = "sections[\(sectionOffset)]"
      guard
        let members = lenient(
          sectionValue,
          { (value) throws(LIVAProtocolError) in
            try object(value, at: path)
          })
      else { continue }
      let name = lenient(members["animation_name"]) { (value) throws(LIVAProtocolError) in
        try animationName(value, at: Self.join(path, "animation_name"))
      }
      let framesPath = Self.join(path, "frames")
      let framesValue =
        lenient(members["frames"]) { (value) throws(LIVAProtocolError) in
          try array(value, at: framesPath)
        } ?? []
      let frames = try planFrames(
        framesValue, at: framesPath, sectionAnimation: name, zoneTopLeft: nil,
        sectionIndex: sectionOffset)
      metadata.sections.append(
        .init(
          animationName: name ?? frames.first?.animationName ?? .talkingFallback, frames: frames)
      )
    }
    return metadata
  }

  private mutating func manifest(_ root: [String: WireValue]) throws(LIVAProtocolError)
    -> [AnimationName: BaseAnimationInfo]
  {
    let animations = try object(required(root, "animations", in: ""), at: "animations")
    guard animations.count <= limits.maximumAnimations else {
      throw error(
        .tooLarge, "\(animations.count) animations exceed the limit \(limits.maximumAnimations)",
        at: "animations")
    }
    var result: [AnimationName: BaseAnimationInfo] = [:]
    for (key, value) in animations {
      let path = "animations.\(key.prefix(64))"
      do {
        let name = try animationName(.string(key), at: path)
        let entry = try object(value, at: path)
        var info = BaseAnimationInfo(frameCount: try requiredCount(entry, "frames", in: path))
        info.version = informationalString(entry["version"], "version", in: path)
        result[name] = info
      } catch {
        note(error, costing: .entry)
      }
    }
    return result
  }

  /// Decodes a frame object. `sectionAnimation` is the enclosing section's animation, used
  /// when the frame has no `animation_name` of its own. Throws (costing the frame) when
  /// playback cannot use it: no usable animation name, no usable
  /// `matched_sprite_frame_number`, no overlay id (nor a sheet file name to derive it from).
  /// Every other field is read tolerantly. With `withImage`, an image that cannot be read
  /// leaves ``OverlayFrame/image`` nil and sets ``OverlayFrame/rejection``.
  private mutating func frame(
    _ members: [String: WireValue], in path: String, sectionAnimation: AnimationName?,
    zoneTopLeft: SIMD2<Double>?, sectionIndex: Int?, withImage: Bool
  ) throws(LIVAProtocolError) -> OverlayFrame {
    framesRead += 1
    guard framesRead <= limits.maximumFramesPerEvent else {
      throw error(
        .tooLarge, "more than \(limits.maximumFramesPerEvent) frames in one event", at: path)
    }
    let fields = FrameFields(members)
    let name: AnimationName
    if let sectionAnimation, fields.animationName == nil {
      name = sectionAnimation
    } else if case .string(let raw)? = fields.animationName, let known = animationNames[raw] {
      name = known
    } else {
      name = try animationName(
        required(fields.animationName, "animation_name", in: path),
        at: Self.join(path, "animation_name"))
      animationNames[name.rawValue] = name
    }
    let matched = try int(
      required(fields.matchedSpriteFrameNumber, "matched_sprite_frame_number", in: path),
      max: limits.maximumIndex, at: Self.join(path, "matched_sprite_frame_number"))
    let sheet = lenient(fields.sheetFilename) { (value) throws(LIVAProtocolError) in
      try fileName(value, at: Self.join(path, "sheet_filename"))
    }
    let sentID = lenient(fields.overlayId) { (value) throws(LIVAProtocolError) -> String in
      let text = try string(value, at: Self.join(path, "overlay_id"))
      guard !text.isEmpty else {
        throw error(.malformedValue, "empty overlay_id", at: Self.join(path, "overlay_id"))
      }
      return text
    }
    let overlayId: String
    if let sentID {
      overlayId = sentID
    } else if let sheet {
      overlayId = OverlayFrame.derivedOverlayId(
        animationName: name, matchedSpriteFrameNumber: matched, sheetFilename: sheet)
    } else {
      throw error(
        .missingField, "a frame needs overlay_id or sheet_filename",
        at: Self.join(path, "overlay_id"))
    }
    var frame = OverlayFrame(
      overlayId: overlayId, animationName: name, matchedSpriteFrameNumber: matched)
    frame.sheetFilename = sheet
    frame.sequenceIndex = informationalInt(fields.sequenceIndex, "sequence_index", in: path)
    frame.sectionIndex =
      informationalInt(fields.sectionIndex, "section_index", in: path) ?? sectionIndex
    frame.frameIndex = informationalInt(fields.frameIndex, "frame_index", in: path)
    frame.chunkIndex = informationalInt(fields.chunkIndex, "chunk_index", in: path)
    frame.spriteIndexFolder = informationalInt(
      fields.spriteIndexFolder, "sprite_index_folder", in: path)
    frame.coordinates = lenient(fields.coordinates) { (value) throws(LIVAProtocolError) in
      try rect(value, at: Self.join(path, "coordinates"))
    }
    frame.zoneTopLeft = zoneTopLeft
    frame.phonemeClass = informationalString(fields.phonemeClass, "char", in: path)
    frame.viseme = informationalString(fields.viseme, "viseme", in: path)
    if withImage {
      do {
        frame.image = try image(
          fields.imageData, key: "image_data", mime: fields.imageMIME, "image_mime", in: path)
      } catch {
        // The frame is known, its image is not: the mouth is lost, and the player is told so.
        note(error, costing: .frame)
        frame.rejection = error
      }
    }
    return frame
  }
}

extension AnimationName {
  /// The animation a rejected frame is filed under when nothing better is known (it is never
  /// drawn: a rejected frame has no mouth and no base frame of its own).
  static let talkingFallback = AnimationName(
    from: KeyPose(Pose(state: "talking", number: 1), .start),
    to: KeyPose(Pose(state: "talking", number: 1), .end))
}

/// The members of a frame object that the decoder reads, picked out in one pass over the
/// object: a batch holds hundreds of frames, and a lookup per field would hash every key
/// name again. `null` members count as absent, as ``EventReader/optional(_:_:)`` has it.
private struct FrameFields {
  var animationName: WireValue?
  var matchedSpriteFrameNumber: WireValue?
  var sheetFilename: WireValue?
  var overlayId: WireValue?
  var sequenceIndex: WireValue?
  var sectionIndex: WireValue?
  var frameIndex: WireValue?
  var chunkIndex: WireValue?
  var spriteIndexFolder: WireValue?
  var coordinates: WireValue?
  var phonemeClass: WireValue?
  var viseme: WireValue?
  var imageData: WireValue?
  var imageMIME: WireValue?

  init(_ members: [String: WireValue]) {
    for (key, value) in members {
      if case .null = value { continue }
      switch key {
      case "animation_name": animationName = value
      case "matched_sprite_frame_number": matchedSpriteFrameNumber = value
      case "sheet_filename": sheetFilename = value
      case "overlay_id": overlayId = value
      case "sequence_index": sequenceIndex = value
      case "section_index": sectionIndex = value
      case "frame_index": frameIndex = value
      case "chunk_index": chunkIndex = value
      case "sprite_index_folder": spriteIndexFolder = value
      case "coordinates": coordinates = value
      case "char": phonemeClass = value
      case "viseme": viseme = value
      case "image_data": imageData = value
      case "image_mime": imageMIME = value
      default: break
      }
    }
  }
}
