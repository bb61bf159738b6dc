import Foundation
import LIVAPlatform
import Testing

@testable import LIVA

@Suite("Texts waiting for their answer")
struct PendingAnswersTests {
  @Test("speech answers the oldest text waiting, in order")
  func answersInOrder() {
    var pending = PendingAnswers(timeout: 30)
    _ = pending.sent("a", at: 1)
    _ = pending.sent("b", at: 2)
    #expect(pending.answer() == "a")
    #expect(pending.answer() == "b")
    #expect(pending.answer() == nil)
  }

  // A message never answered paired every later answer with the wrong text.
  @Test(
    "a text unanswered for the timeout is given up, and the next answer pairs with the next text"
  )
  func unansweredExpires() {
    var pending = PendingAnswers(timeout: 30)
    _ = pending.sent("lost", at: 10)
    _ = pending.sent("next", at: 35)
    #expect(pending.expire(now: 39.9).isEmpty)
    #expect(pending.expire(now: 40) == ["lost"])
    #expect(pending.answer() == "next")
  }

  @Test("a text sent before the first tick is timed from the first tick")
  func sentBeforeAnyTick() {
    var pending = PendingAnswers(timeout: 30)
    _ = pending.sent("early", at: nil)
    #expect(pending.expire(now: 100).isEmpty)
    #expect(pending.expire(now: 129.9).isEmpty)
    #expect(pending.expire(now: 130) == ["early"])
  }

  @Test("at most 16 wait: a 17th pushes the oldest out, returned to be reported")
  func bounded() {
    var pending = PendingAnswers(timeout: 30)
    for index in 0..<PendingAnswers.limit { #expect(pending.sent("t\(index)", at: 0).isEmpty) }
    #expect(pending.sent("t16", at: 0) == ["t0"])
    #expect(pending.waiting.count == PendingAnswers.limit)
    #expect(pending.answer() == "t1")
  }

  @Test("a failed send withdraws its text, the newest copy of it")
  func withdraw() {
    var pending = PendingAnswers(timeout: 30)
    _ = pending.sent("hi", at: 1)
    _ = pending.sent("other", at: 2)
    _ = pending.sent("hi", at: 3)
    pending.withdraw("hi")
    #expect(pending.waiting.map(\.text) == ["hi", "other"])
    #expect(pending.waiting.first?.sentAt == 1)
  }

  @Test("a disconnect gives every text up, oldest first")
  func clear() {
    var pending = PendingAnswers(timeout: 30)
    _ = pending.sent("a", at: 1)
    _ = pending.sent("b", at: 2)
    #expect(pending.clear() == ["a", "b"])
    #expect(pending.answer() == nil)
  }
}

@Suite("A client's texts and the speech that answers them")
struct ClientAnswerTests {
  // A message interrupted while it waited to start (its mouths not in yet) got
  // neither speakingStarted nor speakingEnded: its text was never heard of again.
  @Test("a message interrupted before its first frame ends, with its text and interrupted")
  func interruptedBeforeStart() async throws {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent(
      "liva-answers-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: root) }
    let client = try LIVAClient(
      configuration: LIVAConfiguration(
        serverURL: "http://127.0.0.1:9", userID: "u", agentID: "a", cacheRoot: root),
      displayLink: VirtualDisplayLink(), audio: HeadlessAudioOutput(),
      surface: CallbackSurface { _ in })
    // The client's events, as emitted (synchronously, from the player's observer).
    let (events, continuation) = AsyncStream<LIVAEvent>.makeStream()
    client.protectedState.withLock { state in
      state.eventContinuations[UUID()] = continuation
      _ = state.core.sent("first")
      _ = state.core.sent("second")
    }
    // Its plan, none of its images: it waits to start.
    client.player.handle(planned(try wireFrames(count: 30, tag: "a"), chunk: 0, seconds: 1))
    // A new message (another chunk 0, another plan) interrupts it.
    client.player.handle(planned(try wireFrames(count: 30, tag: "b"), chunk: 0, seconds: 1))
    continuation.finish()
    var ended: [(text: String?, interrupted: Bool)] = []
    for await event in events {
      if case .speakingEnded(_, let text, let interrupted) = event {
        ended.append((text, interrupted))
      }
    }
    #expect(ended.count == 1)
    #expect(ended.first?.text == "first" && ended.first?.interrupted == true)
    #expect(client.protectedState.withLock { $0.core.texts.values.sorted() } == ["second"])
  }
}
