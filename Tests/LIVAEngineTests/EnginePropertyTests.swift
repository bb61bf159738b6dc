import LIVAEngine
import LIVAProtocol
import LIVATestSupport
import Testing

/// Random sessions (chunk sizes, readiness delays, tick jitter and stalls, interrupts, animation
/// changes inside chunks, missing animations, audio clocks with skew), checked against
/// invariants on the produced timeline. The seeds change every run (``RunSeed``: the run's seed
/// is printed; `LIVA_TEST_SEED=<n>` replays a run); a failing case names its seed, and
/// `EnginePropertyTests.session(seed:)` replays that session alone. What the invariants compare
/// with comes from the inputs (when a message was cut, what was planned), not from the engine.
@Suite("Engine: properties over generated sessions")
struct EnginePropertyTests {
  static let seeds = RunSeed.seeds(300)

  @Test("invariants hold on generated sessions", arguments: seeds)
  func invariants(seed: UInt64) {
    let session = Self.session(seed: seed)
    let violations = session.violations()
    #expect(violations.isEmpty, "seed \(seed): \(violations.prefix(5))")
  }

  @Test("the generated sessions cover the interesting paths")
  func coverage() {
    var total = EngineMetrics()
    var interrupted = 0
    for seed in Self.seeds.prefix(100) {
      let session = Self.session(seed: seed)
      let m = session.finalMetrics
      total.overlayFramesDrawn += m.overlayFramesDrawn
      total.mouthlessFrames += m.mouthlessFrames
      total.lateFrames += m.lateFrames
      total.pops += m.pops
      total.catchUps += m.catchUps
      total.holds[.overlayNotReady, default: 0] += m.holds(.overlayNotReady)
      total.holds[.waitingForNextChunk, default: 0] += m.holds(.waitingForNextChunk)
      interrupted += session.interruptedAt.count
    }
    #expect(total.overlayFramesDrawn > 5000)
    // Frames on a missing animation, and mouths that never came, are drawn without their mouth.
    #expect(total.mouthlessFrames > 0)
    #expect(total.lateFrames > 0)
    #expect(total.catchUps > 0)
    #expect(total.holds(.overlayNotReady) > 0)
    #expect(total.holds(.waitingForNextChunk) > 0)
    #expect(interrupted > 5)
  }

  /// One generated session, fully recorded.
  struct Session {
    var seed: UInt64
    var counts: [String: Int]
    var log: [(time: Double, result: TickResult, metrics: EngineMetrics, playing: ChunkID?)] = []
    /// Message tag → when the inputs cut it (a newer message's chunk 0 or an interrupt came
    /// while it was the latest): its overlays must not be drawn after.
    var interruptedAt: [String: Double] = [:]
    /// Every chunk the engine queued, with the plan the inputs gave it.
    var plans: [ChunkID: ChunkPlan] = [:]
    /// Chunk → when the last of its images was made ready (nil: one never was).
    var imagesReadyAt: [ChunkID: Double?] = [:]
    var finalMode: EngineMode = .waiting
    var finalMetrics = EngineMetrics()

