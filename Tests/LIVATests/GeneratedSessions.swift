import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import LIVATestSupport

/// Generated backend sessions: legal orderings, retries, delays, stalls, barge-ins, late events
/// of interrupted messages, disconnects and bad images, played through a `LIVAPlayer` on a
/// virtual clock (inline decoding, a headless audio output, ticks at 60 Hz), and the
/// invariants every session must keep, checked from what was presented and heard.
struct GeneratedSession: CustomStringConvertible {
  /// One thing that happens at a virtual time.
  enum Step: CustomStringConvertible {
    case event(ServerEvent, label: String)
    /// An event of a connection that dropped, read after the next connection's status (events
    /// and statuses come on two streams).
    case lateEvent(ServerEvent, label: String)
    case connectionLost
    case connectionRestored

    var description: String {
      switch self {
      case .event(_, let label): label
      case .lateEvent(_, let label): label + " (read after the reconnect)"
      case .connectionLost: "connection lost"
      case .connectionRestored: "connection restored"
      }
    }
  }

  struct Timed: CustomStringConvertible {
    var time: Double
    var step: Step
    var description: String { String(format: "%.3f %@", time, step.description) }
  }

  /// What the script promises about one message, for the invariants.
  struct Message {
    /// Frames per chunk.
    var chunks: [Int]
    /// Frame indexes whose image is corrupt, per chunk.
    var badFrames: [Int: Set<Int>] = [:]
    /// Chunks whose `chunk_images_ready` came before their last batch (a backend bug: their
    /// late mouths may be lost).
    var earlyReady: Set<Int> = []
    /// Every event arrived, and nothing interrupted it before it played to its end.
    var protected = true
    /// Its chunk 0 reached the client.
    var opened = true
  }

  var seed: UInt64
  var steps: [Timed]
  var messages: [Message]
  var end: Double

  var description: String {
    "seed \(seed): \(messages.count) message(s) \(messages.map(\.chunks))\n"
      + steps.map { "  \($0)" }.joined(separator: "\n")
  }

  // MARK: - Generation

  static let sprite = try! FixtureAvatar.sprite()

