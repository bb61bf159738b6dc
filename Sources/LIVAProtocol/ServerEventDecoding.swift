import Foundation

// How each server event's payload becomes a ``ServerEvent``: the fields read strictly (a bad
// one rejects the event or the frame) and tolerantly (a bad one is noted and ignored), as
// docs/Protocol.md lists them.
extension EventReader {
  mutating func decode(_ payload: WireValue) throws(LIVAProtocolError) -> ServerEvent {
    let root = try object(payload, at: "")
    switch event {
    case Wire.Event.receiveAudio: return .audioChunk(try audioChunk(root))
    case Wire.Event.receiveFrameImagesBatch: return .frameImagesBatch(try batch(root))
    case Wire.Event.chunkImagesReady:
      return .chunkImagesReady(
        chunkIndex: try requiredIndex(root, Wire.Field.chunkIndex, in: ""),
        totalImagesSent: informationalInt(
          root[Wire.Field.totalImagesSent], Wire.Field.totalImagesSent, in: "")
          ?? 0)
    case Wire.Event.playBaseAnimation, Wire.Event.playAnimation:
      return .playBaseAnimation(try requiredAnimationName(root, Wire.Field.animationName, in: ""))
    case Wire.Event.animationChunkMetadata: return .animationChunkMetadata(try chunkMetadata(root))
    case Wire.Event.receiveFrameImage:
      let chunkIndex = try requiredIndex(root, Wire.Field.chunkIndex, in: "")
      // The event is this one frame: a frame that cannot be used costs the event.
      var frame = try frame(
        root, in: "", sectionAnimation: nil, zoneTopLeft: nil, sectionIndex: nil,
        withImage: true)
      frame.chunkIndex = chunkIndex
      return .frameImage(frame)
    case Wire.Event.baseAnimationsManifest: return .baseAnimationsManifest(try manifest(root))
    case Wire.Event.animationTotalFrames:
      return .animationTotalFrames(
        try requiredAnimationName(root, Wire.Field.animationType, in: ""),
        totalFrames: try requiredCount(root, Wire.Field.totalFrames, in: ""))
    case Wire.Event.receiveBaseFrame:
      let name = try requiredAnimationName(root, Wire.Field.animationType, in: "")
      let index = try requiredIndex(root, Wire.Field.frameIndex, in: "")
      // `frame_data` is `{data}`; a bare data URL or base64 string is accepted too.
      let frameData = try required(root, Wire.Field.frameData, in: "")
      let image: EncodedImage
      if case .object(let members) = frameData {
        image = try self.image(
          members, key: Wire.Field.data, mimeKey: nil, in: Wire.Field.frameData)
      } else {
        image = try self.image(root, key: Wire.Field.frameData, mimeKey: nil, in: "")
      }
      return .baseFrame(BaseFrame(animationName: name, frameIndex: index, image: image))
    default:  // "animation_frames_complete"; decode(name:) admits only known names.
      return .animationFramesComplete(
        try requiredAnimationName(root, Wire.Field.animationType, in: ""))
    }
  }