    func violations() -> [String] {
      var problems: [String] = []
      let draws = log.compactMap { entry in
        entry.result.plan.frame.map { (entry.time, $0, entry.metrics) }
      }
      // 1. desync 0, and every overlay is drawn on its own matched base frame.
      if finalMetrics.desyncs != 0 { problems.append("desyncs \(finalMetrics.desyncs)") }
      for (time, frame, _) in draws {
        for layer in frame.overlays {
          let parts = layer.key.split(separator: "/")
          if parts[1] != frame.animation.rawValue || Int(parts[2]) != frame.index {
            problems.append("t=\(time): overlay \(layer.key) on \(frame.animation)#\(frame.index)")
          }
        }
      }
      // 2. Nothing from an interrupted message after its interrupt.
      for (time, frame, _) in draws {
        for layer in frame.overlays {
          let tag = String(layer.key.split(separator: "/")[0])
          if let cut = interruptedAt[tag], time > cut {
            problems.append(
              "t=\(time): \(layer.key) drawn after its message was interrupted at \(cut)")
          }
        }
      }
      // 3. Each drawn base frame continues the last one, or is a counted pop or skip.
      for i in draws.indices.dropFirst() {
        let (_, a, before) = draws[i - 1]
        let (time, b, after) = draws[i]
        // The same or a neighbouring frame (walks may go backwards), or one key pose: the
        // first or last frame of one animation, then the first or last of another at that pose.
        func pose(_ frame: DrawnFrame) -> KeyPose? {
          if frame.index == 0 { return frame.animation.from }
          return frame.index == (counts[frame.animation.rawValue] ?? -1) - 1
            ? frame.animation.to : nil
        }
        let continuous =
          (a.animation == b.animation && abs(b.index - a.index) <= 1)
          || (pose(a) != nil && pose(a) == pose(b))
        let passed =
          after.skippedOverlays + after.lateFrames + after.skippedBaseFrames
          - (before.skippedOverlays + before.lateFrames + before.skippedBaseFrames)
        let popped = after.pops > before.pops
        if let chunk = b.chunk, chunk == a.chunk, let from = a.overlayIndex,
          let to = b.overlayIndex
        {
          // Within one chunk the frames passed over are exactly the ones counted on that tick.
          if to - from - 1 != passed {
            problems.append(
              "t=\(time): \(chunk) went from frame \(from) to \(to) with \(passed) counted passed")
          }
        } else if !continuous && !popped {
          // Outside one chunk, a jump needs a counted pass-over, and within one animation no
          // more frames than were counted.
          let sameAnimationGap = a.animation == b.animation ? abs(b.index - a.index) - 1 : 0
          if passed == 0 || sameAnimationGap > passed {
            problems.append(
              "t=\(time): uncounted jump \(a.animation)#\(a.index) → \(b.animation)#\(b.index) "
                + "(\(passed) counted passed)")
          }
        }
        if continuous && popped {
          problems.append("t=\(time): a pop counted on a continuous frame")
        }
      }
      // 4. Every overlay frame of a finished chunk drawn exactly once (with its mouth, or
      //    without it when the mouth was lost), unless counted.
      var drawnPerChunk: [ChunkID: [Int]] = [:]
      for (_, frame, _) in draws {
        if let chunk = frame.chunk, let index = frame.overlayIndex {
          drawnPerChunk[chunk, default: []].append(index)
        }
      }
      for (chunk, indices) in drawnPerChunk where Set(indices).count != indices.count {
        problems.append("\(chunk): an overlay frame drawn twice \(indices)")
      }
      for entry in log {
        for case .chunkFinished(let report) in entry.result.actions {
          let drawn = drawnPerChunk[report.id]?.count ?? 0
          if report.drawn != drawn {
            problems.append("\(report.id): report says \(report.drawn) drawn, timeline \(drawn)")
          }
          if report.drawn + report.skipped + report.late != report.frames {
            problems.append("\(report.id): \(report) does not add up")
          }
        }
      }
      // 5. Every speech frame drawn is the one its chunk's plan gives for that slot: the
      //    planned base frame, with the planned mouth or without one (a counted mouthless slot);
      //    a slot on a missing animation goes on with the animation on screen, mouthless.
      for (time, frame, _) in draws {
        guard let chunk = frame.chunk, let index = frame.overlayIndex else { continue }
        guard let plan = plans[chunk], plan.frames.indices.contains(index) else {
          problems.append("t=\(time): \(chunk) frame \(index) drawn with no such planned frame")
          continue
        }
        let planned = plan.frames[index]
        if counts[planned.animation.rawValue] == nil {
          // Its animation is missing: the one on screen goes on, without the mouth.
          if !frame.overlays.isEmpty {
            problems.append("t=\(time): \(chunk)#\(index) on a missing animation has a mouth")
          }
          continue
        }
        if frame.animation != planned.animation || frame.index != planned.baseFrame {
          problems.append(
            "t=\(time): \(chunk)#\(index) drawn on \(frame.animation)#\(frame.index), "
              + "planned \(planned.animation)#\(planned.baseFrame)")
        }
        if !frame.overlays.isEmpty && frame.overlays.map(\.key) != planned.layers.map(\.key) {
          problems.append("t=\(time): \(chunk)#\(index) drew \(frame.overlays.map(\.key))")
        }
      }
      // 6. Every chunk of a message the inputs never cut finishes once, with its whole plan
      //    accounted for; with all its images ready before its first slot, none skipped.
      var reports: [ChunkID: [ChunkReport]] = [:]
      for entry in log {
        for case .chunkFinished(let report) in entry.result.actions {
          reports[report.id, default: []].append(report)
        }
      }
      for (chunk, plan) in plans {
        let tag = String(plan.frames[0].layers[0].key.split(separator: "/")[0])
        guard interruptedAt[tag] == nil else { continue }
        guard let found = reports[chunk], found.count == 1, let report = found.first else {
          problems.append(
            "\(chunk) of an uncut message finished \(reports[chunk]?.count ?? 0) times")
          continue
        }
        if report.frames != plan.frames.count {
          problems.append(
            "\(chunk): report of \(report.frames) frames, planned \(plan.frames.count)")
        }
        let firstSlot = draws.first { $0.1.chunk == chunk }?.0
        if let ready = imagesReadyAt[chunk] ?? nil, let first = firstSlot, ready < first,
          plan.frames.allSatisfy({ counts[$0.animation.rawValue] != nil }), report.skipped != 0
        {
          problems.append("\(chunk): \(report.skipped) skipped with every image ready in time")
        }
      }
      // 7. Each chunk's audio starts on the tick of its first overlay frame drawn.
      for entry in log {
        for case .startAudio(let id, let offset) in entry.result.actions {
          guard let frame = entry.result.plan.frame, frame.chunk == id,
            let index = frame.overlayIndex
          else {
            problems.append("t=\(entry.time): start of \(id) without its first frame")
            continue
          }
          if abs(offset - Double(index) / 30) > 1e-9 {
            problems.append("\(id): offset \(offset) for frame \(index)")
          }
          if draws.contains(where: { $0.0 < entry.time && $0.1.chunk == id }) {
            problems.append("\(id): overlays drawn before its audio start")
          }
        }
      }
      // 8. The session ends in idle.
      if finalMode != .idle { problems.append("ended in \(finalMode)") }
      return problems
    }
  }

