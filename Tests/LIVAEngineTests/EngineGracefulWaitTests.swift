import LIVAEngine
import LIVAProtocol
import Testing

/// Waiting with grace: when the next chunk of a message is late, the engine
/// holds the last frame, but not with the mouth open for long: after the grace (200 ms) the
/// mouth closes and the body keeps moving, and the late chunk then starts without a pop, its
/// frames and audio whole and in order. Everything is judged from what the engine drew and
/// when it started audio, on explicit timestamps, not from its own counters alone.
@Suite("Engine: waiting for a late chunk")
struct EngineGracefulWaitTests {
  struct Case: CustomTestStringConvertible, Sendable {
    /// Frames per chunk (three chunks: chunk 2 is the late one).
    var sizes: [Int]
    /// Seconds from chunk 1's boundary (the slot after its last frame) to chunk 2's plan.
    var stall: Double
    /// The audio output stops reporting a position once a chunk's audio has ended (a
    /// headless output); false: the position runs on past the end (a clock that keeps going).
    var audioEnds: Bool
    /// Whether the wait outlasts the grace: the mouth closes and the body moves.
    var graceful: Bool { stall > 0.2 }

    var testDescription: String {
      "chunks \(sizes), stall \(stall) s\(audioEnds ? "" : ", audio clock running on")"
    }
  }

  static let cases: [Case] = [
    // Chunk 1 ends on the last frame of talking_1_s_talking_1_e (chunk 2 starts on frame 0 of
    // its loop partner); or in the middle of it.
    Case(sizes: [20, 20, 20], stall: 1.5, audioEnds: true),
    Case(sizes: [20, 18, 22], stall: 1.5, audioEnds: true),
    Case(sizes: [20, 21, 19], stall: 1.5, audioEnds: false),
    Case(sizes: [20, 18, 22], stall: 0.35, audioEnds: true),
    Case(sizes: [10, 5, 20], stall: 2.5, audioEnds: true),
    // Within the grace: a plain hold of the last frame, mouth and all.
    Case(sizes: [20, 18, 22], stall: 0.1, audioEnds: true),
  ]

  /// A session: chunks 0 and 1 at once, chunk 2 (and audio_end) `stall` s after chunk 1's
  /// boundary; a simulated audio output plays each chunk for `frames / 30` s from its start.
  struct Session {
    var driver = Driver()
    var starts: [(time: Double, id: ChunkID, offset: Double)] = []
    var audioEnds: [ChunkID: Double] = [:]
    /// The time chunk 1's last frame was drawn.
    var lastOfChunk1: Double?
    var chunk2Arrived: Double?

    init(_ test: Case, configuration: EngineConfiguration = .init()) {
      driver = Driver(configuration: configuration)
      let sizes = test.sizes
      let plans = chunks(talkingWalk(count: sizes.reduce(0, +)), sizes: sizes)
      var playing: (id: ChunkID, start: Double, offset: Double, length: Double)?
      driver.tick(at: 0)
      driver.enqueue(plans[0])
      driver.enqueue(plans[1])
      var k = 1.0
      while k / 60 < 12 {
        let t = k / 60
        k += 1
        if chunk2Arrived == nil, let last = lastOfChunk1, t >= last + slot + test.stall - 1e-9 {
          driver.enqueue(plans[2])
          driver.engine.audioEnded()
          chunk2Arrived = t
        }
        var clock: AudioClock?
        if let audio = playing {
          let position = audio.offset + t - audio.start
          if !test.audioEnds || position < audio.length {
            clock = AudioClock(chunk: audio.id, position: position)
          }
        }
        let result = driver.tick(at: t, audio: clock)
        for action in result.actions {
          switch action {
          case .startAudio(let id, let offset):
            let length = Double(sizes[id.index]) / 30
            playing = (id, t, offset, length)
            starts.append((t, id, offset))
            audioEnds[id] = t + length - offset
          case .stopAudio(let id):
            if playing?.id == id { playing = nil }
            audioEnds[id] = t
          default: break
          }
        }
        if lastOfChunk1 == nil, let frame = result.plan.frame, frame.chunk?.index == 1,
          frame.overlayIndex == sizes[1] - 1
        {
          lastOfChunk1 = t
        }
        if chunk2Arrived != nil, driver.engine.mode == .idle { break }
      }
    }