  private mutating func audioChunk(_ root: [String: WireValue]) throws(LIVAProtocolError)
    -> AudioChunk
  {
    let chunkIndex = try requiredIndex(root, Wire.Field.chunkIndex, in: "")
    // Bad audio costs the audio, not the chunk's plan: the mouths still play on the frame clock.
    var audio = Data()
    do {
      (audio, _) = try bytes(
        required(root, Wire.Field.audioData, in: ""), maximumBytes: limits.maximumAudioBytes,
        at: Wire.Field.audioData)
    } catch {
      note(error, costing: .field)
    }
    var chunk = AudioChunk(audio: audio, chunkIndex: chunkIndex)
    chunk.masterChunkIndex = informationalInt(
      root[Wire.Field.masterChunkIndex], Wire.Field.masterChunkIndex, in: "")
    chunk.totalFrameImages =
      informationalInt(root[Wire.Field.totalFrameImages], Wire.Field.totalFrameImages, in: "") ?? 0
    chunk.timestamp = informationalString(root[Wire.Field.timestamp], Wire.Field.timestamp, in: "")
    let plan = lenient(root[Wire.Field.animationFramesChunk]) { (value) throws(LIVAProtocolError) in
      try array(value, at: Wire.Field.animationFramesChunk)
    }
    if let elements = plan {
      chunk.animations.reserveCapacity(min(elements.count, limits.maximumFramesPerEvent))
      for (offset, element) in elements.enumerated() {
        let path = "animationFramesChunk[\(offset)]"
        try countContainer(at: path)
        let members: [String: WireValue]
        do {
          members = try object(element, at: path)
        } catch {
          // Not an object: its frames (however many) cannot be placed.
          note(error, costing: .frame)
          continue
        }
        chunk.animations.append(try chunkAnimation(members, at: path))
      }
    }
    chunk.firstFrameImage = lenient(root[Wire.Field.firstFrameImage]) {
      (value) throws(LIVAProtocolError) -> FirstFrameImage in
      let members = try object(value, at: Wire.Field.firstFrameImage)
      return FirstFrameImage(
        image: try image(
          members, key: Wire.Field.imageData, mimeKey: Wire.Field.imageMime,
          in: Wire.Field.firstFrameImage),
        sheetFilename: try optional(members, Wire.Field.sheetFilename).map {
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
    let name = lenient(members[Wire.Field.animationName]) { (value) throws(LIVAProtocolError) in
      try animationName(value, at: Self.join(path, Wire.Field.animationName))
    }
    let zone = lenient(members[Wire.Field.zoneTopLeft]) { (value) throws(LIVAProtocolError) in
      try point(value, at: Self.join(path, Wire.Field.zoneTopLeft))
    }
    var animation = ChunkAnimation(
      animationName: name ?? .talkingFallback, sections: [], zoneTopLeft: zone)
    animation.masterFramePlayAt = informationalInt(
      members[Wire.Field.masterFramePlayAt], Wire.Field.masterFramePlayAt, in: path)
    animation.mode = informationalString(members[Wire.Field.mode], Wire.Field.mode, in: path)
    let sectionsPath = Self.join(path, Wire.Field.sections)
    guard
      let sections = lenient(
        members[Wire.Field.sections],
        { (value) throws(LIVAProtocolError) in
          try array(value, at: sectionsPath)
        })
    else { return animation }
    animation.sections.reserveCapacity(min(sections.count, limits.maximumFramesPerEvent))
    for (sectionOffset, section) in sections.enumerated() {
      let sectionPath = "\(sectionsPath)[\(sectionOffset)]"
      try countContainer(at: sectionPath)
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
    decoded.reserveCapacity(min(values.count, limits.maximumFramesPerEvent))
    for (frameOffset, frameValue) in values.enumerated() {
      let framePath = "\(path)[\(frameOffset)]"
      try countFrame(at: framePath)  // over the frame limit: the event is hostile
      do {
        decoded.append(
          try frame(
            object(frameValue, at: framePath), in: framePath, sectionAnimation: sectionAnimation,
            zoneTopLeft: zoneTopLeft, sectionIndex: sectionIndex, withImage: false))
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
    let framesValue = try array(required(root, Wire.Field.frames, in: ""), at: Wire.Field.frames)
    var frames: [OverlayFrame] = []
    frames.reserveCapacity(min(framesValue.count, limits.maximumFramesPerEvent))
    let chunkIndex = try requiredIndex(root, Wire.Field.chunkIndex, in: "")
    for (offset, value) in framesValue.enumerated() {
      let path = "frames[\(offset)]"
      try countFrame(at: path)
      do {
        var frame = try frame(
          object(value, at: path), in: path, sectionAnimation: nil, zoneTopLeft: nil,
          sectionIndex: nil, withImage: true)
        if frame.chunkIndex == nil { frame.chunkIndex = chunkIndex }
        frames.append(frame)
      } catch {
        // No key to file the image under: only this image is lost.
        note(error, costing: .frame)
      }
    }
    var batch = FrameImagesBatch(frames: frames, chunkIndex: chunkIndex)
    batch.batchIndex = informationalInt(root[Wire.Field.batchIndex], Wire.Field.batchIndex, in: "")
    batch.batchStartIndex = informationalInt(
      root[Wire.Field.batchStartIndex], Wire.Field.batchStartIndex, in: "")
    batch.batchSize = informationalInt(root[Wire.Field.batchSize], Wire.Field.batchSize, in: "")
    batch.totalBatches = informationalInt(
      root[Wire.Field.totalBatches], Wire.Field.totalBatches, in: "")
    batch.emissionTimestamp = lenient(root[Wire.Field.emissionTimestamp]) {
      (value) throws(LIVAProtocolError) in
      if case .string(let text) = value, let number = Double(text), number.isFinite {
        return number
      }
      return try number(value, at: Wire.Field.emissionTimestamp)
    }
    return batch
  }

  private mutating func chunkMetadata(_ root: [String: WireValue]) throws(LIVAProtocolError)
    -> AnimationChunkMetadata
  {
    var metadata = AnimationChunkMetadata(
      chunkIndex: try requiredIndex(root, Wire.Field.chunkIndex, in: ""),
      totalFrameImages: informationalInt(
        root[Wire.Field.totalFrameImages], Wire.Field.totalFrameImages, in: "")
        ?? 0, sections: [])
    let sections = try array(required(root, Wire.Field.sections, in: ""), at: Wire.Field.sections)
    for (sectionOffset, sectionValue) in sections.enumerated() {
      let path = "sections[\(sectionOffset)]"
      try countContainer(at: path)
      guard
        let members = lenient(
          sectionValue,
          { (value) throws(LIVAProtocolError) in
            try object(value, at: path)
          })
      else { continue }
      let name = lenient(members[Wire.Field.animationName]) { (value) throws(LIVAProtocolError) in
        try animationName(value, at: Self.join(path, Wire.Field.animationName))
      }
      let framesPath = Self.join(path, Wire.Field.frames)
      let framesValue =
        lenient(members[Wire.Field.frames]) { (value) throws(LIVAProtocolError) in
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
    let animations = try object(
      required(root, Wire.Field.animations, in: ""), at: Wire.Field.animations)
    guard animations.count <= limits.maximumAnimations else {
      throw error(
        .tooLarge, "\(animations.count) animations exceed the limit \(limits.maximumAnimations)",
        at: Wire.Field.animations)
    }
    var result: [AnimationName: BaseAnimationInfo] = [:]
    for (key, value) in animations {
      let path = "animations.\(key.prefix(64))"
      do {
        let name = try animationName(.string(key), at: path)
        let entry = try object(value, at: path)
        var info = BaseAnimationInfo(
          frameCount: try requiredCount(entry, Wire.Field.frames, in: path))
        info.version = informationalString(entry[Wire.Field.version], Wire.Field.version, in: path)
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
    let fields = FrameFields(members)
    let name: AnimationName
    if let sectionAnimation, fields.animationName == nil {
      name = sectionAnimation
    } else if case .string(let raw)? = fields.animationName, let known = animationNames[raw] {
      name = known
    } else {
      name = try animationName(
        required(fields.animationName, Wire.Field.animationName, in: path),
        at: Self.join(path, Wire.Field.animationName))
      animationNames[name.rawValue] = name
    }
    let matched = try int(
      required(fields.matchedSpriteFrameNumber, Wire.Field.matchedSpriteFrameNumber, in: path),
      max: limits.maximumIndex, at: Self.join(path, Wire.Field.matchedSpriteFrameNumber))
    let sheet = lenient(fields.sheetFilename) { (value) throws(LIVAProtocolError) in
      try fileName(value, at: Self.join(path, Wire.Field.sheetFilename))
    }
    let sentID = lenient(fields.overlayId) { (value) throws(LIVAProtocolError) -> String in
      let text = try text(value, at: Self.join(path, Wire.Field.overlayId))
      guard !text.isEmpty else {
        throw error(.malformedValue, "empty overlay_id", at: Self.join(path, Wire.Field.overlayId))
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
        at: Self.join(path, Wire.Field.overlayId))
    }
    var frame = OverlayFrame(
      overlayId: overlayId, animationName: name, matchedSpriteFrameNumber: matched)
    frame.sheetFilename = sheet
    frame.sequenceIndex = informationalInt(fields.sequenceIndex, Wire.Field.sequenceIndex, in: path)
    frame.sectionIndex =
      informationalInt(fields.sectionIndex, Wire.Field.sectionIndex, in: path) ?? sectionIndex
    frame.frameIndex = informationalInt(fields.frameIndex, Wire.Field.frameIndex, in: path)
    frame.chunkIndex = informationalInt(fields.chunkIndex, Wire.Field.chunkIndex, in: path)
    frame.spriteIndexFolder = informationalInt(
      fields.spriteIndexFolder, Wire.Field.spriteIndexFolder, in: path)
    frame.coordinates = lenient(fields.coordinates) { (value) throws(LIVAProtocolError) in
      try rect(value, at: Self.join(path, Wire.Field.coordinates))
    }
    frame.zoneTopLeft = zoneTopLeft
    frame.phonemeClass = informationalString(fields.phonemeClass, Wire.Field.phonemeClass, in: path)
    frame.viseme = informationalString(fields.viseme, Wire.Field.viseme, in: path)
    if withImage {
      do {
        frame.image = try image(
          fields.imageData, key: Wire.Field.imageData, mime: fields.imageMIME, Wire.Field.imageMime,
          in: path)
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
      case Wire.Field.animationName: animationName = value
      case Wire.Field.matchedSpriteFrameNumber: matchedSpriteFrameNumber = value
      case Wire.Field.sheetFilename: sheetFilename = value
      case Wire.Field.overlayId: overlayId = value
      case Wire.Field.sequenceIndex: sequenceIndex = value
      case Wire.Field.sectionIndex: sectionIndex = value
      case Wire.Field.frameIndex: frameIndex = value
      case Wire.Field.chunkIndex: chunkIndex = value
      case Wire.Field.spriteIndexFolder: spriteIndexFolder = value
      case Wire.Field.coordinates: coordinates = value
      case Wire.Field.phonemeClass: phonemeClass = value
      case Wire.Field.viseme: viseme = value
      case Wire.Field.imageData: imageData = value
      case Wire.Field.imageMime: imageMIME = value
      default: break
      }
    }
  }
}
