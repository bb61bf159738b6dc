import Foundation
import LIVAProtocol

/// One frame of a planned message: the base frame it is drawn on and the mouth on it.
public struct SpeechFrame: Hashable, Sendable {
  /// The frame's index in the message (at 30 fps from the start of the message's audio).
  public var messageFrame: Int
  /// The chunk it belongs to (`chunk_index`).
  public var chunkIndex: Int
  /// Its position within the chunk (`sequence_index`).
  public var sequenceIndex: Int
  /// The base animation.
  public var animation: AnimationName
  /// The base frame (`matched_sprite_frame_number`).
  public var baseFrame: Int
  /// The mouth shape, active at `messageFrame / fps` seconds.
  public var viseme: Viseme
  /// `{animation}/{frame}/{sheet_filename}`.
  public var overlayID: String
  /// Where the sprite goes on the base frame.
  public var rect: PixelRect
}

/// One chunk of a planned message: its `receive_audio`, its image batches, and the count
/// for `chunk_images_ready`.
public struct PlannedChunk: Sendable {
  /// The `receive_audio` event, typed (audio, indices, timestamp, `animationFramesChunk`).
  public var audio: AudioChunk
  /// The `receive_frame_images_batch` events, typed, each with at most the planner's batch
  /// size of frames carrying their images.
  public var batches: [FrameImagesBatch]
  /// The chunk's frames, in order.
  public var frames: [SpeechFrame]

  /// The number of images the batches carry (`total_frame_images`, `total_images_sent`).
  public var totalImages: Int { audio.totalFrameImages }

  /// The chunk's events in the order production emits them: `receive_audio`, the batches,
  /// then `chunk_images_ready`.
  public func events(encoding: BinaryEncoding, emissionTimestamp: Double? = nil)
    -> [OutgoingEvent]
  {
    [.receiveAudio(audio, encoding: encoding)]
      + batches.map {
        .frameImagesBatch($0, encoding: encoding, emissionTimestamp: emissionTimestamp)
      }
      + [.chunkImagesReady(chunkIndex: audio.chunkIndex, totalImagesSent: totalImages)]
  }

  /// The chunk's events in the older per-image variant: `animation_chunk_metadata` (the
  /// plan), one `receive_frame_image` per image, then an audio-only `receive_audio` (no
  /// `animationFramesChunk`), paired by `chunk_index`; no `chunk_images_ready`.
  public func legacyEvents(encoding: BinaryEncoding) -> [OutgoingEvent] {
    let sections = audio.animations.flatMap(\.sections).map { frames in
      AnimationChunkMetadata.Section(
        animationName: frames.first?.animationName ?? audio.animations[0].animationName,
        frames: frames)
    }
    var audioOnly = audio
    audioOnly.animations = []
    audioOnly.firstFrameImage = nil
    return [
      .animationChunkMetadata(
        AnimationChunkMetadata(
          chunkIndex: audio.chunkIndex, totalFrameImages: totalImages, sections: sections))
    ]
      + batches.flatMap(\.frames).map { .frameImage($0, encoding: encoding) }
      + [.receiveAudio(audioOnly, encoding: encoding)]
  }
}

/// The plan of one spoken message: what a backend streams for it.
public struct SpeechPlan: Sendable {
  /// The utterance spoken.
  public var utterance: Utterance
  /// The chunks, in order.
  public var chunks: [PlannedChunk]

  /// Every frame of the message, in order.
  public var frames: [SpeechFrame] { chunks.flatMap(\.frames) }

  /// Every event of the message in production's order: each chunk's events (see
  /// ``PlannedChunk/events(encoding:emissionTimestamp:)``), then `audio_end`.
  public func events(encoding: BinaryEncoding, emissionTimestamp: Double? = nil)
    -> [OutgoingEvent]
  {
    chunks.flatMap { $0.events(encoding: encoding, emissionTimestamp: emissionTimestamp) }
      + [.audioEnd]
  }
}