  // swiftlint:disable:next function_body_length
  static func generate(seed: UInt64) -> GeneratedSession {
    var rng = SplitMix64(seed: seed)
    let withMasters = rng.chance(0.7)
    let retryRate = rng.chance(0.25) ? 1.0 : (rng.chance(0.5) ? 0.2 : 0)
    var steps: [Timed] = []
    var messages: [Message] = []
    var master = rng.next(in: 0...50)
    var start = 0.2
    let count = rng.next(in: 1...3)
    var disconnectDone = false
    for number in 0..<count {
      let chunks = (0..<rng.next(in: 1...3)).map { _ in rng.next(in: 6...24) }
      var message = Message(chunks: chunks)
      let walk = wireWalk(chunks.reduce(0, +))
      var messageSteps: [Timed] = []
      var time = start
      var offset = 0
      let base = master
      var chunkGroups: [[Timed]] = []
      for (chunk, frames) in chunks.enumerated() {
        var group: [Timed] = []
        let bad: Set<Int> = rng.chance(0.15) ? [rng.next(in: 0...(frames - 1))] : []
        if !bad.isEmpty { message.badFrames[chunk] = bad }
        let objects: [OverlayFrame] = (0..<frames).map { position in
          let (animation, index) = walk[offset + position]
          let name = try! AnimationName(parsing: animation)
          let isBad = bad.contains(position)
          let sheet = isBad ? "BAD\(seed)_\(number)_\(chunk).png" : "M\(rng.next(in: 0...2)).png"
          return OverlayFrame(
            overlayId: "\(animation)/\(index)/\(sheet)", animationName: name,
            matchedSpriteFrameNumber: index, sequenceIndex: position, sheetFilename: sheet,
            coordinates: PlacementRect(x: 12, y: 20, width: 8, height: 8),
            image: EncodedImage(
              data: isBad ? Data([0, 1, 2, 3]) : sprite, mimeType: "image/png"))
        }
        offset += frames
        // Batches: 1–3, in any order.
        let batchCount = min(frames, rng.next(in: 1...3))
        let size = (frames + batchCount - 1) / batchCount
        var batches: [Step] = stride(from: 0, to: frames, by: size).enumerated().map { b, first in
          let slice = Array(objects[first..<min(first + size, frames)])
          return .event(
            .frameImagesBatch(
              FrameImagesBatch(
                frames: slice, chunkIndex: chunk, batchIndex: b, batchStartIndex: first,
                batchSize: slice.count, totalBatches: batchCount)),
            label: "m\(number) batch c\(chunk) b\(b)")
        }
        batches.shuffle(using: &rng)
        let plan: [OverlayFrame] = objects.map {
          var frame = $0
          frame.image = nil
          return frame
        }
        let audio = Step.event(
          .audioChunk(
            AudioChunk(
              audio: silentMP3(seconds: Double(frames) / 30), chunkIndex: chunk,
              masterChunkIndex: withMasters ? base + chunk : nil, totalFrameImages: frames,
              animations: [ChunkAnimation(animationName: plan[0].animationName, sections: [plan])])
          ), label: "m\(number) audio c\(chunk)")
        var events = batches
        events.insert(audio, at: rng.next(in: 0...events.count))
        // chunk_images_ready: after the batches, missing, or (a backend bug) early.
        let ready = Step.event(
          .chunkImagesReady(chunkIndex: chunk, totalImagesSent: frames),
          label: "m\(number) ready c\(chunk)")
        let roll = rng.next(in: 0...9)
        if roll < 7 {
          events.append(ready)
        } else if roll < 9 || batchCount == 1 {
          // missing
        } else {
          message.earlyReady.insert(chunk)
          events.insert(ready, at: events.count - 1)
        }
        for step in events {
          time += Double(rng.next(in: 2...15)) / 1000
          group.append(Timed(time: time, step: step))
        }
        chunkGroups.append(group)
        // Between chunks: streaming ahead, slower, or a stall of the speech service.
        let gap =
          rng.chance(0.15)
          ? Double(rng.next(in: 800...1500)) / 1000 : Double(rng.next(in: 20...500)) / 1000
        time += gap
      }
      // Chunk N before chunk 0 (a backend whose tasks race): chunk 1's audio first.
      // Without masters it cannot be told from the open message's next chunk: masters only.
      if chunkGroups.count > 1, withMasters, rng.chance(0.1),
        let audio1 = chunkGroups[1].firstIndex(where: { $0.step.description.contains("audio") })
      {
        var moved = chunkGroups[1].remove(at: audio1)
        moved.time = chunkGroups[0][0].time - 0.001
        chunkGroups[0].insert(moved, at: 0)
        // The backend had chunk 1 ready: its images follow chunk 0's at once.
        let shift = (chunkGroups[1].first?.time ?? 0) - (chunkGroups[0].last?.time ?? 0) - 0.005
        for position in chunkGroups[1].indices { chunkGroups[1][position].time -= shift }
      }
      messageSteps = chunkGroups.flatMap { $0 }
      if !rng.chance(0.1) {
        messageSteps.append(
          Timed(time: time, step: .event(.audioEnd, label: "m\(number) audio_end")))
      }
      // Re-sends: any event once more, 5–400 ms later (maybe after later events began).
      for step in messageSteps where rng.chance(retryRate) {
        var again = step
        again.time += Double(rng.next(in: 5...400)) / 1000
        if case .event(let event, let label) = step.step {
          again.step = .event(event, label: label + " (again)")
        }
        messageSteps.append(again)
      }
      master += chunks.count + rng.next(in: 0...2)
      let playEnd =
        (messageSteps.map(\.time).max() ?? start) + Double(chunks.reduce(0, +)) / 30 + 2.5
      // The next message: after this one played out, or a barge-in at any point.
      var nextStart = playEnd + Double(rng.next(in: 0...500)) / 1000
      if number + 1 < count, rng.chance(0.4) {
        nextStart = start + Double(rng.next(in: 50...Int((playEnd - start) * 1000))) / 1000
      }
      if number + 1 < count, nextStart < playEnd {
        message.protected = false
        // The backend stops this message: what it had sent arrives, a little of the rest late.
        let late = Double(rng.next(in: 0...200)) / 1000
        messageSteps = messageSteps.filter { step in
          guard step.time > nextStart else { return true }
          guard step.time <= nextStart + late else { return false }
          // Without masters a late chunk cannot be told from the next message's: leave it out.
          return withMasters || !step.step.description.contains("audio c")
        }
      }
      // A disconnect, once per session at most: the rest of this message is lost.
      if !disconnectDone, rng.chance(0.1) {
        disconnectDone = true
        let cut = start + Double(rng.next(in: 0...Int((playEnd - start) * 1000))) / 1000
        if messageSteps.contains(where: { $0.time > cut }) { message.protected = false }
        messageSteps = messageSteps.filter { $0.time <= cut }
        messageSteps.append(Timed(time: cut, step: .connectionLost))
        messageSteps.append(Timed(time: cut + 0.3, step: .connectionRestored))
        // The client may read the last events before the drop after the reconnect's status:
        // they are read at once, in order, right after it. (What they promise is then only
        // the invariants every message keeps: their delay can cost mouths.)
        if rng.chance(0.5) {
          let window = Double(rng.next(in: 0...300)) / 1000
          var late = 0
          for index in messageSteps.indices
          where messageSteps[index].time > cut - window && messageSteps[index].time <= cut {
            guard case .event(let event, let label) = messageSteps[index].step else { continue }
            late += 1
            messageSteps[index].time = cut + 0.3 + Double(late) / 1_000_000
            messageSteps[index].step = .lateEvent(event, label: label)
          }
          if late > 0 { message.protected = false }
        }
        nextStart = max(nextStart, cut + 0.4)
      }
      message.opened = messageSteps.contains {
        $0.step.description.hasPrefix("m\(number) audio c0")
      }
      if !message.opened { message.protected = false }
      messages.append(message)
      steps += messageSteps
      start = nextStart
    }
    steps.sort { $0.time < $1.time }
    let end = (steps.map(\.time).max() ?? 0) + 8
    return GeneratedSession(seed: seed, steps: steps, messages: messages, end: end)
  }

