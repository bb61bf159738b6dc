import LIVAEngine
import LIVAProtocol
import Testing

@Suite("Engine: A/V sync")
struct EngineSyncTests {
  static let skewCases: [(skew: Double, hz: Double)] = [
    (-0.02, 60), (-0.01, 60), (0, 60), (0.01, 60), (0.02, 60), (-0.01, 30), (0.01, 30),
  ]

  /// Two chunks of 150 frames (5 s each), each with its own audio: within a chunk the audio
  /// drifts from the frame clock by `skew × 150` frames (1.5 at ±1 %, 3 at ±2 %), so an engine
  /// that ignored the audio clock would draw frames a frame or more away from the sound.
  @Test(
    "with the audio clock, the overlay drawn is floor(position × fps), though the audio drifts past a frame",
    arguments: skewCases)
  func followsAudio(skew: Double, hz: Double) {
    var driver = Driver()
    driver.tick(at: 0)
    for plan in chunks(talkingWalk(count: 300), sizes: [150, 150]) { driver.enqueue(plan) }
    driver.engine.audioEnded()
    driver.runWithAudio(until: 14, skew: skew, hz: hz)
    let metrics = driver.engine.metrics
    // The chosen frames, against the simulated audio: every overlay frame drawn while its own
    // chunk's audio is given is the one the audio is in.
    var checked = 0
    var off: [String] = []
    for entry in driver.log {
      guard let frame = entry.frame, let chunk = frame.chunk, let index = frame.overlayIndex,
        let clock = entry.audio, clock.chunk == chunk
      else { continue }
      let due = Int((clock.position * 30 + 1e-9).rounded(.down))
      if index != due { off.append("t=\(entry.time): frame \(index), audio in frame \(due)") }
      checked += 1
    }
    #expect(off.isEmpty, "\(off.count) of \(checked) frames off the audio: \(off.prefix(3))")
    #expect(checked >= 290)
    #expect(metrics.desyncs == 0)
    #expect(metrics.pops == 0)
    #expect(metrics.overlayFramesDrawn + metrics.lateFrames == 300)
    #expect(driver.engine.mode == .idle)
    // Audio running fast on a 30 Hz display passes over a frame now and then (one correction,
    // one late frame each, 1.5 per chunk at +1 %); slower audio, or any audio on a 60 Hz
    // display (at most one new frame per tick), needs none.
    if skew > 0 && hz == 30 {
      #expect(metrics.audioDriftCorrections >= 2)
      #expect(metrics.lateFrames == metrics.audioDriftCorrections)
    } else {
      #expect(metrics.audioDriftCorrections == 0)
      #expect(metrics.lateFrames == 0)
    }
  }

  @Test("an audio clock far ahead makes the lips catch up, counting late frames")
  func audioAhead() {
    var driver = Driver()
    driver.tick(at: 0)
    let plan = ChunkPlan(index: 0, frames: talkingWalk(count: 60), message: MessageID(0))
    driver.enqueue(plan)
    driver.run(until: 0.5)
    let id = ChunkID(message: MessageID(0), index: 0)
    let start = driver.actions.first { $0.action.startedChunk == id }!
    // The audio jumped: 1 s in while the picture is a few frames in.
    let result = driver.tick(at: driver.now + 1.0 / 60, audio: AudioClock(chunk: id, position: 1.0))
    #expect(result.plan.frame?.overlayIndex == 30)
    #expect(driver.engine.metrics.audioDriftCorrections == 1)
    #expect(driver.engine.metrics.lateFrames > 20)
    #expect(start.time < 0.5)
  }

  @Test("without an audio position the frame clock drives")
  func frameClockFallback() {
    var driver = Driver()
    driver.tick(at: 0)
    driver.enqueue(ChunkPlan(index: 0, frames: talkingWalk(count: 30), message: MessageID(0)))
    // A position for a chunk that is not playing is ignored.
    let other = AudioClock(chunk: ChunkID(message: MessageID(9), index: 0), position: 5)
    driver.run(until: 2, audio: { _ in other })
    #expect(driver.engine.metrics.overlayFramesDrawn == 30)
    #expect(driver.engine.metrics.lateFrames == 0)
    // Drawn on the frame clock, a slot apart, as if no audio were known.
    let speech = driver.draws.filter { $0.frame.chunk != nil }
    #expect(zip(speech, speech.dropFirst()).allSatisfy { abs($1.time - $0.time - 1.0 / 30) < 1e-9 })
  }
}

