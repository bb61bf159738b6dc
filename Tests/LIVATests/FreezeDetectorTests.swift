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

  @Test("the player: idle counts 10 frames a second; a chunk that never comes freezes the picture")
  func player() throws {
    let tests = PlayerTests()
    let (player, link, _, _) = try tests.makePlayer()
    link.tick(at: 0)
    link.run(from: 0, to: 2)
    #expect(player.metrics.freezes.framesPerSecond.prefix(2) == [10, 10])
    // Chunk 0 of a message whose chunk 1 (and audio_end) never come: the last mouth is held
    // for the boundary hold (1 s), waiting for a chunk that can still come.
    let frames = try wireFrames(count: 30, tag: "f")
    tests.sendChunkZero(player, frames: frames)
    link.run(from: 2, to: 7)
    let freezes = player.metrics.freezes.freezes
    #expect(freezes.map(\.cause) == [.waitingForNextChunk])
    #expect(freezes.first.map { abs($0.duration - 1) < 0.05 } == true, "\(freezes)")
    let perSecond = player.metrics.freezes.framesPerSecond
    #expect(perSecond.reduce(0, +) == player.metrics.framesPresented)
    #expect(perSecond[5...].allSatisfy { $0 == 10 })  // back in idle after the hold
  }
}
