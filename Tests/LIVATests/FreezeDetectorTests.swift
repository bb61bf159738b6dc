import LIVA
import LIVAEngine
import LIVAProtocol
import Testing

/// Freezes and frames per second as time diagrams on a virtual clock.
@Suite("Freezes and FPS")
struct FreezeDetectorTests {
  @Test("a gap between display ticks over the threshold is a display stall, with its times")
  func displayStall() {
    var detector = FreezeDetector()
    for k in 0...30 { detector.tick(at: Double(k) / 60) }
    detector.tick(at: 0.5 + 0.25)  // the display stalled for 0.25 s
    #expect(detector.freezes == [Freeze(start: 0.5, duration: 0.25, cause: .displayStall)])
    detector.tick(at: 0.75 + 0.1)  // exactly the threshold: not a freeze
    #expect(detector.count == 1)
  }

  @Test("a hold is a freeze from its first held tick to the next frame, when over the threshold")
  func holds() {
    var detector = FreezeDetector()
    detector.tick(at: 0)
    detector.presented(at: 0)
    for k in 1...9 {
      detector.tick(at: Double(k) / 60)
      detector.held(at: Double(k) / 60, cause: .overlayNotReady)
    }
    detector.presented(at: 10.0 / 60)  // 9 ticks held: 0.15 s
    #expect(detector.freezes.map(\.cause) == [.overlayNotReady])
    #expect(abs(detector.longest - 9.0 / 60) < 1e-9)
    // A short hold (0.05 s) is not a freeze; a paused stretch is not either.
    detector.held(at: 1, cause: .waitingForNextChunk)
    detector.presented(at: 1.05)
    detector.held(at: 2, cause: .baseFrameMiss)
    detector.paused()
    detector.presented(at: 5)
    #expect(detector.count == 1)
  }

  @Test("frames per second are counted in each second of display time since the first tick")
  func framesPerSecond() {
    var detector = FreezeDetector()
    detector.tick(at: 10)
    for k in 0..<10 { detector.presented(at: 10 + Double(k) / 10) }  // 10 fps
    for k in 0..<30 { detector.presented(at: 11 + Double(k) / 30) }  // 30 fps
    detector.presented(at: 13.5)  // nothing in the third second
    #expect(detector.framesPerSecond == [10, 30, 0, 1])
  }

  @Test("frames per second keep the last 600 seconds, not one entry a second forever")
  func framesPerSecondBounded() {
    var detector = FreezeDetector()
    detector.tick(at: 0)
    for second in 0..<700 {
      for k in 0..<3 { detector.presented(at: Double(second) + Double(k) / 3) }
    }
    #expect(FreezeDetector.framesPerSecondLimit == 600)
    #expect(detector.framesPerSecond.count == 600)
    #expect(detector.framesPerSecondStart == 100)
    #expect(detector.framesPerSecond.allSatisfy { $0 == 3 })
    // A frame of a second already dropped is not counted; the next second extends the window.
    detector.presented(at: 50.5)
    detector.presented(at: 700.5)
    #expect(detector.framesPerSecond.count == 600)
    #expect(detector.framesPerSecondStart == 101)
    #expect(detector.framesPerSecond.last == 1)
    #expect(detector.framesPerSecond.reduce(0, +) == 599 * 3 + 1)
  }

  struct HoldCase: Sendable, CustomTestStringConvertible {
    var cause: Freeze.Cause
    var duration: Double
    var freeze: Bool
    var wait: Bool
    var testDescription: String { "\(cause) held \(duration) s" }
  }

  @Test(
    "a hold at a chunk boundary within the grace is a wait, counted apart; a longer one is a freeze",
    arguments: [
      HoldCase(cause: .waitingForNextChunk, duration: 0.05, freeze: false, wait: false),
      HoldCase(cause: .waitingForNextChunk, duration: 0.18, freeze: false, wait: true),
      HoldCase(cause: .waitingForNextChunk, duration: 0.25, freeze: false, wait: true),
      HoldCase(cause: .waitingForNextChunk, duration: 0.3, freeze: true, wait: false),
      HoldCase(cause: .waitingForNextChunk, duration: 0.83, freeze: true, wait: false),
      HoldCase(cause: .overlayNotReady, duration: 0.18, freeze: true, wait: false),
    ])
  func boundaryWaits(_ test: HoldCase) {
    var detector = FreezeDetector()
    #expect(detector.boundaryWaitLimit == 0.25)
    for k in 0..<60 {
      detector.tick(at: Double(k) / 60)
      detector.presented(at: Double(k) / 60)
    }
    for k in 1...Int((test.duration * 60).rounded()) {
      detector.tick(at: 1 + Double(k - 1) / 60)
      detector.held(at: 1 + Double(k - 1) / 60, cause: test.cause)
    }
    detector.tick(at: 1 + test.duration)
    detector.presented(at: 1 + test.duration)
    let hold = Freeze(start: 1, duration: test.duration, cause: test.cause)
    #expect(detector.freezes.count == (test.freeze ? 1 : 0))
    #expect(detector.count == (test.freeze ? 1 : 0))
    #expect(detector.boundaryWaitCount == (test.wait ? 1 : 0))
    if test.freeze { #expect(abs(detector.freezes[0].duration - hold.duration) < 1e-9) }
    if test.wait {
      #expect(detector.boundaryWaits.map(\.cause) == [.waitingForNextChunk])
      #expect(abs(detector.boundaryWaits[0].duration - hold.duration) < 1e-9)
      #expect(detector.longest == 0)
    }
  }

  @Test(
    "the player: idle counts 10 frames a second; a chunk that never comes is waited for, mouth closed, then idle"
  )
  func player() throws {
    let (player, link, audio, recorder) = try makePlayer()
    link.tick(at: 0)
    link.run(from: 0, to: 2)
    #expect(player.metrics.freezes.framesPerSecond.prefix(2) == [10, 10])
    // Chunk 0 of a message whose chunk 1 (and audio_end) never come: the last mouth is held
    // for the grace, then the mouth closes and the body moves until the wait ends (3 s).
    let frames = try wireFrames(count: 30, tag: "f")
    sendChunkZero(player, frames: frames)
    link.run(from: 2, to: 11)
    let metrics = player.metrics
    #expect(metrics.freezes.freezes.isEmpty, "\(metrics.freezes.freezes)")
    #expect(metrics.freezes.boundaryWaitCount == 1)
    #expect(metrics.engine.boundaryWaits == 1)
    #expect(metrics.engine.boundaryWaitFrames >= 80)
    #expect(metrics.engine.pops == 0)
    // The mouth leaves the screen within 0.2 s of the end of the chunk's audio.
    let presented = recorder.frames
    let lastMouth = try #require(presented.last { !$0.content.overlays.isEmpty })
    let next = try #require(presented.first { $0.time > lastMouth.time })
    let segment = try #require(audio.segments.first)
    let silence = segment.start + (segment.duration ?? 0)
    #expect(next.time <= silence + 0.2, "\(next.time - silence) s of a silent mouth")
    #expect(next.content.overlays.isEmpty)
    // The body moves at 30 fps through the wait, then idle runs at 10 fps.
    let perSecond = metrics.freezes.framesPerSecond
    #expect(perSecond.reduce(0, +) == metrics.framesPresented)
    #expect(perSecond[4...5].allSatisfy { $0 == 30 }, "\(perSecond)")
    #expect(perSecond[8..<11].allSatisfy { $0 == 10 }, "\(perSecond)")
  }
}