  // MARK: - Running

  /// A presented frame: when, what, and its chunk's audio position then.
  struct Shown {
    var time: Double
    var content: DrawnFrame
    var audioPosition: Double?
  }

  final class Log: @unchecked Sendable {
    // @unchecked: the virtual display link and the inline scheduler run on the test's thread.
    var frames: [Shown] = []
    var queued: [ChunkID] = []
  }

  /// What a run left to check.
  struct Outcome {
    var log: Log
    var segments: [HeadlessAudioOutput.Segment]
    var mode: EngineMode
    var heldChunks: Int
    var busy: [String]
  }

  /// The virtual clock: every step at its time, then a tick (`nil`) at 60 Hz until the end.
  func play(_ body: (Double, Step?) -> Void) {
    var next = 0
    var tick = 0
    while Double(tick) / 60 <= end {
      let now = Double(tick) / 60
      while next < steps.count, steps[next].time <= now {
        body(now, steps[next].step)
        next += 1
      }
      body(now, nil)
      tick += 1
    }
  }

  /// Plays the session through the pure `PlayerCore` alone, carrying out its effects with a
  /// store that decodes at once (the bad images fail) and a headless audio output; returns the
  /// invariants it broke. Thousands of sessions a second.
  func runCore() -> [String] {
    let lookahead = 0.5 / 60
    var core = PlayerCore(audioLookahead: lookahead)
    let audio = HeadlessAudioOutput()
    let log = Log()
    var claims: [String: Set<MessageID>] = [:]
    _ = core.setAvailableAnimations(
      Dictionary(
        uniqueKeysWithValues: FixtureAvatar.counts.map {
          (try! AnimationName(parsing: $0.key), $0.value)
        }))
    func execute(_ effects: [PlayerCore.Effect]) {
      for effect in effects {
        switch effect {
        case .decode(let overlays):
          for overlay in overlays {
            if overlay.data.count < 8 {
              execute(
                core.decoded(
                  .imageFailed(
                    key: overlay.key, error: LIVAMediaError(.corruptData, "too short"))))
            } else {
              execute(core.decoded(.imageReady(key: overlay.key)))
            }
          }
        case .claim(let keys, let message):
          for key in keys { claims[key, default: []].insert(message) }
        case .release(let keys, let message):
          for key in keys { claims[key]?.remove(message) }
        case .evict(let message):
          for key in claims.keys { claims[key]?.remove(message) }
        case .prepareAudio:
          break
        case .startAudio(let id, let data, let offset, let now, let generation):
          if core.generation == generation {
            audio.start(id, audio: data, offset: offset, at: now)
          }
        case .stopAudio(let id, let now):
          audio.stop(id, at: now)
        case .pauseAudio(let now):
          audio.pause(at: now)
        case .resumeAudio(let now):
          audio.resume(at: now)
        case .draw(let frame, let now, let position, _):
          // The position the core worked out from the tick's clock, read ahead of the tick.
          present(frame, at: now, audioPosition: position)
        case .drawIfDecoded(let frame, let now):
          present(frame, at: now, audioPosition: nil)
        case .notify(let action):
          if case .chunkQueued(let id) = action { log.queued.append(id) }
        case .requestWindow, .log:
          break
        }
      }
    }
    func present(_ frame: DrawnFrame, at now: Double, audioPosition position: Double?) {
      execute(
        core.rendered(
          [.presented(frame, at: now, audioPosition: position, frameBytes: 4096)], sinceStart: 0))
      log.frames.append(Shown(time: now, content: frame, audioPosition: position))
    }
    play { now, step in
      switch step {
      case .event(let event, _)?: execute(core.handle(event))
      case .lateEvent(let event, _)?: execute(core.handle(event, fromLostConnection: true))
      case .connectionLost?: execute(core.connectionLost())
      case .connectionRestored?: execute(core.connectionRestored())
      case nil: execute(core.tick(now: now, audio: audio.position(at: now + lookahead)))
      }
    }
    let claimed = claims.filter { !$0.value.isEmpty }.count
    return check(
      Outcome(
        log: log, segments: audio.segments, mode: core.engine.mode, heldChunks: core.heldChunks,
        busy: claimed > 0 ? ["\(claimed) images still claimed at the end"] : []))
  }

