import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import LIVATestSupport
import Testing

/// The message identity rules of `SpeechReceiver`, as time diagrams of events (pure, no
/// threads, no waiting). Only a new chunk-0 `receive_audio` starts a message; images belong
/// to no message; re-sends are idempotent.
@Suite("SpeechReceiver: message identity from what the protocol says")
struct SpeechReceiverTests {
  let talking = try! AnimationName(parsing: "talking_1_s_talking_1_e")

  func frame(_ index: Int, image: Bool = false, tag: String = "m") -> OverlayFrame {
    OverlayFrame(
      overlayId: "\(talking)/\(index)/\(tag).webp", animationName: talking,
      matchedSpriteFrameNumber: index, sheetFilename: "\(tag).webp",
      coordinates: PlacementRect(x: 1, y: 2, width: 3, height: 4),
      image: image ? EncodedImage(data: Data([1, 2, 3])) : nil)
  }

  func audio(
    _ chunk: Int, frames: Int = 3, master: Int? = nil, data: Data = Data([9]), tag: String = "m"
  ) -> ServerEvent {
    .audioChunk(
      AudioChunk(
        audio: data, chunkIndex: chunk, masterChunkIndex: master,
        animations: frames == 0
          ? []
          : [
            ChunkAnimation(
              animationName: talking, sections: [(0..<frames).map { frame($0, tag: tag) }])
          ]))
  }

  func batch(_ chunk: Int, batchIndex: Int? = 0) -> ServerEvent {
    .frameImagesBatch(
      FrameImagesBatch(
        frames: (0..<3).map { frame($0, image: true) }, chunkIndex: chunk, batchIndex: batchIndex))
  }

  /// The (message, chunk) of every plan enqueued.
  func enqueued(_ actions: [SpeechReceiver.Action]) -> [String] {
    actions.compactMap { action in
      guard case .enqueue(let plan, _) = action else { return nil }
      return "\(plan.message.rawValue)/\(plan.index)"
    }
  }

  func dropped(_ actions: [SpeechReceiver.Action]) -> [SpeechReceiver.DropReason] {
    actions.compactMap { action in
      guard case .dropped(_, _, let reason) = action else { return nil }
      return reason
    }
  }

  @Test("a backend that sends every batch and chunk_images_ready twice: one message, no restart")
  func retryingBackend() {
    var receiver = SpeechReceiver()
    var all: [SpeechReceiver.Action] = []
    for event in [
      batch(0), batch(0), audio(0, master: 4), .chunkImagesReady(chunkIndex: 0, totalImagesSent: 3),
      .chunkImagesReady(chunkIndex: 0, totalImagesSent: 3), batch(1), batch(1),
      audio(1, master: 5, tag: "n"), .chunkImagesReady(chunkIndex: 1, totalImagesSent: 3),
      .chunkImagesReady(chunkIndex: 1, totalImagesSent: 3), .audioEnd, .audioEnd,
    ] {
      all += receiver.receive(event, now: 0)
    }
    #expect(enqueued(all) == ["0/0", "0/1"])
    #expect(receiver.currentMessage == MessageID(0))
    #expect(dropped(all) == [.duplicate])  // the second audio_end
    #expect(all.filter { if case .audioEnded = $0 { true } else { false } }.count == 1)
  }

