import Foundation
import LIVAMedia
import LIVAProtocol
import Testing

@testable import LIVAServer

@Suite("Speech planning")
struct SpeechPlannerTests {
  let talkingIn = name("idle_1_e_talking_1_s")
  let forward = name("talking_1_s_talking_1_e")
  let back = name("talking_1_e_talking_1_s")

  func plans() throws -> [(Utterance, SpeechPlan)] {
    let pack = try SmallPack.pack.get()
    let planner = SpeechPlanner(pack: pack)
    return try UtteranceLibrary.bundled().utterances.map { ($0, try planner.plan($0)) }
  }

  @Test("each chunk has as many frames as its audio lasts at 30 fps")
  func frameCounts() throws {
    for (utterance, plan) in try plans() {
      #expect(plan.chunks.count == utterance.chunks.count)
      #expect(plan.frames.count == utterance.frameCount)
      for chunk in plan.chunks {
        let frames = chunk.audio.animations.flatMap { $0.sections.flatMap { $0 } }
        let seconds = try MP3Timing(parsing: chunk.audio.audio).duration
        #expect(abs(Double(frames.count) - seconds * 30) <= 1, "\(utterance.id)")
        #expect(frames.count == chunk.frames.count)
        #expect(frames.map(\.sequenceIndex) == Array(0..<frames.count).map { $0 })
      }
    }
  }