/// Plans speech the way the production backend streams it: an utterance's chunks become
/// `receive_audio` events whose `animationFramesChunk` drive the base frames with mouth
/// sprites, and `receive_frame_images_batch` events that carry the sprites.
///
/// **Base frames** walk the animation graph as production does: the message's first frames
/// are the transition into talking (`idle_1_e_talking_1_s`, from ``start``), then the talking
/// loop back and forth (`talking_1_s_talking_1_e`, `talking_1_e_talking_1_s`, ...) for as
/// long as the audio lasts; the walk continues across chunk boundaries. Going back to idle
/// after the last chunk is the client's part.
///
/// **Mouths:** message frame `k` carries the sprite of the viseme active at `k / fps` s on
/// its own base frame, placed at that frame's mouth rectangle (`coordinates`).
///
/// **Chunk layout:** one `animationFramesChunk` element per chunk (`animation_name` of its
/// first frame, `zone_top_left` of its first mouth, `master_frame_play_at` = the chunk's
/// first message frame, `mode` `"talking"`); its `sections` are the runs of frames of one
/// base animation. `sequence_index` counts frames in the chunk, `frame_index` within the
/// section, `section_index` the run. `sprite_index_folder` is `{animation}/{frame}`.
///
/// **Images:** with ``ImagePolicy/uniquePerChunk`` (the default) each distinct overlay id of
/// a chunk is sent once per chunk (a client caches by id); ``ImagePolicy/everyFrame`` sends
/// one image per frame as production does. Batches hold at most ``Options/batchSize``.
public struct SpeechPlanner: Sendable {
  /// Which images a chunk's batches carry.
  public enum ImagePolicy: String, Hashable, Sendable {
    /// Each distinct overlay id of the chunk once.
    case uniquePerChunk
    /// One image per frame, repeats included (production's behaviour).
    case everyFrame
  }

  /// Options.
  public struct Options: Hashable, Sendable {
    /// The most images per `receive_frame_images_batch` (default and maximum 50).
    public var batchSize: Int
    /// Which images are sent.
    public var images: ImagePolicy
    /// The `mode` of every chunk (default `"talking"`).
    public var mode: String
    /// The talking pose to walk to (default `talking_1`).
    public var talkingPose: Pose

    /// Creates options; every argument has a default.
    public init(
      batchSize: Int = 50, images: ImagePolicy = .uniquePerChunk, mode: String = "talking",
      talkingPose: Pose = Pose(state: "talking", number: 1)
    ) {
      self.batchSize = max(1, min(50, batchSize))
      self.images = images
      self.mode = mode
      self.talkingPose = talkingPose
    }
  }

  /// The avatar pack.
  public let pack: AvatarPack
  /// The options.
  public let options: Options

  /// Creates a planner for a pack.
  public init(pack: AvatarPack, options: Options = Options()) {
    self.pack = pack
    self.options = options
  }