@Suite("Engine: end of speech, interrupts, requests")
struct EngineFlowTests {
  @Test("speech arriving while finishing goes back to talking through the graph, without a pop")
  func speechDuringFinishing() {
    var driver = Driver()
    driver.tick(at: 0)
    driver.enqueue(ChunkPlan(index: 0, frames: talkingWalk(count: 20), message: MessageID(0)))
    while driver.engine.mode != .finishing { driver.run(until: driver.now + 1.0 / 60) }
    driver.run(until: driver.now + 0.07)
    #expect(driver.engine.mode == .finishing)
    // The continuation starts where talking_1_e_talking_1_s ends.
    let continuation = (0..<12).map { frame("talking_1_s_talking_1_e", $0, tag: "c") }
    driver.enqueue(ChunkPlan(index: 1, frames: continuation, message: MessageID(0)))
    driver.engine.audioEnded()
    driver.runUntilIdle()
    #expect(
      driver.modes == [
        .idle, .transition, .talking, .finishing, .transition, .talking, .finishing, .returning,
        .idle,
      ])
    #expect(driver.engine.metrics.pops == 0)
    #expect(discontinuities(driver.draws).isEmpty)
    #expect(driver.engine.metrics.overlayFramesDrawn == 32)
  }

  @Test("a new message arriving while returning goes through the graph, without a pop")
  func speechDuringReturn() {
    var driver = Driver()
    driver.tick(at: 0)
    driver.enqueue(ChunkPlan(index: 0, frames: talkingWalk(count: 16), message: MessageID(0)))
    driver.engine.audioEnded()
    while driver.engine.mode != .returning { driver.run(until: driver.now + 1.0 / 60) }
    driver.enqueue(
      ChunkPlan(index: 0, frames: talkingWalk(count: 16, tag: "b"), message: MessageID(1)))
    driver.engine.audioEnded()
    driver.runUntilIdle()
    #expect(driver.engine.metrics.pops == 0)
    #expect(driver.engine.metrics.interrupts == 0)
    #expect(driver.drawnKeys.filter { $0.hasPrefix("b/") }.count == 16)
  }

  @Test("finishing that takes too long is cut, with a counted pop")
  func finishTimeout() {
    var configuration = EngineConfiguration()
    configuration.finishTimeout = 0.1
    var driver = Driver(configuration: configuration)
    driver.tick(at: 0)
    // Ends on talking_1_s_talking_1_e#0: finishing it would take 11 frames.
    driver.enqueue(ChunkPlan(index: 0, frames: talkingWalk(count: 5), message: MessageID(0)))
    driver.engine.audioEnded()
    driver.runUntilIdle()
    #expect(driver.engine.metrics.pops == 1)
    #expect(
      driver.actions.contains {
        if case .warning(let w) = $0.action { w.code == .cut } else { false }
      })
    #expect(driver.engine.mode == .idle)
  }

  @Test(
    "a new message interrupts: audio stopped, images evicted, no old overlay after the interrupt")
  func newMessageInterrupts() {
    var driver = Driver()
    driver.tick(at: 0)
    for plan in chunks(talkingWalk(count: 60, tag: "a"), sizes: [20, 20, 20]) {
      driver.enqueue(plan)
    }
    while driver.engine.playingChunk?.index != 1 { driver.run(until: driver.now + 1.0 / 60) }
    driver.run(until: driver.now + 0.1)
    let lastBefore = driver.engine.lastDrawnFrame!
    #expect(!lastBefore.overlays.isEmpty)
    let interruptTime = driver.now
    let newMessage = ChunkPlan(
      index: 0, frames: talkingWalk(count: 20, tag: "b"), message: MessageID(1))
    driver.engine.imagesReady(newMessage.frames.map { $0.layers[0].key })
    var actions = driver.engine.begin(newMessage.message)
    actions += driver.engine.enqueue(newMessage)
    let a = MessageID(0)
    #expect(actions.contains(.stopAudio(ChunkID(message: a, index: 1))))
    #expect(actions.contains(.speakingEnded(a, interrupted: true)))
    #expect(actions.contains(.chunkQueued(ChunkID(message: MessageID(1), index: 0))))
    let evicted: [String] =
      actions.compactMap { action -> [String]? in
        if case .evictImages(_, let keys) = action { return keys }
        return nil
      }.first ?? []
    let remaining = Set(talkingWalk(count: 60, tag: "a")[20...].map { $0.layers[0].key })
    #expect(evicted == remaining.sorted())
    // The very next tick takes the stale mouth off, on the same base frame.
    let next = driver.tick(at: driver.now + 1.0 / 60).plan.frame
    #expect(next?.overlays == [])
    #expect(next?.animation == lastBefore.animation && next?.index == lastBefore.index)
    driver.engine.audioEnded()
    driver.runUntilIdle()
    let after = driver.draws.filter { $0.time > interruptTime }
    #expect(!after.contains { $0.frame.overlays.contains { $0.key.hasPrefix("a/") } })
    #expect(after.filter { $0.frame.overlays.contains { $0.key.hasPrefix("b/") } }.count == 20)
    #expect(driver.engine.metrics.interrupts == 1)
    #expect(driver.engine.metrics.pops == 0)
  }

  @Test("an explicit interrupt returns to idle, and nothing of the message is drawn after it")
  func explicitInterrupt() {
    var driver = Driver()
    driver.tick(at: 0)
    let plans = chunks(talkingWalk(count: 60, tag: "a"), sizes: [20, 20, 20])
    driver.enqueue(plans[0])
    driver.enqueue(plans[1])
    driver.run(until: 0.6)
    let actions = driver.engine.interrupt()
    #expect(actions.contains { if case .stopAudio = $0 { true } else { false } })
    // (Its late chunks never reach the engine: the speech session drops them.)
    #expect(driver.engine.currentMessage == nil)
    let interruptTime = driver.now
    driver.runUntilIdle()
    #expect(!driver.draws.contains { $0.time > interruptTime && !$0.frame.overlays.isEmpty })
    #expect(driver.engine.mode == .idle)
    #expect(driver.engine.metrics.pops == 0)
    #expect(driver.engine.queuedChunks.isEmpty && driver.engine.playingChunk == nil)
  }

  @Test("an interrupt before speech started never starts its audio")
  func interruptDuringTransition() {
    var driver = Driver()
    driver.tick(at: 0)
    driver.enqueue(ChunkPlan(index: 0, frames: talkingWalk(count: 20), message: MessageID(0)))
    driver.run(until: 0.12)
    #expect(driver.engine.mode == .transition)
    let actions = driver.engine.interrupt()
    #expect(!actions.contains { if case .stopAudio = $0 { true } else { false } })
    driver.run(until: 3)
    #expect(!driver.actions.contains { $0.action.startedChunk != nil })
    #expect(driver.engine.mode == .idle)
    #expect(driver.engine.metrics.pops == 0)
  }

  @Test("a requested animation plays from idle with transitions in and out")
  func requestedAnimation() {
    var driver = Driver()
    driver.tick(at: 0)
    #expect(driver.engine.requestAnimation(name("hi_1_s_hi_1_e")).isEmpty)
    driver.runUntilIdle()
    #expect(driver.modes == [.idle, .transition, .animation, .returning, .idle])
    let hi = driver.draws.filter { $0.frame.animation == name("hi_1_s_hi_1_e") }.map(\.frame.index)
    #expect(hi == [0, 1, 2, 3, 4])
    #expect(driver.draws.contains { $0.frame.animation == name("idle_1_e_hi_1_s") })
    #expect(driver.draws.contains { $0.frame.animation == name("hi_1_e_idle_1_s") })
    #expect(driver.engine.metrics.pops == 0)
  }

  @Test("requests wait for speech to end; unknown ones are dropped with a warning")
  func requestsDuringSpeech() {
    var driver = Driver()
    driver.tick(at: 0)
    driver.enqueue(ChunkPlan(index: 0, frames: talkingWalk(count: 20), message: MessageID(0)))
    driver.engine.audioEnded()
    driver.run(until: 0.3)
    #expect(driver.engine.requestAnimation(name("hi_1_s_hi_1_e")).isEmpty)
    let unknown = driver.engine.requestAnimation(name("wave_1_s_wave_1_e"))
    #expect(
      unknown.contains { if case .warning(let w) = $0 { w.code == .requestDropped } else { false } }
    )
    driver.run(until: 6)
    let lastOverlay = driver.draws.last { !$0.frame.overlays.isEmpty }!.time
    let firstHi = driver.draws.first { $0.frame.animation == name("hi_1_s_hi_1_e") }!.time
    #expect(firstHi > lastOverlay)
    #expect(driver.engine.metrics.pops == 0)
  }

  @Test("debug step mode: step forward and back, and describe the frame")
  func debugSteps() {
    var driver = Driver()
    driver.tick(at: 0)
    let frames = (1...3).map { _ in driver.engine.stepForward().plan.frame?.index }
    #expect(frames == [1, 2, 3])
    #expect(driver.engine.isPaused)
    #expect(driver.engine.stepBackward()?.index == 2)
    #expect(driver.engine.describe().description == "mode=idle base=idle_1_s_idle_1_e#2")
    #expect(driver.engine.stepForward().plan.frame?.index == 3)
    #expect(driver.tick(at: 5).plan == .hold(.paused))
    _ = driver.engine.stepBackward()
    _ = driver.engine.stepBackward()
    _ = driver.engine.stepBackward()
    #expect(driver.engine.stepBackward() == nil)
    #expect(driver.engine.lastDrawnFrame?.index == 0)
  }

  @Test("debug step mode through speech describes chunk, frame and overlays")
  func debugStepsInSpeech() {
    var driver = Driver()
    driver.tick(at: 0)
    driver.enqueue(ChunkPlan(index: 0, frames: talkingWalk(count: 20), message: MessageID(0)))
    _ = driver.engine.pause()
    var steps = 0
    while driver.engine.mode != .talking && steps < 50 {
      _ = driver.engine.stepForward()
      steps += 1
    }
    let start = driver.engine.stepForward()
    #expect(start.plan.frame?.overlayIndex == 1)
    #expect(
      driver.engine.describe().description
        == "mode=talking base=idle_1_e_talking_1_s#1 chunk=m0/c0 frame=1 overlays=[\"m/idle_1_e_talking_1_s/1\"]"
    )
  }
}