  @Test("overlay ids name the pack's sprites, and the batches carry exactly those images")
  func overlays() throws {
    let pack = try SmallPack.pack.get()
    for (utterance, plan) in try plans() {
      for (index, chunk) in plan.chunks.enumerated() {
        #expect(chunk.audio.chunkIndex == index && chunk.audio.masterChunkIndex == index)
        let frames = chunk.audio.animations.flatMap { $0.sections.flatMap { $0 } }
        for frame in frames {
          let sheet = try #require(frame.sheetFilename)
          #expect(
            frame.overlayId
              == "\(frame.animationName.rawValue)/\(frame.matchedSpriteFrameNumber)/\(sheet)")
          #expect(
            FileManager.default.fileExists(
              atPath: pack.root.appendingPathComponent("overlays/" + frame.overlayId).path))
          #expect(
            frame.coordinates
              == pack.mouthRect(frame.animationName, frame: frame.matchedSpriteFrameNumber)?
              .placement)
          #expect(Viseme(sheetFilename: sheet)?.rawValue == frame.viseme)
        }
        let images = chunk.batches.flatMap(\.frames)
        #expect(Set(images.map(\.overlayId)) == Set(frames.map(\.overlayId)), "\(utterance.id)")
        #expect(images.count == Set(images.map(\.overlayId)).count, "each id once per chunk")
        #expect(chunk.totalImages == images.count)
        for (batchIndex, batch) in chunk.batches.enumerated() {
          #expect(batch.frames.count <= 50 && batch.batchIndex == batchIndex)
          #expect(
            batch.totalBatches == chunk.batches.count && batch.batchSize == batch.frames.count)
          #expect(
            batch.batchStartIndex == chunk.batches[..<batchIndex].reduce(0) { $0 + $1.frames.count }
          )
        }
        for image in images {
          let viseme = try #require(Viseme(sheetFilename: image.sheetFilename ?? ""))
          let bytes = try pack.overlayData(
            image.animationName, frame: image.matchedSpriteFrameNumber, viseme: viseme)
          #expect(image.image?.data == bytes)
          #expect(image.image?.mimeType == "image/webp")
        }
      }
    }
  }

  @Test("base frames: the transition first, then the talking loop, continuous across chunks")
  func continuity() throws {
    let pack = try SmallPack.pack.get()
    for (utterance, plan) in try plans() {
      let frames = plan.frames
      #expect(frames.map(\.messageFrame) == Array(0..<frames.count))
      #expect(frames.first?.animation == talkingIn && frames.first?.baseFrame == 0)
      let entry = pack.frameCount(of: talkingIn) ?? 0
      #expect(frames.prefix(entry).allSatisfy { $0.animation == talkingIn })
      #expect(
        frames.dropFirst(entry).allSatisfy { $0.animation == forward || $0.animation == back })
      #expect(frames.dropFirst(entry).first?.animation == forward)
      for (previous, next) in zip(frames, frames.dropFirst()) {
        let count = pack.frameCount(of: previous.animation) ?? 0
        let continues =
          next.animation == previous.animation && next.baseFrame == previous.baseFrame + 1
        let joins =
          previous.baseFrame == count - 1 && next.baseFrame == 0
          && next.animation.from == previous.animation.to
        #expect(continues || joins, "\(utterance.id): \(previous) → \(next)")
      }
      // Each chunk's plan starts where the previous one stopped.
      for (a, b) in zip(plan.chunks, plan.chunks.dropFirst()) {
        #expect(
          b.audio.animations.first?.masterFramePlayAt == (a.frames.last?.messageFrame ?? -2) + 1)
        #expect(b.audio.animations.first?.animationName == b.frames.first?.animation)
      }
    }
  }

  @Test("sections are the runs of one animation; indices count within chunk and section")
  func sections() throws {
    for (_, plan) in try plans() {
      for chunk in plan.chunks {
        let element = try #require(chunk.audio.animations.first)
        #expect(chunk.audio.animations.count == 1 && element.mode == "talking")
        for (sectionIndex, section) in element.sections.enumerated() {
          #expect(!section.isEmpty)
          #expect(Set(section.map(\.animationName)).count == 1)
          #expect(
            section.map(\.sectionIndex) == Array(repeating: sectionIndex, count: section.count))
          #expect(section.map(\.frameIndex) == Array(0..<section.count).map { $0 })
        }
        for (a, b) in zip(element.sections, element.sections.dropFirst()) {
          #expect(a.last?.animationName != b.first?.animationName)
        }
      }
    }
  }

  @Test("frame k carries the viseme active at k/30 s")
  func visemes() throws {
    let pack = try SmallPack.pack.get()
    let cues: [Utterance.Cue] = [
      .init(start: 0, viseme: .x), .init(start: 0.2, viseme: .a), .init(start: 0.31, viseme: .d),
      .init(start: 1.0, viseme: .f), .init(start: 1.5, viseme: .x),
    ]
    let audio = try #require(UtteranceLibrary.bundled().utterances.first?.chunks.first?.audio)
    let utterance = try Utterance(
      id: "cues", text: "cues", totalSamples: 60 * 1470, cues: cues,
      chunks: [
        .init(audio: audio, startFrame: 0, frameCount: 25),
        .init(audio: audio, startFrame: 25, frameCount: 35),
      ])
    let frames = try SpeechPlanner(pack: pack).plan(utterance).frames
    let expected: [Viseme] = (0..<60).map { k in
      switch Double(k) / 30 {
      case ..<0.2: .x
      case ..<0.31: .a
      case ..<1.0: .d
      case ..<1.5: .f
      default: .x
      }
    }
    #expect(frames.map(\.viseme) == expected)
    #expect(frames[6].viseme == .a && frames[9].viseme == .a && frames[10].viseme == .d)
    #expect(frames.allSatisfy { $0.overlayID.hasSuffix("/" + $0.viseme.sheetFilename) })
    // And the real utterances: every frame matches the timing.
    for (utterance, plan) in try plans() {
      for frame in plan.frames {
        #expect(frame.viseme == utterance.viseme(at: Double(frame.messageFrame) / 30))
      }
    }
  }

  @Test("the events decode back to the typed plan, base64 and binary alike")
  func wireRoundTrip() throws {
    let (_, plan) = try #require(try plans().first)
    for encoding in BinaryEncoding.allCases {
      let events = plan.events(encoding: encoding, emissionTimestamp: 1_700_000_000_123)
      #expect(events.last?.name == "audio_end")
      var position = 0
      for chunk in plan.chunks {
        #expect(events[position].name == "receive_audio")
        let decoded = try ServerEvent.decode(
          name: events[position].name, payload: events[position].payload)
        #expect(decoded == .audioChunk(chunk.audio))
        position += 1
        for batch in chunk.batches {
          let event = events[position]
          #expect(event.name == "receive_frame_images_batch")
          guard
            case .frameImagesBatch(let back)? = try ServerEvent.decode(
              name: event.name, payload: event.payload)
          else {
            Issue.record("not a batch")
            return
          }
          var expected = batch
          expected.emissionTimestamp = 1_700_000_000_123
          #expect(back == expected)
          position += 1
        }
        let ready = try ServerEvent.decode(
          name: events[position].name, payload: events[position].payload)
        #expect(
          ready
            == .chunkImagesReady(
              chunkIndex: chunk.audio.chunkIndex, totalImagesSent: chunk.totalImages))
        position += 1
      }
      if encoding == .binary {
        guard case .object(let members) = events[0].payload, case .binary? = members["audio_data"]
        else {
          Issue.record("binary audio expected")
          return
        }
      }
    }
  }

  @Test("the other server events round-trip too")
  func otherEvents() throws {
    let pack = try SmallPack.pack.get()
    let manifest = try ServerEvent.decode(
      name: "base_animations_manifest",
      payload: OutgoingEvent.baseAnimationsManifest(pack.wireManifest).payload)
    #expect(manifest == .baseAnimationsManifest(pack.wireManifest))
    let png = try pack.baseFrameData(talkingIn, frame: 3)
    let frame = OutgoingEvent.receiveBaseFrame(talkingIn, frameIndex: 3, image: png)
    #expect(
      try ServerEvent.decode(name: frame.name, payload: frame.payload)
        == .baseFrame(
          BaseFrame(
            animationName: talkingIn, frameIndex: 3,
            image: EncodedImage(data: png, mimeType: "image/png"))))
    let total = OutgoingEvent.animationTotalFrames(talkingIn, totalFrames: 8)
    #expect(
      try ServerEvent.decode(name: total.name, payload: total.payload)
        == .animationTotalFrames(talkingIn, totalFrames: 8))
    let complete = OutgoingEvent.animationFramesComplete(talkingIn)
    #expect(
      try ServerEvent.decode(name: complete.name, payload: complete.payload)
        == .animationFramesComplete(talkingIn))
    let play = OutgoingEvent.playBaseAnimation(name("hi_1_s_hi_1_e"))
    #expect(
      try ServerEvent.decode(name: play.name, payload: play.payload)
        == .playBaseAnimation(name("hi_1_s_hi_1_e")))
    #expect(
      try ServerEvent.decode(name: "audio_end", payload: OutgoingEvent.audioEnd.payload)
        == .audioEnd)
  }

  @Test("ready animations and the start pose shape the walk")
  func walkChoices() throws {
    let pack = try SmallPack.pack.get()
    let planner = SpeechPlanner(pack: pack)
    let utterance = try #require(UtteranceLibrary.bundled().utterances.first)
    // Already talking (a message interrupting another): straight into the loop.
    let talkingEnd = KeyPose(Pose(state: "talking", number: 1), .end)
    let resumed = try planner.plan(utterance, start: talkingEnd).frames
    #expect(resumed.first?.animation == back && resumed.first?.baseFrame == 0)
    // The client lacks the transition: the talking loop from its start.
    let noTransition = try planner.plan(utterance, readyAnimations: [forward, back]).frames
    #expect(noTransition.first?.animation == forward)
    #expect(noTransition.allSatisfy { $0.animation == forward || $0.animation == back })
    // No talking loop at all: a typed error.
    #expect(throws: LIVAServerError.self) {
      try planner.plan(utterance, readyAnimations: [self.talkingIn, .idleForward, .idleBack])
    }
    // Chunk numbering continues a global count.
    let numbered = try planner.plan(utterance, firstMasterChunkIndex: 7)
    #expect(
      numbered.chunks.map { $0.audio.masterChunkIndex }
        == Array(7..<(7 + numbered.chunks.count)).map { $0 })
  }

  @Test("one image per frame, in batches of the configured size")
  func everyFrame() throws {
    let pack = try SmallPack.pack.get()
    let planner = SpeechPlanner(pack: pack, options: .init(batchSize: 16, images: .everyFrame))
    let utterance = try #require(UtteranceLibrary.bundled().utterances.first)
    for chunk in try planner.plan(utterance).chunks {
      let images = chunk.batches.flatMap(\.frames)
      #expect(images.map(\.overlayId) == chunk.frames.map(\.overlayID))
      #expect(chunk.batches.allSatisfy { $0.frames.count <= 16 })
      #expect(chunk.batches.count == (chunk.frames.count + 15) / 16)
    }
    #expect(SpeechPlanner.Options(batchSize: 500).batchSize == 50)
  }

  @Test("timestamps are UTC YYYY-MM-DD HH:MM:SS.mmm")
  func timestamps() throws {
    let date = Date(timeIntervalSince1970: 1_795_308_234.1239)
    #expect(SpeechPlanner.timestampString(date) == "2026-11-22 00:43:54.123")
    #expect(
      SpeechPlanner.timestampString(Date(timeIntervalSince1970: 0)) == "1970-01-01 00:00:00.000")
  }
}