  /// Plans a message.
  ///
  /// - Parameters:
  ///   - utterance: what to say (its fps must be the pack's).
  ///   - start: the key pose the avatar is at when the message starts (default `idle_1_e`,
  ///     where the idle loop hands over to speech).
  ///   - readyAnimations: the animations the client can draw (`ready_animations`); nil for all
  ///     of the pack's. The walk only uses animations that are in the pack, ready, and carry
  ///     mouth sprites; when there is no way from `start` into talking, it begins directly on
  ///     the talking loop.
  ///   - firstMasterChunkIndex: the global index of the first chunk (`master_chunk_index`).
  ///   - timestamp: the server time written in every chunk.
  /// - Throws: `missingAnimation` when no talking loop is usable, `invalidUtterance` when the
  ///   utterance's frame rate is not the pack's, `ioFailure` when a sprite cannot be read.
  public func plan(
    _ utterance: Utterance, start: KeyPose = .idleEnd,
    readyAnimations: Set<AnimationName>? = nil, firstMasterChunkIndex: Int = 0,
    timestamp: Date = Date(timeIntervalSince1970: 0)
  ) throws(LIVAServerError) -> SpeechPlan {
    guard utterance.fps == pack.manifest.fps else {
      throw LIVAServerError(
        .invalidUtterance,
        "the utterance runs at \(utterance.fps) fps, the pack at \(pack.manifest.fps)",
        location: "utterance \(utterance.id)")
    }
    var walk = try BaseWalk(
      graph: speechGraph(readyAnimations), start: start, talking: options.talkingPose)
    let stamp = Self.timestampString(timestamp)
    var chunks: [PlannedChunk] = []
    for (chunkIndex, chunk) in utterance.chunks.enumerated() {
      var frames: [SpeechFrame] = []
      for offset in 0..<chunk.frameCount {
        let messageFrame = chunk.startFrame + offset
        let (animation, baseFrame) = walk.next()
        let viseme = utterance.viseme(atFrame: messageFrame)
        guard let rect = pack.mouthRect(animation, frame: baseFrame) else {
          throw LIVAServerError(
            .invalidPack, "\(animation) has no mouth for frame \(baseFrame)",
            location: pack.root.path)
        }
        frames.append(
          SpeechFrame(
            messageFrame: messageFrame, chunkIndex: chunkIndex, sequenceIndex: offset,
            animation: animation, baseFrame: baseFrame, viseme: viseme,
            overlayID: AvatarPack.overlayID(animation: animation, frame: baseFrame, viseme: viseme),
            rect: rect))
      }
      chunks.append(
        try plannedChunk(
          frames, chunk: chunk, index: chunkIndex,
          masterIndex: firstMasterChunkIndex + chunkIndex, timestamp: stamp))
    }
    return SpeechPlan(utterance: utterance, chunks: chunks)
  }

  /// The graph of the animations the walk may use: in the pack, ready, with mouth sprites.
  private func speechGraph(_ ready: Set<AnimationName>?) -> AnimationGraph {
    var counts: [AnimationName: Int] = [:]
    for (name, entry) in pack.animations where entry.speech {
      if let ready, !ready.contains(name) { continue }
      counts[name] = entry.frames
    }
    return AnimationGraph(frameCounts: counts)
  }

  private func plannedChunk(
    _ frames: [SpeechFrame], chunk: Utterance.Chunk, index: Int, masterIndex: Int,
    timestamp: String
  ) throws(LIVAServerError) -> PlannedChunk {
    // Sections: runs of one base animation.
    var sections: [[OverlayFrame]] = []
    var previous: AnimationName?
    for frame in frames {
      if frame.animation != previous {
        sections.append([])
        previous = frame.animation
      }
      let sectionIndex = sections.count - 1
      sections[sectionIndex].append(
        overlayFrame(frame, sectionIndex: sectionIndex, frameIndex: sections[sectionIndex].count))
    }
    // Frames listed in a section carry its zone (as a client decodes them).
    let first = frames[0]
    let zone = SIMD2(Double(first.rect.x), Double(first.rect.y))
    for section in sections.indices {
      for position in sections[section].indices { sections[section][position].zoneTopLeft = zone }
    }
    let animation = ChunkAnimation(
      animationName: first.animation, sections: sections, zoneTopLeft: zone,
      masterFramePlayAt: chunk.startFrame, mode: options.mode)

    // Images: in order of first use; once per id, or once per frame.
    var imageFrames: [OverlayFrame] = []
    var sent: Set<String> = []
    let flat = sections.flatMap { $0 }
    for (frame, overlay) in zip(frames, flat) {
      if options.images == .uniquePerChunk && !sent.insert(frame.overlayID).inserted { continue }
      var withImage = overlay
      withImage.image = EncodedImage(
        data: try pack.overlayData(frame.animation, frame: frame.baseFrame, viseme: frame.viseme),
        mimeType: "image/webp")
      withImage.chunkIndex = index
      withImage.zoneTopLeft = nil
      imageFrames.append(withImage)
    }
    let batchSize = options.batchSize
    let totalBatches = (imageFrames.count + batchSize - 1) / batchSize
    let batches = stride(from: 0, to: imageFrames.count, by: batchSize).enumerated().map {
      batchIndex, start in
      let slice = Array(imageFrames[start..<min(start + batchSize, imageFrames.count)])
      return FrameImagesBatch(
        frames: slice, chunkIndex: index, batchIndex: batchIndex, batchStartIndex: start,
        batchSize: slice.count, totalBatches: totalBatches)
    }
    var audio = AudioChunk(
      audio: chunk.audio, chunkIndex: index, masterChunkIndex: masterIndex,
      totalFrameImages: imageFrames.count, timestamp: timestamp, animations: [animation])
    if index == 0, let first = imageFrames.first, let image = first.image {
      // `first_frame_image`: the message's first mouth, for an immediate first frame.
      audio.firstFrameImage = FirstFrameImage(image: image, sheetFilename: first.sheetFilename)
    }
    return PlannedChunk(audio: audio, batches: batches, frames: frames)
  }