  /// Runs decode work `ticks` display ticks after it was asked for: a worker that is never
  /// there at once (the frame clock goes on meanwhile).
  final class TickLateScheduler: DecodeScheduler, @unchecked Sendable {
    // @unchecked: the session plays on one thread.
    private var queued: [(due: Int, work: @Sendable () -> Void)] = []
    private var tick = 0
    private let ticks: Int
    init(ticks: Int) { self.ticks = ticks }
    func schedule(_ work: @escaping @Sendable () -> Void) { queued.append((tick + ticks, work)) }
    /// A display tick: runs what is due (work it schedules waits its own ticks).
    func runDue() {
      tick += 1
      let due = queued.filter { $0.due <= tick }
      queued.removeAll { $0.due <= tick }
      for item in due { item.work() }
    }
  }

  /// Plays the session and returns the invariants it broke (empty: none). `decodesLate`: every
  /// decode (mouths and base frames) lands that many display ticks after it was asked for.
  func run(avatar: FixtureAvatar, decodesLate: Int = 0) -> [String] {
    var configuration = LIVAPlayer.Configuration()
    configuration.width = 32
    configuration.height = 32
    configuration.featherWidth = 0
    let audio = HeadlessAudioOutput()
    let log = Log()
    let late = TickLateScheduler(ticks: decodesLate)
    let player = LIVAPlayer(
      configuration: configuration, baseFrames: avatar.store, audio: audio,
      surface: CallbackSurface {
        log.frames.append(
          Shown(time: $0.time, content: $0.content, audioPosition: $0.audioPosition))
      }, decodeScheduler: decodesLate > 0 ? late : InlineDecodeScheduler()
    ) { action in
      if case .chunkQueued(let id) = action { log.queued.append(id) }
    }
    play { now, step in
      switch step {
      case .event(let event, _)?: player.handle(event)
      case .lateEvent(let event, _)?: player.handle(event, fromLostConnection: true)
      case .connectionLost?: player.connectionLost()
      case .connectionRestored?: player.connectionRestored()
      case nil:
        late.runDue()
        player.tick(now: now)
      }
    }
    for _ in 0...decodesLate { late.runDue() }
    var busy: [String] = []
    if !player.isIngestIdle { busy.append("ingest still busy at the end") }
    let store = player.overlays.statistics
    if store.bytes > player.overlays.byteLimit { busy.append("overlay store over its limit") }
    return check(
      Outcome(
        log: log, segments: audio.segments, mode: player.mode, heldChunks: player.heldChunks,
        busy: busy))
  }

