import LIVAEngine
import LIVAProtocol
import Testing

let slot = 1.0 / 30

/// Discontinuities between consecutive draws, judged independently of the engine.
func discontinuities(
  _ draws: [(time: Double, frame: DrawnFrame)], counts: [String: Int] = standardCounts
) -> [Int] {
  var result: [Int] = []
  for i in draws.indices.dropFirst() {
    let a = draws[i - 1].frame
    let b = draws[i].frame
    // The same frame, or a neighbour either way (a walk back, or the body moving while a late
    // chunk is waited for).
    let sameOrNext = a.animation == b.animation && abs(b.index - a.index) <= 1
    let edge =
      b.index == 0 && a.index == counts[a.animation.rawValue]! - 1
      && b.animation.from == a.animation.to
    if !sameOrNext && !edge { result.append(i) }
  }
  return result
}

@Suite("Engine: speech")
struct EngineSpeechTests {
  /// A 3-chunk message, every image ready, audio_end received.
  func playMessage(sizes: [Int] = [20, 20, 20]) -> Driver {
    var driver = Driver()
    driver.tick(at: 0)
    for plan in chunks(talkingWalk(count: sizes.reduce(0, +)), sizes: sizes) {
      driver.enqueue(plan)
    }
    driver.engine.audioEnded()
    driver.runUntilIdle()
    driver.run(until: driver.now + 0.5)
    return driver
  }

