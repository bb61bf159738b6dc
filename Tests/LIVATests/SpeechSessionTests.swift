import Foundation
import LIVA
import LIVAEngine
import LIVAProtocol
import Testing

/// `SpeechSession`: the engine's commands from the speech events, each held chunk's audio and
/// keys, and what a `chunk_images_ready` means (pure, on virtual time).
@Suite("SpeechSession: the life of each message, as commands to the engine")
struct SpeechSessionTests {
  let talking = try! AnimationName(parsing: "talking_1_s_talking_1_e")

  func audio(_ chunk: Int, tag: String, data: Data = Data([9])) -> ServerEvent {
    .audioChunk(
      AudioChunk(
        audio: data, chunkIndex: chunk,
        animations: [
          ChunkAnimation(
            animationName: talking,
            sections: [
              (0..<3).map {
                OverlayFrame(
                  overlayId: "\(tag)/\($0)", animationName: talking, matchedSpriteFrameNumber: $0,
                  sheetFilename: "\(tag).webp",
                  coordinates: PlacementRect(x: 1, y: 2, width: 3, height: 4))
              }
            ])
        ]))
  }

  /// Carries out the session's enqueues as an engine that queues every plan would.
  func queueAll(_ commands: [SpeechSession.Command], in session: inout SpeechSession) {
    for case .enqueue(let plan, let data) in commands {
      session.queued(
        ChunkID(message: plan.message, index: plan.index),
        keys: ChunkKeys(plan, startFrames: 2), audio: data)
    }
  }

  @Test("a new chunk 0 begins its message before its plan is enqueued; its audio_end ends it")
  func beginThenEnqueue() {
    var session = SpeechSession(speakingFPS: 30)
    let commands = session.receive(audio(0, tag: "a"), now: 0, fromLostConnection: false)
    guard commands.count == 2, case .enqueue(let plan, let data) = commands[1] else {
      Issue.record("\(commands)")
      return
    }
    #expect(commands[0] == .begin(MessageID(0)))
    #expect(plan.message == MessageID(0) && plan.index == 0 && data == Data([9]))
    #expect(
      session.receive(.audioEnd, now: 0.1, fromLostConnection: false)
        == [.audioEnded(MessageID(0))])
  }

  @Test("chunk_images_ready counts only when its chunk's images came before it")
  func readyJudgedFromImages() {
    var session = SpeechSession(speakingFPS: 30)
    queueAll(
      session.receive(audio(0, tag: "a"), now: 0, fromLostConnection: false), in: &session)
    let id = ChunkID(message: MessageID(0), index: 0)
    let ready = session.receive(
      .chunkImagesReady(chunkIndex: 0, totalImagesSent: 3), now: 0.1, fromLostConnection: false)
    #expect(ready == [.imagesSent(id, ahead: false)])
    // None of its images came: another message's. One came: this chunk's.
    #expect(!session.credits(id, ahead: false) { _ in false })
    #expect(session.credits(id, ahead: false) { $0 == "a/2" })
    // Before its plan: the chunk's only if every one of its images came before it.
    var fresh = SpeechSession(speakingFPS: 30)
    let ahead = fresh.receive(
      .chunkImagesReady(chunkIndex: 0, totalImagesSent: 3), now: 1, fromLostConnection: false)
    #expect(ahead.isEmpty)
    let next = fresh.receive(audio(0, tag: "b"), now: 1.1, fromLostConnection: false)
    queueAll(next, in: &fresh)
    let second = ChunkID(message: MessageID(0), index: 0)
    #expect(next.last == .imagesSent(second, ahead: true))
    #expect(!fresh.credits(second, ahead: true) { $0 != "b/1" })
    #expect(fresh.credits(second, ahead: true) { _ in true })
  }

  @Test("a chunk's audio and keys are held from queued until it finishes or its message drops")
  func heldUntilFinishedOrDropped() {
    var session = SpeechSession(speakingFPS: 30)
    queueAll(
      session.receive(audio(0, tag: "a"), now: 0, fromLostConnection: false), in: &session)
    queueAll(
      session.receive(audio(1, tag: "b", data: Data([8])), now: 0.1, fromLostConnection: false),
      in: &session)
    let first = ChunkID(message: MessageID(0), index: 0)
    let second = ChunkID(message: MessageID(0), index: 1)
    #expect(session.heldChunks == 2)
    #expect(session.audio(for: second) == Data([8]))
    #expect(session.chunkKeys.map(\.ordered) == [["a/0", "a/1", "a/2"], ["b/0", "b/1", "b/2"]])
    #expect(session.chunkIndex(drawing: "b/1") == 1)
    #expect(session.finished(first) == ["a/0", "a/1", "a/2"])
    #expect(session.audio(for: first) == nil && session.heldChunks == 1)
    #expect(session.keysStillUsed == ["b/0", "b/1", "b/2"])
    #expect(session.dropped(MessageID(1)).isEmpty && session.heldChunks == 1)
    #expect(session.dropped(MessageID(0)) == ["b/0", "b/1", "b/2"])
    #expect(session.heldChunks == 0 && session.keysStillUsed.isEmpty)
  }
}