  // MARK: - Invariants

  func check(_ outcome: Outcome) -> [String] {
    let log = outcome.log
    if ProcessInfo.processInfo.environment["LIVA_SESSION_TRACE"] != nil {
      print(description)
      for frame in log.frames {
        let content = frame.content
        print(
          String(format: "%.3f", frame.time), "\(content.animation)#\(content.index)",
          content.chunk.map { "\($0)[\(content.overlayIndex ?? -1)]" } ?? "-",
          content.overlays.isEmpty ? "" : "mouth", content.mode)
      }
      for segment in outcome.segments {
        print(
          "audio", segment.chunk, segment.start, segment.duration ?? -1, segment.stoppedAt ?? -1)
      }
    }

    var broken: [String] = []
    // The player's message numbers, in order of appearance: one per script message opened.
    var order: [MessageID] = []
    for id in log.queued where !order.contains(id.message) { order.append(id.message) }
    let opened = messages.filter(\.opened).count
    if order.count != opened {
      broken.append("messages: \(order.count) in the player, \(opened) opened by the script")
    }
    // No audio twice: one segment per chunk, and no chunk's audio under two identities.
    let segments = outcome.segments
    var heard = Set<ChunkID>()
    for segment in segments where !heard.insert(segment.chunk).inserted {
      broken.append("audio of \(segment.chunk) started twice")
    }
    var queuedOnce = Set<ChunkID>()
    for id in log.queued where !queuedOnce.insert(id).inserted {
      broken.append("\(id) queued twice")
    }
    // Nothing of an interrupted message after its successor's first frame or sound.
    var newest: MessageID?
    for frame in log.frames {
      guard let message = frame.content.chunk?.message else { continue }
      if let newest, message < newest {
        broken.append("a frame of \(message) at \(frame.time) after \(newest) began")
        break
      }
      newest = max(newest ?? message, message)
    }
    var newestAudio: MessageID?
    for segment in segments {
      if let newestAudio, segment.chunk.message < newestAudio {
        broken.append("audio of \(segment.chunk) after \(newestAudio)'s began")
      }
      newestAudio = max(newestAudio ?? segment.chunk.message, segment.chunk.message)
    }
    // Locked messages: every chunk plays once, in order, to its end, with its mouths, lips
    // on the audio.
    let openedMessages = messages.filter(\.opened)
    for (position, message) in openedMessages.enumerated()
    where message.protected && position < order.count {
      let id = order[position]
      let mine = segments.filter { $0.chunk.message == id }
      if mine.map(\.chunk.index) != Array(0..<message.chunks.count) {
        broken.append(
          "\(id): chunks heard \(mine.map(\.chunk.index)), want 0..<\(message.chunks.count)")
      }
      for segment in mine {
        // Stopped before its natural end (a stop after it is only bookkeeping).
        guard let stopped = segment.stoppedAt, let duration = segment.duration,
          stopped < segment.start + duration - segment.offset - 0.02
        else { continue }
        broken.append("\(segment.chunk): audio cut at \(stopped)")
      }
      for (chunk, frames) in message.chunks.enumerated() where !message.earlyReady.contains(chunk) {
        let drawn = Set(
          log.frames.filter {
            $0.content.chunk == ChunkID(message: id, index: chunk) && !$0.content.overlays.isEmpty
          }.compactMap(\.content.overlayIndex))
        let bad = message.badFrames[chunk] ?? []
        let missing = Set(0..<frames).subtracting(bad).subtracting(drawn)
        if !missing.isEmpty {
          broken.append("\(id)/c\(chunk): mouths not drawn \(missing.sorted())")
        }
      }
    }
    for frame in log.frames where !frame.content.overlays.isEmpty {
      guard let position = frame.audioPosition, let index = frame.content.overlayIndex else {
        continue
      }
      let error = position - Double(index) / 30
      if abs(error) > 1.0 / 30 + 1e-6 {
        broken.append("lips off the audio by \(Int(error * 1000)) ms at \(frame.time)")
        break
      }
    }
    // No pop: consecutive presented frames are neighbours, or meet at a key pose.
    for (previous, next) in zip(log.frames, log.frames.dropFirst())
    where !Self.continuous(previous.content, next.content)
      && !Self.catchUp(previous.content, next.content)
    {
      broken.append(
        "pop at \(next.time): \(previous.content.animation)#\(previous.content.index) → \(next.content.animation)#\(next.content.index)"
      )
      break
    }
    // Ends idle, with nothing held.
    if outcome.mode != .idle { broken.append("ends in \(outcome.mode), not idle") }
    if outcome.heldChunks != 0 {
      broken.append("\(outcome.heldChunks) chunks still held at the end")
    }
    return broken + outcome.busy
  }

