import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Testing

/// The message attribution rules of `SpeechReceiver`, as time diagrams of events (pure, no
/// threads, no waiting).
@Suite("SpeechReceiver: one message identity for every event")
struct SpeechReceiverTests {
  let talking = try! AnimationName(parsing: "talking_1_s_talking_1_e")

  func frame(_ index: Int, image: Bool = false) -> OverlayFrame {
    OverlayFrame(
      overlayId: "\(talking)/\(index)/m.webp", animationName: talking,
      matchedSpriteFrameNumber: index, sheetFilename: "m.webp",
      image: image ? EncodedImage(data: Data([1, 2, 3])) : nil)
  }

  func audio(_ chunk: Int, frames: Int = 3, master: Int? = nil, data: Data = Data([9]))
    -> ServerEvent
  {
    .audioChunk(
      AudioChunk(
        audio: data, chunkIndex: chunk, masterChunkIndex: master,
        animations: frames == 0
          ? []
          : [ChunkAnimation(animationName: talking, sections: [(0..<frames).map { frame($0) }])]
      ))
  }

  func batch(_ chunk: Int, batchIndex: Int? = 0) -> ServerEvent {
    .frameImagesBatch(
      FrameImagesBatch(
        frames: (0..<3).map { frame($0, image: true) }, chunkIndex: chunk, batchIndex: batchIndex))
  }

  /// The message of each action that names one.
  func messages(_ actions: [SpeechReceiver.Action]) -> [Int] {
    actions.compactMap { action in
      switch action {
      case .enqueue(let plan, _): plan.message?.rawValue
      case .decode(_, _, let message): message.rawValue
      case .imagesSent(_, let message, _): message.rawValue
      case .audioEnded(let message): message.rawValue
      default: nil
      }
    }
  }

  @Test(
    "B1: a new message's chunk-0 batches before its audio, while the old one is in chunk 0, open it"
  )
  func batchesBeforeAudio() {
    var receiver = SpeechReceiver()
    #expect(messages(receiver.receive(audio(0), now: 0)) == [0])
    #expect(messages(receiver.receive(batch(0), now: 0)) == [0])
    // 0.3 s later the next message starts with its images (batch_index 0 again)…
    #expect(messages(receiver.receive(batch(0), now: 0.3)) == [1])
    // …and its audio joins it instead of opening a third message.
    #expect(messages(receiver.receive(audio(0), now: 0.31)) == [1])
    #expect(messages(receiver.receive(batch(1), now: 0.32)) == [1])
  }

  @Test(
    "chunk-0 batches without batch_index open a new message once the old one moved past chunk 0")
  func batchesWithoutIndex() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0), now: 0)
    #expect(messages(receiver.receive(batch(0, batchIndex: nil), now: 0)) == [0])
    #expect(messages(receiver.receive(batch(0, batchIndex: nil), now: 0)) == [0])  // more of it
    _ = receiver.receive(audio(1), now: 0.1)
    #expect(messages(receiver.receive(batch(0, batchIndex: nil), now: 0.2)) == [1])
  }

  @Test(
    "B9: a chunk of an interrupted message (older master_chunk_index) and its audio_end are stale")
  func staleChunks() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0, master: 10), now: 0)
    _ = receiver.receive(audio(0, master: 12), now: 0.3)  // the new message: chunk 0 is master 12
    #expect(
      receiver.receive(audio(2, master: 11), now: 0.31) == [
        .stale(event: "receive_audio", chunk: 2)
      ])
    #expect(receiver.receive(.audioEnd, now: 0.32) == [.stale(event: "audio_end", chunk: nil)])
    #expect(messages(receiver.receive(audio(1, master: 13), now: 0.4)) == [1])
    #expect(messages(receiver.receive(.audioEnd, now: 0.5)) == [1])
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
      guard case .enqueue(let plan, let data)? = actions.last, actions.count == 1 else {
        Issue.record("\(actions)")
        continue
      }
      #expect(plan.frames.count == 3 && plan.message == MessageID(0) && data == Data([9]))
    }
  }

  @Test(
    "B2: audio without a plan still plays: after the pairing timeout, in mouthless slots for its duration"
  )
  func audioOnly() {
    var receiver = SpeechReceiver()
    _ = receiver.receive(audio(0), now: 0)
    // A new message whose chunk 0 is audio only.
    let mp3 = silentMP3(seconds: 1)
    #expect(receiver.receive(audio(0, frames: 0, data: mp3), now: 1).isEmpty)
    #expect(receiver.expire(now: 1.4).isEmpty)
    let actions = receiver.expire(now: 1.5)
    guard case .enqueue(let plan, let data)? = actions.first else {
      Issue.record("\(actions)")
      return
    }
    #expect(plan.message == MessageID(1) && data == mp3)
    let duration = try! MP3Timing(parsing: mp3).duration  // 39 whole MP3 frames: 1.019 s
    #expect(plan.frames.count == Int((duration * 30).rounded()))
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
    #expect(
      first.first
        == .decode(
          [EncodedOverlay(key: frame(0).overlayId, data: Data([7]))], chunk: 0,
          message: MessageID(0)))
  }
}