    var draws: [(time: Double, frame: DrawnFrame)] { driver.draws }

    /// The longest stretch during which a mouth was on screen while no audio played, from the
    /// draws (a frame is on screen until the next draw) and the audio started.
    var longestSilentMouth: Double {
      let audio = starts.map { ($0.time, audioEnds[$0.id] ?? .infinity) }
      var longest = 0.0
      var run = 0.0
      let draws = self.draws
      for (i, draw) in draws.enumerated() {
        let end = i + 1 < draws.count ? draws[i + 1].time : draw.time + slot
        guard !draw.frame.overlays.isEmpty else {
          run = 0
          continue
        }
        // The part of [draw.time, end) not covered by audio; contiguous silence adds up.
        var cursor = draw.time
        for (start, stop) in audio.sorted(by: { $0.0 < $1.0 }) where stop > cursor && start < end {
          if start > cursor {
            run += start - cursor
            longest = max(longest, run)
          }
          run = 0
          cursor = max(cursor, stop)
        }
        if cursor < end {
          run += end - cursor
          longest = max(longest, run)
        }
      }
      return longest
    }
  }

  /// Whether `b` may follow `a` on screen: the same or a neighbouring frame of one animation,
  /// or the end pose of one and the start pose of the next (or the other way round).
  static func neighbours(_ a: DrawnFrame, _ b: DrawnFrame) -> Bool {
    if a.animation == b.animation && abs(a.index - b.index) <= 1 { return true }
    func pose(_ frame: DrawnFrame) -> KeyPose? {
      if frame.index == 0 { return frame.animation.from }
      if frame.index == standardCounts[frame.animation.rawValue]! - 1 { return frame.animation.to }
      return nil
    }
    guard let first = pose(a), let second = pose(b) else { return false }
    return first == second
  }

  @Test(
    "a late chunk: after 200 ms no mouth, the body keeps moving, then the chunk plays whole, without a pop",
    arguments: cases)
  func lateChunk(_ test: Case) throws {
    let session = Session(test)
    let draws = session.draws
    let last = try #require(session.lastOfChunk1)
    let arrived = try #require(session.chunk2Arrived)
    #expect(session.driver.engine.mode == .idle)

    // No pop anywhere, judged from the draws.
    for (a, b) in zip(draws, draws.dropFirst()) {
      #expect(Self.neighbours(a.frame, b.frame), "pop at \(b.time): \(a.frame) → \(b.frame)")
    }
    #expect(session.driver.engine.metrics.pops == 0)

    // Every chunk's audio started exactly once, from its start, in order; each on the tick
    // that drew its first frame.
    #expect(session.starts.map(\.id.index) == [0, 1, 2])
    #expect(session.starts.allSatisfy { $0.offset == 0 })
    for start in session.starts {
      let first = draws.first { $0.frame.chunk == start.id }
      #expect(first?.time == start.time)
      #expect(first?.frame.overlayIndex == 0)
    }
    // Every frame of every chunk drawn once, in order, on its own base frame.
    for (index, size) in test.sizes.enumerated() {
      let mouths = draws.filter { $0.frame.chunk?.index == index && !$0.frame.overlays.isEmpty }
      #expect(mouths.map(\.frame.overlayIndex) == Array(0..<size), "chunk \(index)")
      for mouth in mouths {
        #expect(mouth.frame.overlays[0].key == "m/\(mouth.frame.animation)/\(mouth.frame.index)")
      }
    }
    // Chunk 2 starts after it arrived, and within its walk back (a few slots) of that.
    let chunk2 = try #require(session.starts.first { $0.id.index == 2 })
    #expect(chunk2.time >= arrived)
    #expect(chunk2.time <= arrived + 7 * slot, "chunk 2 started \(chunk2.time - arrived) s late")

    // The wait: from chunk 1's last frame to chunk 2's first.
    let wait = draws.filter { $0.time > last && $0.time < chunk2.time }
    #expect(session.longestSilentMouth <= 0.2 + 1e-9, "\(session.longestSilentMouth) s")
    if test.graceful {
      // No mouth once the grace is over; the base frame changes every slot.
      let chunk1 = try #require(session.starts.dropLast().last?.id)
      let silentSince = try #require(session.audioEnds[chunk1])
      #expect(wait.filter { $0.time > silentSince + 0.2 }.allSatisfy { $0.frame.overlays.isEmpty })
      let moving = wait.drop { !$0.frame.overlays.isEmpty }
      #expect(moving.count >= Int((test.stall - 0.2) * 30) - 1, "\(moving.count) frames drawn")
      // The first frame without a mouth comes within the grace of the silence.
      let firstMoving = try #require(moving.first)
      #expect(firstMoving.time <= silentSince + 0.2)
      var previous = firstMoving
      for draw in moving.dropFirst() {
        #expect(
          draw.time - previous.time <= slot + 1.0 / 60 + 1e-9, "a still picture at \(draw.time)")
        #expect(draw.frame != previous.frame)
        previous = draw
      }
      #expect(chunk2.time - previous.time <= slot + 1.0 / 60 + 1e-9)
      // The motion stays at the speaking rate: never two frames in one slot.
      for (a, b) in zip(moving, moving.dropFirst()) {
        #expect(b.time - a.time >= slot - 1.0 / 60 - 1e-9)
      }
    } else {
      // Within the grace: the last frame stays, mouth and all, until chunk 2 starts.
      #expect(wait.isEmpty)
    }
  }
}