  private func overlayFrame(_ frame: SpeechFrame, sectionIndex: Int, frameIndex: Int)
    -> OverlayFrame
  {
    OverlayFrame(
      overlayId: frame.overlayID, animationName: frame.animation,
      matchedSpriteFrameNumber: frame.baseFrame, sequenceIndex: frame.sequenceIndex,
      sectionIndex: sectionIndex, frameIndex: frameIndex,
      sheetFilename: frame.viseme.sheetFilename,
      spriteIndexFolder: 0,
      coordinates: frame.rect.placement, phonemeClass: frame.viseme.phonemeClass,
      viseme: frame.viseme.rawValue)
  }

  /// `YYYY-MM-DD HH:MM:SS.mmm` in UTC.
  static func timestampString(_ date: Date) -> String {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
    let parts = calendar.dateComponents(
      [.year, .month, .day, .hour, .minute, .second], from: date)
    let whole = date.timeIntervalSince1970.rounded(.down)
    let millis = min(999, max(0, Int(((date.timeIntervalSince1970 - whole) * 1000).rounded(.down))))
    func pad(_ value: Int?, _ width: Int) -> String {
      let text = String(value ?? 0)
      return String(repeating: "0", count: max(0, width - text.count)) + text
    }
    return "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2)) "
      + "\(pad(parts.hour, 2)):\(pad(parts.minute, 2)):\(pad(parts.second, 2)).\(pad(millis, 3))"
  }
}

/// The base-frame walk of a message: the path into talking, then the talking loop.
private struct BaseWalk {
  let graph: AnimationGraph
  let talking: Pose
  private var animation: AnimationName
  private var frame = 0
  private var pending: [AnimationName]

  init(graph: AnimationGraph, start: KeyPose, talking: Pose) throws(LIVAServerError) {
    self.graph = graph
    self.talking = talking
    var route = graph.path(from: start, toPose: talking) ?? []
    // Begin on a talking loop edge: the entry path, then the loop there.
    let landing = route.last?.to ?? start
    let loopStart =
      landing.pose == talking ? landing : KeyPose(talking, .start)
    guard let loop = graph.loop(at: loopStart) ?? graph.loop(at: KeyPose(talking, .start))
    else {
      throw LIVAServerError(
        .missingAnimation, "no usable \(talking) loop with mouth sprites")
    }
    if route.isEmpty || route.last?.to != loop.from { route = [loop] } else { route.append(loop) }
    animation = route.removeFirst()
    pending = route
  }

  /// The next base frame.
  mutating func next() -> (AnimationName, Int) {
    let count = graph.frameCount(of: animation) ?? 1
    if frame >= count {
      if !pending.isEmpty {
        animation = pending.removeFirst()
      } else {
        animation = graph.next(after: animation, toward: talking) ?? animation
      }
      frame = 0
    }
    defer { frame += 1 }
    return (animation, frame)
  }
}