  @Test("modes go idle → transition → talking → finishing → returning → idle without a pop")
  func modes() {
    let driver = playMessage()
    #expect(driver.modes == [.idle, .transition, .talking, .finishing, .returning, .idle])
    #expect(driver.engine.metrics.pops == 0)
    #expect(discontinuities(driver.draws).isEmpty)
    for draw in driver.draws {
      #expect(draw.frame.index < standardCounts[draw.frame.animation.rawValue]!)
    }
    // The transition walked from idle_1_s to idle_1_e at the speaking rate, then overlays began
    // on idle_1_e_talking_1_s frame 0.
    let firstOverlay = driver.draws.first { !$0.frame.overlays.isEmpty }!
    #expect(firstOverlay.frame.animation == name("idle_1_e_talking_1_s"))
    #expect(firstOverlay.frame.index == 0)
    // The return transition was played before idle.
    #expect(
      driver.draws.contains {
        $0.frame.animation == name("talking_1_e_idle_1_s") && $0.frame.mode == .returning
      })
  }

  @Test(
    "every overlay frame is drawn once, on its matched base frame, one slot apart, across chunks")
  func everyFrameOnceAtItsTime() {
    let driver = playMessage()
    let overlayDraws = driver.draws.filter { !$0.frame.overlays.isEmpty }
    let expectedKeys = talkingWalk(count: 60).map { $0.layers[0].key }
    #expect(overlayDraws.map { $0.frame.overlays[0].key } == expectedKeys)
    for draw in overlayDraws {
      // The key encodes the frame's own animation and index: the base must match it.
      #expect(draw.frame.overlays[0].key == "m/\(draw.frame.animation)/\(draw.frame.index)")
    }
    for (a, b) in zip(overlayDraws, overlayDraws.dropFirst()) {
      #expect(abs(b.time - a.time - slot) < 1e-6, "gap \(b.time - a.time) at \(b.frame.chunk!)")
    }
    #expect(driver.engine.metrics.desyncs == 0)
    #expect(driver.engine.metrics.overlayFramesDrawn == 60)
    #expect(driver.engine.metrics.skippedOverlays == 0)
    #expect(driver.engine.metrics.lateFrames == 0)
    let reports = driver.actions.compactMap {
      if case .chunkFinished(let r) = $0.action { r } else { nil }
    }
    #expect(reports.map(\.drawn) == [20, 20, 20])
  }

  @Test("each chunk's audio starts on the tick that draws its first overlay frame")
  func audioStartsWithFirstFrame() {
    let driver = playMessage()
    let starts = driver.actions.filter { $0.action.startedChunk != nil }
    #expect(starts.count == 3)
    for start in starts {
      let id = start.action.startedChunk!
      let firstDraw = driver.draws.first { $0.frame.chunk == id }!
      #expect(firstDraw.time == start.time)
      #expect(firstDraw.frame.overlayIndex == 0)
      #expect(start.action == .startAudio(id, offset: 0))
    }
    let speaking = driver.actions.filter {
      if case .speakingStarted = $0.action { return true }
      if case .speakingEnded = $0.action { return true }
      return false
    }
    #expect(
      speaking.map(\.action) == [
        .speakingStarted(MessageID(0)), .speakingEnded(MessageID(0), interrupted: false),
      ])
  }

  @Test("an animation change inside a chunk is honoured frame by frame")
  func animationChangeInsideChunk() {
    var driver = Driver()
    driver.tick(at: 0)
    let frames = talkingWalk(count: 10)  // 4 transition frames, then the talking loop
    driver.enqueue(ChunkPlan(index: 0, frames: frames, message: MessageID(0)))
    driver.engine.audioEnded()
    driver.runUntilIdle()
    let drawn = driver.draws.filter { !$0.frame.overlays.isEmpty }.map {
      "\($0.frame.animation)#\($0.frame.index)"
    }
    #expect(drawn == frames.map { "\($0.animation)#\($0.baseFrame)" })
  }

  @Test(
    "out-of-range frame numbers wrap with a counted warning; a negative one costs only its mouth")
  func frameNumberValidation() {
    var driver = Driver()
    driver.tick(at: 0)
    var frames = talkingWalk(count: 12)
    frames[6] = frame("talking_1_s_talking_1_e", 2 + 12, tag: "w")  // count is 12: wraps to 2
    frames[7] = frame("talking_1_s_talking_1_e", -3, tag: "n")
    driver.enqueue(ChunkPlan(index: 0, frames: frames, message: MessageID(0)))
    #expect(
      driver.inputActions.contains {
        if case .warning(let w) = $0 { w.code == .negativeFrameIndex } else { false }
      })
    driver.engine.audioEnded()
    driver.runUntilIdle()
    let wrapped = driver.draws.first {
      $0.frame.overlays.first?.key == "w/talking_1_s_talking_1_e/14"
    }
    #expect(wrapped?.frame.index == 2)
    #expect(!driver.drawnKeys.contains { $0.hasPrefix("n/") })
    // Its slot is drawn at its time, without a mouth, on the next frame of the animation.
    let negative = driver.draws.first { $0.frame.overlayIndex == 7 }
    #expect(negative?.frame.overlays == [])
    #expect(negative?.frame.animation == name("talking_1_s_talking_1_e"))
    #expect(negative?.frame.index == 3)
    #expect(driver.draws.compactMap(\.frame.overlayIndex) == Array(0..<12))
    #expect(
      driver.actions.contains {
        if case .warning(let w) = $0.action { w.code == .frameIndexWrapped } else { false }
      })
    #expect(driver.engine.metrics.protocolWarnings == 2)
    #expect(driver.engine.metrics.skippedOverlays == 0)
    #expect(driver.engine.metrics.mouthlessFrames == 1)
    #expect(driver.engine.metrics.desyncs == 0)
    #expect(driver.engine.metrics.pops == 0)
  }

  @Test("a chunk starts once its first 10 frames are ready")
  func startThreshold() {
    var driver = Driver()
    driver.tick(at: 0)
    let plan = ChunkPlan(index: 0, frames: talkingWalk(count: 30), message: MessageID(0))
    driver.enqueue(plan, ready: false)
    let keys = plan.frames.map { $0.layers[0].key }
    driver.engine.imagesReady(keys.prefix(9))
    driver.run(until: 0.3)
    #expect(driver.engine.mode == .idle)
    driver.engine.imagesReady(keys.dropFirst(9))
    driver.run(until: 0.4)
    #expect(driver.engine.mode == .transition)
    #expect(driver.modes.last == .transition)
  }

  @Test("a chunk starts after the timeout with what is ready")
  func startTimeout() {
    var driver = Driver()
    driver.tick(at: 0)
    let plan = ChunkPlan(index: 0, frames: talkingWalk(count: 30), message: MessageID(0))
    driver.enqueue(plan, ready: false)
    driver.engine.imagesReady(plan.frames.prefix(3).map { $0.layers[0].key })
    driver.run(until: 0.55)
    #expect(driver.engine.mode == .idle)  // first considered at 0.1 s: starts at 0.6 s
    driver.run(until: 0.6)
    // Idle was at the end of idle_1_s_idle_1_e: speech starts straight on idle_1_e_talking_1_s.
    #expect(driver.engine.mode == .talking)
    #expect(driver.engine.metrics.pops == 0)
  }

  @Test("a short chunk whose images are all in starts at once")
  func shortCompleteChunk() {
    var driver = Driver()
    driver.tick(at: 0)
    let plan = ChunkPlan(index: 0, frames: talkingWalk(count: 3), message: MessageID(0))
    driver.enqueue(plan)
    driver.engine.chunkImagesComplete(chunkIndex: 0)
    driver.run(until: 0.1)
    #expect(driver.engine.mode == .transition)
  }

  // Found in CI under load: chunk_images_ready came while the first mouths were still decoding;
  // the chunk started, held its first frame twice and jumped (a pop, two mouths lost).
  @Test("a chunk whose images are all sent waits for its first frames still decoding")
  func completeChunkWaitsForDecoding() {
    var driver = Driver()
    driver.tick(at: 0)
    let plan = ChunkPlan(index: 0, frames: talkingWalk(count: 30), message: MessageID(0))
    let keys = plan.frames.map { $0.layers[0].key }
    driver.enqueue(plan, ready: false)
    driver.engine.imagesInFlight(keys)
    driver.engine.imagesReady(keys.prefix(2))
    driver.engine.chunkImagesComplete(chunkIndex: 0)
    driver.run(until: 0.3)
    #expect(driver.engine.mode == .idle)
    driver.engine.imagesReady(keys.prefix(10))
    // Idle goes on to where speech can leave it.
    while driver.engine.mode == .idle && driver.now < 1 { driver.run(until: driver.now + 1.0 / 60) }
    #expect(driver.engine.mode != .idle)
    driver.engine.imagesReady(keys)
    driver.engine.audioEnded()
    driver.runUntilIdle()
    #expect(driver.engine.metrics.holds(.overlayNotReady) == 0)
    #expect(driver.engine.metrics.pops == 0)
  }

  // The same CI run's other face: chunk 0 came with first_frame_image, started on it, and its
  // batch's mouths were decoded 0.1 s behind the audio on the loaded machine.
  @Test(
    "a chunk with its first frame sent ahead waits briefly for its next mouths, not behind its audio",
    arguments: [0.05, 0.1, 0.14])
  func firstFrameWaitsBriefly(lag: Double) {
    var driver = Driver()
    driver.tick(at: 0)
    driver.run(until: 0.5)  // idle where speech can leave it at once
    let frames = talkingWalk(count: 30)
    let plan = ChunkPlan(
      index: 0, frames: frames, message: MessageID(0), startsOnFirstFrame: true)
    let keys = frames.map { $0.layers[0].key }
    driver.enqueue(plan, ready: false)
    driver.engine.imagesReady(keys.prefix(1))
    let arrival = driver.now
    var rest = false
    while driver.engine.mode == .idle || driver.now < arrival + lag + 0.1 {
      if !rest, driver.now >= arrival + lag {
        driver.engine.imagesReady(keys)
        driver.engine.chunkImagesComplete(chunkIndex: 0)
        driver.engine.audioEnded()
        rest = true
      }
      driver.runWithAudio(until: driver.now + 1.0 / 60, skew: 0)
    }
    #expect(driver.now < arrival + 0.5)  // started well before the plain start timeout
    driver.runUntilIdle()
    #expect(driver.engine.metrics.holds(.overlayNotReady) == 0)
    #expect(driver.engine.metrics.lateFrames == 0)
    #expect(driver.engine.metrics.pops == 0)
  }

  @Test("a chunk whose images are all sent starts without those that never came")
  func completeChunkStartsWithoutMissing() {
    var driver = Driver()
    driver.tick(at: 0)
    let plan = ChunkPlan(index: 0, frames: talkingWalk(count: 30), message: MessageID(0))
    let keys = plan.frames.map { $0.layers[0].key }
    driver.enqueue(plan, ready: false)
    driver.engine.imagesInFlight(keys.dropFirst(5))
    driver.engine.imagesReady(keys.dropFirst(5))
    driver.engine.chunkImagesComplete(chunkIndex: 0)
    driver.run(until: 0.1)
    #expect(driver.engine.mode != .idle)
  }

  @Test("at a boundary, a late chunk holds the last frame, then follows on the next slot")
  func boundaryHold() {
    var driver = Driver()
    driver.tick(at: 0)
    let plans = chunks(talkingWalk(count: 40), sizes: [20, 20])
    driver.enqueue(plans[0])
    driver.enqueue(plans[1], ready: false)
    var lastOfFirst: Double?
    while lastOfFirst == nil {
      driver.run(until: driver.now + 1.0 / 60)
      if driver.draws.last?.frame.overlayIndex == 19 { lastOfFirst = driver.draws.last!.time }
    }
    // Within the grace (0.2 s), the last frame is held, mouth and all.
    driver.run(until: lastOfFirst! + 0.15)
    let lastSlot = driver.log.last { $0.result.plan != .hold(.notDue) }
    #expect(lastSlot?.result.plan == .hold(.waitingForNextChunk))
    let heldSlots = driver.engine.metrics.holds(.waitingForNextChunk)
    #expect(heldSlots == 4)
    #expect(driver.draws.last?.time == lastOfFirst)
    driver.engine.imagesReady(plans[1].frames.map { $0.layers[0].key })
    driver.run(until: driver.now + slot)
    let first = driver.draws.last!
    #expect(abs(first.time - (lastOfFirst! + 5 * slot)) < 1e-6)
    #expect(first.frame.chunk?.index == 1)
    #expect(first.frame.overlayIndex == 0)
    #expect(driver.engine.metrics.pops == 0)
  }

  @Test(
    "at a boundary, a next chunk with only its first frame ready starts after the start timeout, without a pop"
  )
  func boundaryHoldCap() {
    var driver = Driver()
    driver.tick(at: 0)
    let plans = chunks(talkingWalk(count: 40), sizes: [20, 20])
    driver.enqueue(plans[0])
    driver.enqueue(plans[1], ready: false)
    driver.engine.imagesReady([plans[1].frames[0].layers[0].key])
    driver.run(until: 3)
    let finished = driver.actions.first {
      if case .chunkFinished = $0.action { true } else { false }
    }!
    let lastDraw = driver.draws.last { $0.frame.chunk?.index == 0 }!
    // The hold starts at the slot after the last frame; frame 0 of the next chunk was ready, so
    // it starts after the 0.5 s start timeout, once the body (moving, mouth closed, since the
    // 0.2 s grace) has walked back next to it: at most `boundaryBreathFrames` slots.
    let waited = finished.time - (lastDraw.time + slot)
    #expect(waited >= 0.5 - 1e-6 && waited <= 0.5 + 4 * slot + 1e-6, "\(waited)")
    let secondStart = driver.actions.first { $0.action.startedChunk?.index == 1 }
    #expect(secondStart?.time == finished.time)
    #expect(driver.engine.metrics.pops == 0)
    #expect(discontinuities(driver.draws).isEmpty)
  }

  @Test(
    "without a next chunk or audio_end, the mouth closes after 0.2 s, the body moves, and speech finishes after 3 s"
  )
  func drainWithoutAudioEnd() {
    var driver = Driver()
    driver.tick(at: 0)
    driver.enqueue(ChunkPlan(index: 0, frames: talkingWalk(count: 20), message: MessageID(0)))
    driver.run(until: 6)
    let lastOverlay = driver.draws.last { !$0.frame.overlays.isEmpty }!
    let finishing = driver.actions.first { $0.action == .modeChanged(.finishing) }!
    #expect(abs(finishing.time - (lastOverlay.time + slot) - 3.0) < 1e-6)
    let waiting = driver.draws.filter { $0.time > lastOverlay.time && $0.time < finishing.time }
    #expect(waiting.count >= 80)
    // Its audio ended one slot after it was drawn; within 0.2 s of that, the mouth is gone.
    #expect(waiting.first.map { $0.time - (lastOverlay.time + slot) <= 0.2 + 1e-9 } == true)
    #expect(driver.engine.metrics.boundaryWaits == 1)
    #expect(driver.engine.metrics.pops == 0)
    #expect(discontinuities(driver.draws).isEmpty)
  }

  @Test("an unready overlay holds the picture, then plays when ready")
  func overlayHold() {
    var driver = Driver()
    driver.tick(at: 0)
    let plan = ChunkPlan(index: 0, frames: talkingWalk(count: 20), message: MessageID(0))
    let late = plan.frames[12].layers[0].key
    driver.enqueue(plan)
    driver.engine.imageEvicted(late)
    while driver.engine.metrics.holds(.overlayNotReady) < 5 {
      driver.run(until: driver.now + 1.0 / 60)
    }
    #expect(driver.draws.last?.frame.overlayIndex == 11)
    driver.engine.imageReady(late)
    driver.run(until: driver.now + 0.2)
    let indices = driver.draws.compactMap(\.frame.overlayIndex)
    #expect(indices == Array(0..<indices.count))
    #expect(driver.engine.metrics.skippedOverlays == 0)
    #expect(driver.engine.metrics.holds(.overlayNotReady) == 5)
  }

  @Test("an overlay that never comes holds 15 slots, then its frame is drawn without it")
  func overlaySkipAfterCap() {
    var driver = Driver()
    driver.tick(at: 0)
    let plan = ChunkPlan(index: 0, frames: talkingWalk(count: 20), message: MessageID(0))
    driver.enqueue(plan)
    driver.engine.imageEvicted(plan.frames[12].layers[0].key)
    driver.engine.audioEnded()
    driver.runUntilIdle()
    let overlayDraws = driver.draws.filter { $0.frame.overlayIndex != nil }
    #expect(overlayDraws.map { $0.frame.overlayIndex! } == Array(0..<20))
    let gap = overlayDraws[12].time - overlayDraws[11].time
    #expect(abs(gap - 16 * slot) < 1e-6)  // 15 holds, then frame 12 without its mouth
    #expect(overlayDraws[12].frame.overlays.isEmpty)
    #expect(overlayDraws[12].frame.index == plan.frames[12].baseFrame)
    #expect(driver.engine.metrics.skippedOverlays == 0)
    #expect(driver.engine.metrics.mouthlessFrames == 1)
    #expect(driver.engine.metrics.holds(.overlayNotReady) == 16)
    let report = driver.actions.compactMap {
      if case .chunkFinished(let r) = $0.action { r } else { nil }
    }.first
    #expect(
      report
        == {
          var r = ChunkReport(id: ChunkID(message: MessageID(0), index: 0), frames: 20)
          r.drawn = 20
          return r
        }())
  }

  @Test("once a chunk's images are all in, a missing one is drawn without its mouth at once")
  func skipWhenComplete() {
    var driver = Driver()
    driver.tick(at: 0)
    let plan = ChunkPlan(index: 0, frames: talkingWalk(count: 20), message: MessageID(0))
    driver.enqueue(plan)
    driver.engine.imageEvicted(plan.frames[12].layers[0].key)
    driver.engine.chunkImagesComplete(chunkIndex: 0)
    driver.engine.audioEnded()
    driver.runUntilIdle()
    #expect(driver.engine.metrics.holds(.overlayNotReady) == 0)
    #expect(driver.engine.metrics.skippedOverlays == 0)
    #expect(driver.engine.metrics.mouthlessFrames == 1)
    // On screen: the 20 frames in 20 consecutive slots, in order, only frame 12 without its
    // mouth (nothing held for it, nothing skipped).
    let speech = driver.draws.filter { $0.frame.chunk != nil }
    #expect(speech.map(\.frame.overlayIndex) == Array(0..<20).map { $0 })
    #expect(speech.map(\.frame.overlays.isEmpty) == (0..<20).map { $0 == 12 })
    #expect(zip(speech, speech.dropFirst()).allSatisfy { abs($1.time - $0.time - 1.0 / 30) < 1e-9 })
  }

  @Test(
    "a frame on a missing animation keeps its slot without a mouth (the animation on screen goes on), with a warning"
  )
  func missingAnimation() {
    var counts = standardCounts
    counts["talking_2_s_talking_2_e"] = nil
    var driver = Driver(counts: counts)
    driver.tick(at: 0)
    var frames = talkingWalk(count: 12)
    frames[8] = frame("talking_2_s_talking_2_e", 3)
    driver.enqueue(ChunkPlan(index: 0, frames: frames, message: MessageID(0)))
    driver.engine.audioEnded()
    driver.runUntilIdle()
    #expect(driver.engine.metrics.skippedOverlays == 0)
    #expect(driver.engine.metrics.mouthlessFrames == 1)
    #expect(driver.engine.metrics.pops == 0)
    // On screen: 12 slots in a row; the one on the missing animation shows no mouth and no
    // frame of that animation (the walk on screen goes on), every other its own mouth.
    let speech = driver.draws.filter { $0.frame.chunk != nil }
    #expect(speech.map(\.frame.overlayIndex) == Array(0..<12).map { $0 })
    #expect(speech.map(\.frame.overlays.isEmpty) == (0..<12).map { $0 == 8 })
    #expect(!speech.contains { $0.frame.animation.rawValue == "talking_2_s_talking_2_e" })
    #expect(zip(speech, speech.dropFirst()).allSatisfy { abs($1.time - $0.time - 1.0 / 30) < 1e-9 })
    #expect(
      driver.actions.contains {
        if case .warning(let w) = $0.action { w.code == .missingAnimation } else { false }
      })
    #expect(driver.engine.mode == .idle)
  }

  @Test("a chunk all on a missing animation still starts its audio and keeps its time")
  func chunkOnMissingAnimation() {
    var counts = standardCounts
    counts["talking_2_s_talking_2_e"] = nil
    var driver = Driver(counts: counts)
    driver.tick(at: 0)
    let frames = (0..<10).map { frame("talking_2_s_talking_2_e", $0) }
    driver.enqueue(ChunkPlan(index: 0, frames: frames, message: MessageID(0)))
    driver.engine.audioEnded()
    driver.runUntilIdle()
    let starts = driver.actions.filter {
      if case .startAudio = $0.action { true } else { false }
    }
    #expect(starts.count == 1)
    #expect(driver.engine.metrics.mouthlessFrames == 10)
    #expect(driver.engine.mode == .idle)
  }
}
