import Foundation

// How each server event's payload becomes a ``ServerEvent``: the fields read strictly (a bad
// one rejects the event or the frame) and tolerantly (a bad one is noted and ignored), as
// docs/Protocol.md lists them.
extension EventReader {
  mutating func decode(_ payload: WireValue) throws(LIVAProtocolError) -> ServerEvent {
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
      let text = try text(value, at: Self.join(path, "overlay_id"))
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