  /// Frames of the plan passed over to stay on the audio (mouths that came late): the picture
  /// follows the backend's own frames, which jump. Only faults cause it; the mouth invariant
  /// catches it where none was injected.
  static func catchUp(_ a: DrawnFrame, _ b: DrawnFrame) -> Bool {
    guard let chunk = b.chunk, let index = b.overlayIndex else { return false }
    if index == 0 {
      // Into the next chunk after the end of the one before was passed over.
      guard let previous = a.chunk else { return false }
      return previous.message == chunk.message && previous.index == chunk.index - 1
    }
    return a.chunk != chunk || (a.overlayIndex ?? -1) < index - 1
  }

  static func continuous(_ a: DrawnFrame, _ b: DrawnFrame) -> Bool {
    if a.animation == b.animation && abs(a.index - b.index) <= 1 { return true }
    func pose(_ frame: DrawnFrame) -> KeyPose? {
      if frame.index == 0 { return frame.animation.from }
      if let count = FixtureAvatar.counts[frame.animation.description], frame.index == count - 1 {
        return frame.animation.to
      }
      return nil
    }
    guard let p = pose(a), let q = pose(b) else { return false }
    return p == q
  }

  // MARK: - Shrinking

  /// The smallest session (fewest steps) that still breaks an invariant of the same kind.
  func shrunk(using run: (GeneratedSession) -> [String]) -> (GeneratedSession, [String]) {
    var current = self
    var failures = run(current)
    guard let kind = failures.first.map(Self.kind) else { return (self, []) }
    var chunk = max(1, current.steps.count / 2)
    while chunk >= 1 {
      var removed = false
      var start = 0
      while start < current.steps.count {
        var candidate = current
        let range = start..<min(start + chunk, candidate.steps.count)
        // A message that lost a step promises nothing more than its other invariants.
        for step in candidate.steps[range] {
          let label = step.step.description
          guard label.hasPrefix("m"), let number = Int(label.dropFirst().prefix { $0.isNumber })
          else { continue }
          candidate.messages[number].protected = false
        }
        // The drop and the reconnect stay: events read after the reconnect need them.
        candidate.steps.removeSubrange(range)
        candidate.steps += current.steps[range].filter {
          switch $0.step {
          case .connectionLost, .connectionRestored: true
          default: false
          }
        }
        candidate.steps.sort { $0.time < $1.time }
        guard candidate.steps.count < current.steps.count else {
          start += chunk
          continue
        }
        for number in candidate.messages.indices {
          candidate.messages[number].opened = candidate.steps.contains {
            $0.step.description.hasPrefix("m\(number) audio c0")
          }
        }
        let result = run(candidate)
        if result.contains(where: { Self.kind($0) == kind }) {
          current = candidate
          failures = result
          removed = true
        } else {
          start += chunk
        }
      }
      if !removed { chunk /= 2 }
    }
    return (current, failures)
  }

  static func kind(_ failure: String) -> String {
    String(failure.prefix { $0 != ":" && $0 != " " })
  }
}