/// What ends a wait other than the late chunk: `audio_end`, a new message, the wait's cap.
@Suite("Engine: a wait for a late chunk that ends otherwise")
struct EngineGracefulWaitEndTests {
  enum Ending: String, CaseIterable, Sendable {
    /// `audio_end` 1 s into the wait: no chunk 2 will come.
    case audioEnd
    /// A new message's chunk 0 1 s into the wait: the old message is interrupted.
    case newMessage
    /// Nothing: the wait lasts `maxBoundaryHold` (3 s).
    case cap
  }

  @Test(
    "a wait ended by audio_end, a new message or its cap returns without a pop",
    arguments: Ending.allCases)
  func ending(_ ending: Ending) throws {
    var driver = Driver()
    driver.tick(at: 0)
    let plans = chunks(talkingWalk(count: 38), sizes: [20, 18])
    driver.enqueue(plans[0])
    driver.enqueue(plans[1])
    var lastOfChunk1: Double?
    var ended: Double?
    var k = 1.0
    while k / 60 < 10 {
      let t = k / 60
      k += 1
      if ended == nil, let last = lastOfChunk1, t >= last + slot + 1 {
        switch ending {
        case .audioEnd: driver.engine.audioEnded()
        case .newMessage:
          driver.enqueue(
            ChunkPlan(index: 0, frames: talkingWalk(count: 20, tag: "n"), message: MessageID(1)))
          driver.engine.audioEnded()
        case .cap: break
        }
        ended = t
      }
      let result = driver.tick(at: t)
      if lastOfChunk1 == nil, result.plan.frame?.chunk?.index == 1,
        result.plan.frame?.overlayIndex == 17
      {
        lastOfChunk1 = t
      }
    }
    let last = try #require(lastOfChunk1)
    let draws = driver.draws
    for (a, b) in zip(draws, draws.dropFirst()) {
      #expect(
        EngineGracefulWaitTests.neighbours(a.frame, b.frame),
        "pop at \(b.time): \(a.frame) → \(b.frame)")
    }
    #expect(driver.engine.metrics.pops == 0)
    #expect(driver.engine.metrics.boundaryWaits == 1)
    #expect(driver.engine.mode == .idle)
    // The old message's mouths never return after the wait began.
    #expect(
      !draws.contains {
        $0.time > last + 0.2 && $0.frame.overlays.first?.key.hasPrefix("m/") == true
      })
    let finishing = try #require(
      driver.actions.first { $0.time > last && $0.action == .modeChanged(.finishing) })
    switch ending {
    case .audioEnd:
      #expect(finishing.time - (last + slot + 1) <= 2 * slot)
    case .newMessage:
      // The new message plays whole after the old one's wait.
      #expect(
        driver.drawnKeys.filter { $0.hasPrefix("n/") }
          == talkingWalk(count: 20, tag: "n").map { $0.layers[0].key })
    case .cap:
      #expect(abs(finishing.time - (last + slot + 3)) < 1e-6)
    }
  }
}