  /// Generates and runs the session for `seed`.
  static func session(seed: UInt64) -> Session {
    var random = SplitMix64(seed: seed)
    var counts = standardCounts
    let missingTalking2 = random.chance(0.2)
    if missingTalking2 {
      for key in counts.keys where key.contains("talking_2") { counts[key] = nil }
    }
    var configuration = EngineConfiguration()
    configuration.maxCatchUpFrames = random.next(in: 2...6)
    var engine = LIVAEngine(configuration: configuration, animations: animations(counts))
    var session = Session(seed: seed, counts: counts)
    let useAudioClock = random.chance(0.5)
    let skew = Double(random.next(in: -20...20)) / 1000

    // Plan the inputs: messages with chunks, each arriving at some time.
    enum Input {
      case chunk(tag: String, plan: ChunkPlan)
      case ready(String)
      case complete(MessageID, Int)
      case audioEnd
      case interrupt
      case request(AnimationName)
    }
    var inputs: [(time: Double, order: Int, input: Input)] = []
    var order = 0
    func add(_ time: Double, _ input: Input) {
      inputs.append((time, order, input))
      order += 1
    }
    var t = 0.2
    var lastArrival = 0.0
    let messages = random.next(in: 1...3)
    for m in 0..<messages {
      let tag = "s\(m)"
      let frames = walk(
        count: random.next(in: 5...120), tag: tag, talking2: !missingTalking2 || random.chance(0.3),
        using: &random)
      var start = 0
      var index = 0
      while start < frames.count {
        let size = min(frames.count - start, random.next(in: 1...45))
        let plan = ChunkPlan(
          index: index, frames: Array(frames[start..<start + size]), message: MessageID(m))
        // One ordered socket: plans arrive in order, across messages too.
        let arrival = max(lastArrival, t + Double(random.next(in: 0...600)) / 1000)
        lastArrival = arrival
        add(arrival, .chunk(tag: tag, plan: plan))
        var lastReady: Double? = arrival
        for frame in plan.frames {
          guard !random.chance(0.02) else {
            lastReady = nil
            continue
          }
          let ready = arrival + Double(random.next(in: -200...900)) / 1000
          lastReady = lastReady.map { max($0, ready) }
          add(ready, .ready(frame.layers[0].key))
        }
        session.imagesReadyAt[ChunkID(message: MessageID(m), index: index)] = lastReady
        if random.chance(0.7) { add(arrival + 1, .complete(MessageID(m), index)) }
        t = arrival + Double(size) / 30 * Double(random.next(in: 50...110)) / 100
        start += size
        index += 1
      }
      if random.chance(0.8) { add(t, .audioEnd) }
      if random.chance(0.25) { add(t - Double(random.next(in: 0...2000)) / 1000, .interrupt) }
      if random.chance(0.2) { add(t, .request(name("hi_1_s_hi_1_e"))) }
      t += Double(random.next(in: 0...3000)) / 1000
    }
    inputs.sort { ($0.time, $0.order) < ($1.time, $1.order) }

    // Run: ticks with jitter and stalls, inputs applied before the tick at or after their time.
    var now = 0.0
    var next = 0
    var currentTag: String?
    var audio: (id: ChunkID, start: Double, offset: Double)?
    let end = t + 15
    while now < end {
      while next < inputs.count, inputs[next].time <= now {
        switch inputs[next].input {
        case .chunk(let tag, let plan):
          // What the speech session does: a chunk 0 begins its message, and the chunks of a
          // message the app interrupted are dropped before the engine.
          if session.interruptedAt[tag] != nil, currentTag == tag { break }
          var actions = plan.index == 0 ? engine.begin(plan.message) : []
          actions += engine.enqueue(plan)
          for action in actions {
            if case .chunkQueued(let id) = action { session.plans[id] = plan }
            if case .stopAudio = action { audio = nil }
          }
          // A newer message's chunk 0 cuts the one before, whatever the engine answered.
          if plan.index == 0, let old = currentTag, old != tag, session.interruptedAt[old] == nil {
            session.interruptedAt[old] = now
          }
          currentTag = tag
        case .ready(let key): engine.imageReady(key)
        case .complete(let message, let index):
          // The session credits `chunk_images_ready` to its own message only.
          if engine.currentMessage == message { engine.chunkImagesComplete(chunkIndex: index) }
        case .audioEnd: engine.audioEnded()
        case .interrupt:
          let actions = engine.interrupt()
          if let tag = currentTag, session.interruptedAt[tag] == nil {
            session.interruptedAt[tag] = now
          }
          if actions.contains(where: { if case .stopAudio = $0 { true } else { false } }) {
            audio = nil
          }
        case .request(let name): _ = engine.requestAnimation(name)
        }
        next += 1
      }
      let clock =
        useAudioClock
        ? audio.map {
          AudioClock(chunk: $0.id, position: $0.offset + (now - $0.start) * (1 + skew))
        } : nil
      let result = engine.tick(now: now, audio: clock)
      for case .startAudio(let id, let offset) in result.actions { audio = (id, now, offset) }
      session.log.append((now, result, engine.metrics, engine.playingChunk))
      let jitter =
        random.chance(0.01) ? Double(random.next(in: 100...400)) : Double(random.next(in: 4...40))
      now += jitter / 1000
    }
    session.finalMode = engine.mode
    session.finalMetrics = engine.metrics
    return session
  }

  /// A production-like walk: the transition from idle, then talking loops, sometimes switching
  /// between talking_1 and talking_2 through the graph, sometimes ending on the return transition.
  static func walk(count: Int, tag: String, talking2: Bool, using random: inout SplitMix64)
    -> [PlannedFrame]
  {
    var sequence: [(String, Int)] = (0..<4).map { ("idle_1_e_talking_1_s", $0) }
    var pose = 1
    var atStart = true
    while sequence.count < count {
      let anim: String
      if atStart {
        anim = "talking_\(pose)_s_talking_\(pose)_e"
      } else if talking2 && random.chance(0.3) {
        let other = pose == 1 ? 2 : 1
        anim = "talking_\(pose)_e_talking_\(other)_s"
        pose = other
      } else {
        anim = "talking_\(pose)_e_talking_\(pose)_s"
      }
      sequence += (0..<standardCounts[anim]!).map { (anim, $0) }
      atStart.toggle()
    }
    return sequence.prefix(count).map { frame($0.0, $0.1, tag: tag) }
  }
}
