import LIVAEngine
import LIVAProtocol
import Testing

@testable import LIVAPlatform

@Suite("AudioTimeline")
struct AudioTimelineTests {
  let rate = 48_000.0
  let a = ChunkID(message: MessageID(1), index: 0)
  let b = ChunkID(message: MessageID(1), index: 1)

  func timeline(latency: Double) -> AudioTimeline {
    AudioTimeline(sampleRate: rate, outputLatency: latency, displayTime: 10)
  }

  func near(_ clock: AudioClock?, _ position: Double, _ chunk: ChunkID? = nil) -> Bool {
    guard let clock else { return false }
    return abs(clock.position - position) < 1e-6 && (chunk == nil || clock.chunk == chunk)
  }

  @Test(
    "a chunk started now is heard after the lead and the output latency; until then the position waits",
    arguments: [0.005, 0.02, 0.2])
  func latency(latency: Double) {
    var line = timeline(latency: latency)
    let actions = line.start(a, totalFrames: 48_000, offset: 0, at: 10.5)
    // 10 ms ahead of the renderer.
    #expect(actions == [.schedule(chunk: a, at: 24_480, skip: 0, frames: 48_000)])
    let heardFrom = 10.51 + latency
    #expect(near(line.position(at: 10.5), 0, a))
    #expect(near(line.position(at: heardFrom - 0.001), 0, a))  // the mouth waits for the sound
    #expect(near(line.position(at: heardFrom + 0.5), 0.5, a))
    #expect(line.position(at: heardFrom + 1.0) == nil)  // heard to its end
  }

  @Test(
    "the next chunk, handed over early, goes exactly where the last one ends; it is reported once started"
  )
  func backToBack() {
    for latency in [0.005, 0.02, 0.25] {
      var line = timeline(latency: latency)
      _ = line.start(a, totalFrames: 24_000, offset: 0, at: 10.0)  // rendered from 10.01
      let handed = line.enqueue(b, totalFrames: 24_000, at: 10.2)
      #expect(handed == [.schedule(chunk: b, at: 480 + 24_000, skip: 0, frames: 24_000)])
      let boundary = 10.51 + latency  // a heard to its end
      #expect(near(line.position(at: boundary - 0.001), 0.499, a))
      // The engine hears a end, moves to b and starts it a tick later: nothing to schedule,
      // and b's position is where the sound already is (no gap was left in it).
      #expect(line.position(at: boundary) == nil)
      #expect(line.start(b, totalFrames: 24_000, offset: 0, at: boundary + 0.012).isEmpty)
      #expect(near(line.position(at: boundary + 0.012), 0.012, b), "latency \(latency)")
      #expect(near(line.position(at: boundary + 0.3), 0.3, b))
    }
  }