  @Test("a chunk-0 batch re-sent after chunk 1 began, or after audio_end, opens nothing")
  func lateChunk0Batch() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, master: 0), now: 0)
    _ = receiver.receive(audio(1, master: 1, tag: "n"), now: 0.1)
    let late = receiver.receive(batch(0), now: 0.2)
    #expect(late.allSatisfy { if case .decode = $0 { true } else { false } })
    #expect(enqueued(receiver.receive(audio(2, master: 2, tag: "o"), now: 0.3)) == ["0/2"])
    _ = receiver.receive(.audioEnd, now: 0.4)
    _ = receiver.receive(batch(0), now: 0.5)
    #expect(receiver.currentMessage == MessageID(0))
  }

  @Test("a re-sent chunk 0 (same master, or the same content without one) does not restart")
  func duplicateChunk0() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, master: 7), now: 0)
    #expect(dropped(receiver.receive(audio(0, master: 7), now: 0.2)) == [.duplicate])
    var plain = SpeechReceiver()
    _ = plain.receive(audio(0), now: 0)
    #expect(dropped(plain.receive(audio(0), now: 0.2)) == [.duplicate])
    // After audio_end, a late copy is still a re-send; the same words later are a new message.
    _ = plain.receive(.audioEnd, now: 0.3)
    #expect(dropped(plain.receive(audio(0), now: 1)) == [.duplicate])
    #expect(enqueued(plain.receive(audio(0), now: 6)) == ["1/0"])
  }

  @Test("a new chunk 0 opens a new message; the old message's late chunk and audio_end are stale")
  func staleChunks() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, master: 10), now: 0)
    #expect(enqueued(receiver.receive(audio(0, master: 12, tag: "n"), now: 0.3)) == ["1/0"])
    #expect(dropped(receiver.receive(audio(2, master: 11, tag: "o"), now: 0.31)) == [.stale])
    #expect(dropped(receiver.receive(.audioEnd, now: 0.32)) == [.stale])
    #expect(enqueued(receiver.receive(audio(1, master: 13, tag: "p"), now: 0.4)) == ["1/1"])
    #expect(receiver.receive(.audioEnd, now: 0.5) == [.audioEnded(MessageID(1))])
  }

  @Test("an audio_end taken back: a chunk whose master proves it is the message's reopens it")
  func audioEndTakenBack() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, master: 20), now: 0)
    _ = receiver.receive(.audioEnd, now: 0.1)  // an interrupted message's, arriving late
    #expect(enqueued(receiver.receive(audio(1, master: 21, tag: "n"), now: 0.2)) == ["0/1"])
    #expect(receiver.receive(.audioEnd, now: 0.3) == [.audioEnded(MessageID(0))])
  }

  @Test("chunk N before its chunk 0 waits for it, then both play in order in one message")
  func chunkBeforeChunk0() {
    for master in [Int?.none, 30] {
      var receiver = SpeechReceiver()
      #expect(receiver.receive(audio(1, master: master.map { $0 + 1 }, tag: "n"), now: 0).isEmpty)
      let actions = receiver.receive(audio(0, master: master), now: 0.1)
      #expect(enqueued(actions) == ["0/0", "0/1"])
    }
    // A chunk whose chunk 0 never comes is dropped as an orphan, counted.
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(3, master: 9), now: 0)
    #expect(receiver.expire(now: 0.4).isEmpty)
    #expect(dropped(receiver.expire(now: 0.5)) == [.orphan])
  }

  @Test(
    "without masters, the next chunk after an audio_end that no chunk 0 claims is the message's")
  func staleAudioEndWithoutMasters() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, tag: "a"), now: 0)
    _ = receiver.receive(audio(0, tag: "b"), now: 1)  // a barge-in: message 1
    _ = receiver.receive(.audioEnd, now: 1.01)  // message 0's, late: it cannot be told apart
    #expect(receiver.receive(audio(1, tag: "c"), now: 1.1).isEmpty)  // parked
    #expect(enqueued(receiver.expire(now: 1.6)) == ["1/1"])
    // A chunk 0 coming for a parked chunk takes it instead.
    _ = receiver.receive(.audioEnd, now: 2)
    #expect(receiver.receive(audio(1, tag: "e"), now: 2.1).isEmpty)
    #expect(enqueued(receiver.receive(audio(0, tag: "d"), now: 2.2)) == ["2/0", "2/1"])
  }

  /// Found by a generated session (no masters): an interrupted message's late
  /// `audio_end` ended its successor; the successor's chunk 2 was parked, and the next
  /// message's chunk 0, 0.16 s later, took it as its own (its chunk 2 heard, a pop).
  @Test("without masters, a new chunk 0 takes only its own run 1, 2, … of parked chunks")
  func newChunk0TakesOnlyItsOwnRace() {
    // A gap: chunk 2 parked, no chunk 1.
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, tag: "a"), now: 0)
    _ = receiver.receive(audio(0, tag: "b"), now: 0.8)  // a barge-in: message 1
    _ = receiver.receive(.audioEnd, now: 0.81)  // message 0's, late
    #expect(receiver.receive(audio(2, tag: "c"), now: 1.6).isEmpty)  // parked
    #expect(enqueued(receiver.receive(audio(0, tag: "d"), now: 1.7)) == ["2/0"])
    #expect(dropped(receiver.expire(now: 2.1)) == [.orphan])
    // The next chunk of the message open when it came (its audio_end may have been another's):
    // that message's, so a barge-in drops it with that message.
    var next = SpeechReceiver()
    _ = next.receive(audio(0, tag: "a"), now: 0)
    _ = next.receive(audio(0, tag: "b"), now: 0.8)
    _ = next.receive(.audioEnd, now: 0.81)
    #expect(next.receive(audio(1, tag: "c"), now: 1.6).isEmpty)
    #expect(enqueued(next.receive(audio(0, tag: "d"), now: 1.7)) == ["2/0"])
    #expect(dropped(next.expire(now: 2.1)) == [.orphan])
    // A race of the next message's chunks 2 and 1 before its chunk 0 (indexes the open
    // message has): both taken, in order.
    var race = SpeechReceiver()
    _ = race.receive(audio(0, tag: "a"), now: 0)
    _ = race.receive(audio(1, tag: "b"), now: 0.1)
    _ = race.receive(audio(2, tag: "c"), now: 0.15)
    _ = race.receive(.audioEnd, now: 0.2)
    #expect(race.receive(audio(2, tag: "f"), now: 1.0).isEmpty)
    #expect(race.receive(audio(1, tag: "e"), now: 1.01).isEmpty)
    #expect(enqueued(race.receive(audio(0, tag: "d"), now: 1.1)) == ["1/0", "1/1", "1/2"])
  }

  @Test("a late re-send of an interrupted message's chunk 0 is stale, with masters or without")
  func lateChunk0OfInterrupted() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, master: 10, tag: "a"), now: 0)
    _ = receiver.receive(audio(0, master: 12, tag: "b"), now: 0.4)
    #expect(dropped(receiver.receive(audio(0, master: 10, tag: "a"), now: 0.5)) == [.stale])
    #expect(receiver.currentMessage == MessageID(1))
    var plain = SpeechReceiver()
    _ = plain.receive(audio(0, tag: "a"), now: 0)
    _ = plain.receive(audio(0, tag: "b"), now: 0.4)
    #expect(dropped(plain.receive(audio(0, tag: "a"), now: 0.5)) == [.stale])
    #expect(dropped(plain.receive(audio(0, tag: "b"), now: 0.6)) == [.duplicate])
  }

  @Test("masters numbered otherwise: the next chunk joins after the early wait, later ones at once")
  func nonContiguousMasters() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, master: 100), now: 0)
    #expect(receiver.receive(audio(1, master: 105, tag: "n"), now: 0.1).isEmpty)
    #expect(enqueued(receiver.expire(now: 0.6)) == ["0/1"])
    #expect(enqueued(receiver.receive(audio(2, master: 107, tag: "o"), now: 0.7)) == ["0/2"])
  }

  @Test("a chunk_images_ready left from an older message expires before a later plan takes it")
  func readyAheadExpires() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, tag: "a"), now: 0)
    _ = receiver.receive(.audioEnd, now: 0.5)
    _ = receiver.receive(.chunkImagesReady(chunkIndex: 0, totalImagesSent: 3), now: 0.6)
    let next = receiver.receive(audio(0, tag: "b"), now: 4)
    #expect(!next.contains { if case .imagesSent = $0 { true } else { false } })
  }

  @Test("a chunk index the open message has, with other content, belongs to the next message")
  func nextMessagesChunkEarly() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0), now: 0)
    _ = receiver.receive(audio(1, tag: "n"), now: 0.1)
    // The next message's chunk 1 overtook its chunk 0.
    #expect(receiver.receive(audio(1, tag: "q"), now: 0.5).isEmpty)
    #expect(enqueued(receiver.receive(audio(0, tag: "p"), now: 0.6)) == ["1/0", "1/1"])
  }

  @Test("chunk_images_ready before its plan is credited when the plan comes, to that message")
  func readyBeforePlan() {
    var receiver = SpeechReceiver()
    #expect(receiver.receive(.chunkImagesReady(chunkIndex: 0, totalImagesSent: 3), now: 0).isEmpty)
    let actions = receiver.receive(audio(0), now: 0.1)
    #expect(actions.last == .imagesSent(chunk: 0, message: MessageID(0), total: 3, ahead: true))
    // A ready of chunk 2 left over from the old message does not reach the new one.
    _ = receiver.receive(.chunkImagesReady(chunkIndex: 2, totalImagesSent: 3), now: 0.2)
    _ = receiver.receive(audio(0, tag: "z"), now: 0.3)
    _ = receiver.receive(audio(1, tag: "y"), now: 0.4)
    let second = receiver.receive(audio(2, tag: "x"), now: 0.5)
    #expect(!second.contains { if case .imagesSent = $0 { true } else { false } })
  }

  @Test("an app interrupt ends the message for good: its later chunks are stale")
  func appInterrupt() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, master: 3), now: 0)
    receiver.interrupt()
    #expect(dropped(receiver.receive(audio(1, master: 4, tag: "n"), now: 0.1)) == [.stale])
    #expect(enqueued(receiver.receive(audio(0, master: 5, tag: "p"), now: 0.2)) == ["1/0"])
  }

  @Test("a frame with neither coordinates nor a zone is rejected alone: its slot has no mouth")
  func frameWithoutPlacement() {
    var bare = frame(1)
    bare.coordinates = nil
    let chunk = AudioChunk(
      audio: Data([1]), chunkIndex: 0,
      animations: [ChunkAnimation(animationName: talking, sections: [[frame(0), bare, frame(2)]])])
    var receiver = SpeechReceiver()
    let actions = receiver.receive(.audioChunk(chunk), now: 0)
    #expect(
      actions.prefix(2) == [
        .begin(MessageID(0)), .framesRejected(code: "noPlacement", count: 1, chunk: 0),
      ])
    guard case .enqueue(let plan, _)? = actions.last else {
      Issue.record("\(actions)")
      return
    }
    #expect(plan.frames.map(\.layers.count) == [1, 0, 1])
    #expect(plan.frames.map(\.baseFrame) == [0, 1, 2])
  }

  @Test(
    "legacy path: the plan and the audio-only receive_audio of a chunk are paired, either order")
  func legacyPairing() {
    let metadata = ServerEvent.animationChunkMetadata(
      AnimationChunkMetadata(
        chunkIndex: 0, totalFrameImages: 3,
        sections: [.init(animationName: talking, frames: (0..<3).map { frame($0) })]))
    for order in [[metadata, audio(0, frames: 0)], [audio(0, frames: 0), metadata]] {
      var receiver = SpeechReceiver()
      let actions = order.flatMap { receiver.receive($0, now: 0) }
      guard case .enqueue(let plan, let data)? = actions.last,
        actions.dropLast() == [.begin(MessageID(0))]
      else {
        Issue.record("\(actions)")
        continue
      }
      #expect(plan.frames.count == 3 && plan.message == MessageID(0) && data == Data([9]))
    }
  }

  /// A backend (bug or attack) that sends `animation_chunk_metadata` or `chunk_images_ready`
  /// for chunks whose audio never comes: each was kept until the next chunk 0, whatever the
  /// count (2,000 plans of 100 frames held ~30 MB).
  @Test(
    "plans and chunk_images_ready whose chunk never comes are capped and expire: a flood of 2,000 of each holds a few plans, not all"
  )
  func unpairedFloodIsBounded() throws {
    let frames = (0..<100).map { frame($0) }
    // Up to eight runs until one stays in budget: other tests allocate meanwhile (three runs
    // once saw 6 MiB in a full parallel run).
    let (receiver, bytes) = Heap.growth(attempts: 8, budget: 8 << 20) { () -> SpeechReceiver in
      var receiver = SpeechReceiver()
      _ = receiver.receive(audio(0), now: 0)
      for index in 1...2_000 {
        let time = Double(index) * 0.001
        _ = receiver.receive(
          .animationChunkMetadata(
            AnimationChunkMetadata(
              chunkIndex: index, totalFrameImages: 100,
              sections: [.init(animationName: talking, frames: frames)])), now: time)
        _ = receiver.receive(
          .chunkImagesReady(chunkIndex: index + 5_000, totalImagesSent: 1), now: time)
      }
      return receiver
    }
    // Before the caps: ~30 MB held. With them a few plans: well under 1 MiB alone.
    if let bytes {
      #expect(bytes < 8 << 20, "\(bytes) bytes held")
    } else {
      #expect(!Heap.measures, "no heap figure where the C library gives one")
    }
    var late = receiver
    // The newest plan is still paired with its audio; an old one expired (its audio plays
    // without it after the pairing wait).
    #expect(
      late.receive(audio(2_000, frames: 0), now: 2.0).contains { action in
        if case .enqueue(let plan, _) = action { plan.frames.count == 100 } else { false }
      })
    late = receiver
    _ = late.expire(now: 2.0 + SpeechReceiver.unpairedLifetime)
    _ = late.receive(audio(2_000, frames: 0), now: 2.0 + SpeechReceiver.unpairedLifetime)
    let after = late.expire(now: 3.0 + SpeechReceiver.unpairedLifetime)
    #expect(
      after.contains { action in
        if case .enqueue(let plan, _) = action {
          plan.frames.allSatisfy(\.isContinuation)
        } else {
          false
        }
      })
  }

  @Test(
    "audio without a plan still plays: after the pairing timeout, in mouthless slots for its duration"
  )
  func audioOnly() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0), now: 0)
    // A new message whose chunk 0 is audio only.
    let mp3 = silentMP3(seconds: 1)
    // It begins at once (the old message stops), and its audio waits for its plan.
    #expect(receiver.receive(audio(0, frames: 0, data: mp3), now: 1) == [.begin(MessageID(1))])
    #expect(receiver.expire(now: 1.4).isEmpty)
    let actions = receiver.expire(now: 1.5)
    guard case .enqueue(let plan, let data)? = actions.first else {
      Issue.record("\(actions)")
      return
    }
    #expect(plan.message == MessageID(1) && data == mp3)
    // 39 whole MP3 frames of 1152 samples at 44.1 kHz: 1.0188 s, 31 slots at 30 fps.
    #expect(plan.frames.count == 31)
    #expect(plan.frames.allSatisfy { $0.isContinuation })
  }

  @Test(
    "images the decoder rejected are reported failed; first_frame_image decodes the first mouth")
  func failedAndFirstFrame() {
    var receiver = SpeechReceiver()
    var rejected = frame(1, image: false)
    rejected.rejection = LIVAProtocolError(.malformedValue, "invalid base64")
    let actions = receiver.receive(
      .frameImagesBatch(
        FrameImagesBatch(frames: [frame(0, image: true), rejected], chunkIndex: 0)),
      now: 0)
    #expect(actions.first == .imagesFailed([rejected.overlayId]))
    var chunk = AudioChunk(
      audio: Data([1]), chunkIndex: 0,
      animations: [ChunkAnimation(animationName: talking, sections: [[frame(0)]])])
    chunk.firstFrameImage = FirstFrameImage(
      image: EncodedImage(data: Data([7])), sheetFilename: "m.webp")
    var fresh = SpeechReceiver()
    let first = fresh.receive(.audioChunk(chunk), now: 0)
    #expect(first.first == .begin(MessageID(0)))
    #expect(
      first.dropFirst().first
        == .decode([EncodedOverlay(key: frame(0).overlayId, data: Data([7]))], chunk: 0))
  }
}