  @Test("a chunk handed over when nothing is rendering waits for its start; one never overlaps")
  func noOverlap() {
    var line = timeline(latency: 0.02)
    #expect(line.enqueue(a, totalFrames: 48_000, at: 10).isEmpty)
    _ = line.start(a, totalFrames: 48_000, offset: 0, at: 10.0)
    // b started while a is still rendering (an engine that did not hand it over): after a.
    #expect(
      line.start(b, totalFrames: 48_000, offset: 0, at: 10.5)
        == [.schedule(chunk: b, at: 480 + 48_000, skip: 0, frames: 48_000)])
  }

  @Test("an offset skips into the chunk")
  func offset() {
    var line = timeline(latency: 0)
    #expect(
      line.start(a, totalFrames: 48_000, offset: 0.25, at: 10.5)
        == [.schedule(chunk: a, at: 24_480, skip: 12_000, frames: 36_000)])
    #expect(near(line.position(at: 10.61), 0.35, a))
  }

  @Test(
    "pause and resume: what was already in the output is still heard, then the sound stops and goes on from there"
  )
  func pauseResume() {
    var line = timeline(latency: 0.1)
    _ = line.start(a, totalFrames: 96_000, offset: 0, at: 10.0)  // heard from 10.11
    #expect(line.pause(at: 11.0) == [.pausePlayer])
    #expect(near(line.position(at: 11.0), 0.89))
    #expect(near(line.position(at: 11.1), 0.99))  // rendered before the pause
    #expect(near(line.position(at: 15.0), 0.99))  // then nothing moves
    #expect(line.pause(at: 12).isEmpty)
    #expect(line.resume(at: 20.0) == [.playPlayer])
    #expect(near(line.position(at: 20.1), 0.99))
    #expect(near(line.position(at: 20.6), 1.49))
  }

  @Test(
    "a phone call: the engine stops; afterwards the chunk is scheduled again from where it was heard"
  )
  func interruption() {
    var line = timeline(latency: 0.02)
    _ = line.start(a, totalFrames: 96_000, offset: 0, at: 10.0)  // heard from 10.03
    #expect(line.interruptionBegan(at: 10.5).isEmpty)
    #expect(near(line.position(at: 10.52), 0.49))
    // The new engine's sample clock starts again at 0.
    let actions = line.interruptionEnded(at: 30.0, sampleTime: 0)
    #expect(
      actions == [.restartEngine, .schedule(chunk: a, at: 480, skip: 23_520, frames: 72_480)])
    #expect(near(line.position(at: 30.0), 0.49, a))
    #expect(near(line.position(at: 30.53), 0.99, a))
  }

  @Test("stop drops everything scheduled; a fresh reading of the device corrects drift")
  func stopAndAnchor() {
    var line = timeline(latency: 0)
    _ = line.start(a, totalFrames: 48_000, offset: 0, at: 10.09)  // from sample 4 800
    // The device's clock runs 0.1 % slow: a reading says so, and positions follow it.
    line.anchor(displayTime: 10.6, sampleTime: 0.6 * rate * 0.999)
    #expect(near(line.position(at: 10.6), 0.6 * 0.999 - 0.1))
    #expect(line.stop(b, at: 10.7).isEmpty)
    #expect(line.stop(a, at: 10.7) == [.stopPlayer, .playPlayer])
    #expect(line.position(at: 10.8) == nil)
  }

  let c = ChunkID(message: MessageID(1), index: 2)
  let other = ChunkID(message: MessageID(2), index: 0)

  @Test("chunks handed over while nothing plays join the first one's start, gapless, in order")
  func preparedWhileIdle() {
    var line = timeline(latency: 0.2)  // Bluetooth
    #expect(line.enqueue(a, totalFrames: 24_000, at: 10).isEmpty)
    #expect(line.enqueue(b, totalFrames: 24_000, at: 10).isEmpty)
    #expect(line.handedOver == [a, b])
    #expect(
      line.start(a, totalFrames: 24_000, offset: 0, at: 10.0)
        == [
          .schedule(chunk: a, at: 480, skip: 0, frames: 24_000),
          .schedule(chunk: b, at: 24_480, skip: 0, frames: 24_000),
        ])
    #expect(line.handedOver.isEmpty)
    // b's start finds its audio already there: no gap of output latency + lead, no second copy.
    #expect(line.start(b, totalFrames: 24_000, offset: 0, at: 10.72).isEmpty)
    #expect(near(line.position(at: 10.72), 0.01, b))
  }

  @Test("a chunk handed over before the one it follows waits for it; another message's never joins")
  func handedOverInOrder() {
    var line = timeline(latency: 0.02)
    _ = line.start(a, totalFrames: 24_000, offset: 0, at: 10.0)
    #expect(line.enqueue(c, totalFrames: 24_000, at: 10.1).isEmpty)  // b is not here yet
    #expect(
      line.enqueue(b, totalFrames: 24_000, at: 10.2)
        == [
          .schedule(chunk: b, at: 24_480, skip: 0, frames: 24_000),
          .schedule(chunk: c, at: 48_480, skip: 0, frames: 24_000),
        ])
    var idle = timeline(latency: 0.02)
    _ = idle.enqueue(b, totalFrames: 24_000, at: 10)
    // Another message starts: b (of the message before) is not its continuation.
    #expect(
      idle.start(other, totalFrames: 24_000, offset: 0, at: 10)
        == [.schedule(chunk: other, at: 480, skip: 0, frames: 24_000)])
    #expect(idle.handedOver.isEmpty)
  }

  @Test("a chunk already scheduled ahead that starts at an offset is not scheduled again")
  func scheduledAheadStartsAtOffset() {
    var line = timeline(latency: 0.02)
    _ = line.start(a, totalFrames: 24_000, offset: 0, at: 10.0)
    _ = line.enqueue(b, totalFrames: 24_000, at: 10.2)
    // The engine starts b late, 50 ms in: its sound is already playing from b's first sample.
    #expect(line.start(b, totalFrames: 24_000, offset: 0.05, at: 10.58).isEmpty)
    #expect(line.segments.filter { $0.chunk == b }.count == 1)
    #expect(near(line.position(at: 10.58), 0.05, b))  // where the sound is
  }

  @Test("stop: the player's sample clock starts again at 0 (played again unless paused)")
  func stopRestartsTheSampleClock() {
    var line = timeline(latency: 0)
    _ = line.start(a, totalFrames: 96_000, offset: 0, at: 10.0)
    #expect(line.stop(a, at: 10.7) == [.stopPlayer, .playPlayer])
    // Scheduled 10 ms ahead of the fresh clock, not of the old one (33 600 samples later).
    #expect(
      line.start(b, totalFrames: 24_000, offset: 0, at: 10.8)
        == [.schedule(chunk: b, at: 5_280, skip: 0, frames: 24_000)])
    var paused = timeline(latency: 0)
    _ = paused.start(a, totalFrames: 96_000, offset: 0, at: 10.0)
    _ = paused.pause(at: 10.5)
    #expect(paused.stop(a, at: 10.7) == [.stopPlayer])
  }

  @Test("a pause during an interruption holds when it ends; the chunk waits, scheduled, for resume")
  func pauseDuringInterruption() {
    var line = timeline(latency: 0.02)
    _ = line.start(a, totalFrames: 96_000, offset: 0, at: 10.0)  // heard from 10.03
    _ = line.interruptionBegan(at: 10.5)
    #expect(line.pause(at: 10.5).isEmpty)  // the engine is stopped already
    // Ended without "should resume": the app stays paused, and so does the sound.
    let actions = line.interruptionEnded(at: 30.0, sampleTime: 0)
    #expect(
      actions == [
        .restartEngine, .pausePlayer, .schedule(chunk: a, at: 480, skip: 23_520, frames: 72_480),
      ])
    #expect(near(line.position(at: 40), 0.49, a))
    #expect(line.resume(at: 50) == [.playPlayer])
    #expect(near(line.position(at: 50.53), 0.99, a))
  }

  @Test("chunks scheduled ahead before an interruption are scheduled again after it, in order")
  func interruptionKeepsTheNextChunk() {
    var line = timeline(latency: 0.02)
    _ = line.start(a, totalFrames: 48_000, offset: 0, at: 10.0)
    _ = line.enqueue(b, totalFrames: 24_000, at: 10.2)
    _ = line.interruptionBegan(at: 10.5)
    #expect(
      line.interruptionEnded(at: 30, sampleTime: 0)
        == [
          .restartEngine, .schedule(chunk: a, at: 480, skip: 23_520, frames: 24_480),
          .schedule(chunk: b, at: 24_960, skip: 0, frames: 24_000),
        ])
  }

  @Test("a start whose audio is still being decoded holds the mouth at its offset until it comes")
  func startWhileDecoding() {
    var line = timeline(latency: 0.02)
    line.startPending(a, offset: 0.25, at: 10.0)
    #expect(near(line.position(at: 10.3), 0.25, a))
    #expect(line.pendingStart == a)
    #expect(
      line.start(a, totalFrames: 48_000, offset: 0.25, at: 10.3)
        == [.schedule(chunk: a, at: 14_880, skip: 12_000, frames: 36_000)])
    #expect(line.pendingStart == nil)
    // Stopped while decoding: nothing waits any more.
    line.startPending(b, offset: 0, at: 11)
    #expect(line.stop(b, at: 11.1).isEmpty)  // nothing of b was scheduled
    #expect(line.pendingStart == nil)
    // Audio that cannot be decoded: the position is no longer held.
    line.startPending(c, offset: 0, at: 12)
    line.abandonPending(b)  // another chunk's: no effect
    #expect(line.pendingStart == c)
    line.abandonPending(c)
    #expect(line.pendingStart == nil && line.position(at: 12.5) == nil)
  }
}
