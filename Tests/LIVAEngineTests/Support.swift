import LIVAEngine
import LIVAProtocol
import Testing

func name(_ text: String) -> AnimationName { try! AnimationName(parsing: text) }

/// The production set with small frame counts, so sessions stay short.
let standardCounts: [String: Int] = [
  "idle_1_s_idle_1_e": 6, "idle_1_e_idle_1_s": 6,
  "idle_1_e_talking_1_s": 4, "talking_1_s_talking_1_e": 12, "talking_1_e_idle_1_s": 4,
  "talking_1_e_talking_1_s": 12,
  "idle_1_e_talking_2_s": 4, "talking_2_s_talking_2_e": 10, "talking_2_e_idle_1_s": 4,
  "talking_2_e_talking_2_s": 10, "talking_1_e_talking_2_s": 3, "talking_2_e_talking_1_s": 3,
  "idle_1_e_hi_1_s": 3, "hi_1_s_hi_1_e": 5, "hi_1_e_idle_1_s": 3,
]

func animations(_ counts: [String: Int] = standardCounts) -> [AnimationName: Int] {
  Dictionary(uniqueKeysWithValues: counts.map { (name($0.key), $0.value) })
}

let rect = PlacementRect(x: 10, y: 20, width: 30, height: 15)

/// A frame whose overlay key names its message tag, animation and base index.
func frame(_ animation: String, _ index: Int, tag: String = "m") -> PlannedFrame {
  PlannedFrame(
    key: "\(tag)/\(animation)/\(index)", animation: name(animation), baseFrame: index, rect: rect)
}

/// Frames walking the graph the way production streams them: the transition from idle, then
/// the talking loop back and forth.
func talkingWalk(count: Int, tag: String = "m", startWithTransition: Bool = true) -> [PlannedFrame]
{
  var sequence: [(String, Int)] = []
  if startWithTransition { sequence += (0..<4).map { ("idle_1_e_talking_1_s", $0) } }
  var forward = true
  while sequence.count < count {
    let anim = forward ? "talking_1_s_talking_1_e" : "talking_1_e_talking_1_s"
    sequence += (0..<12).map { (anim, $0) }
    forward.toggle()
  }
  return sequence.prefix(count).map { frame($0.0, $0.1, tag: tag) }
}

/// Splits frames into chunk plans of the given sizes, chunks 0… of `message`.
func chunks(_ frames: [PlannedFrame], sizes: [Int], message: MessageID = MessageID(0))
  -> [ChunkPlan]
{
  var plans: [ChunkPlan] = []
  var start = 0
  for (index, size) in sizes.enumerated() {
    plans.append(
      ChunkPlan(
        index: index, frames: Array(frames[start..<min(start + size, frames.count)]),
        message: message))
    start += size
  }
  return plans
}

/// One tick as recorded by the driver.
struct Entry {
  var time: Double
  var result: TickResult
  /// The audio clock given to this tick, if any.
  var audio: AudioClock? = nil
  var frame: DrawnFrame? { result.plan.frame }
}

/// Drives an engine with explicit timestamps and records every tick.
struct Driver {
  var engine: LIVAEngine
  var now = 0.0
  var log: [Entry] = []
  var inputActions: [EngineAction] = []
  /// The last message begun by ``enqueue(_:ready:)``.
  var begun: MessageID?
  var audioPlaying: (id: ChunkID, start: Double, offset: Double)?

  init(configuration: EngineConfiguration = .init(), counts: [String: Int] = standardCounts) {
    engine = LIVAEngine(configuration: configuration, animations: animations(counts))
  }

  @discardableResult
  mutating func tick(at time: Double, audio: AudioClock? = nil) -> TickResult {
    now = time
    let result = engine.tick(now: time, audio: audio)
    log.append(Entry(time: time, result: result, audio: audio))
    return result
  }

  /// Ticks at `hz` until `end` (inclusive of the last tick not after it). A run that would
  /// tick nothing (`end` not past the last tick) is a test meaning to advance time and not
  /// doing so: an issue.
  mutating func run(
    until end: Double, hz: Double = 60, audio: ((Double) -> AudioClock?)? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    var k = (now * hz).rounded(.down) + 1
    if k / hz > end + 1e-9 {
      Issue.record(
        "run(until: \(end)) ticks nothing: the last tick was at \(now)",
        sourceLocation: sourceLocation)
    }
    while k / hz <= end + 1e-9 {
      tick(at: k / hz, audio: audio?(k / hz))
      k += 1
    }
  }

  /// Runs until the engine is back in idle after speaking (or `limit` seconds pass).
  mutating func runUntilIdle(hz: Double = 60, limit: Double = 30) {
    let stop = now + limit
    var k = (now * hz).rounded(.down) + 1
    var spoke = false
    while k / hz <= stop {
      tick(at: k / hz)
      if engine.mode != .idle { spoke = true }
      if spoke && engine.mode == .idle { return }
      k += 1
    }
  }

  /// Enqueues a plan; a plan of another message than the open one begins its message first
  /// (as the speech session does at its chunk 0).
  mutating func enqueue(_ plan: ChunkPlan, ready: Bool = true) {
    if ready { engine.imagesReady(plan.frames.flatMap(\.layers).map(\.key)) }
    if begun != plan.message {
      begun = plan.message
      inputActions += engine.begin(plan.message)
    }
    inputActions += engine.enqueue(plan)
  }

  var draws: [(time: Double, frame: DrawnFrame)] {
    log.compactMap { entry in entry.frame.map { (entry.time, $0) } }
  }

  var actions: [(time: Double, action: EngineAction)] {
    log.flatMap { entry in entry.result.actions.map { (entry.time, $0) } }
  }

  /// Overlay keys drawn, in order.
  var drawnKeys: [String] { draws.flatMap { $0.frame.overlays.map(\.key) } }

  var modes: [EngineMode] {
    var result: [EngineMode] = []
    for entry in log {
      for case .modeChanged(let mode) in entry.result.actions where result.last != mode {
        result.append(mode)
      }
    }
    return result
  }
}

extension EngineAction {
  var startedChunk: ChunkID? {
    if case .startAudio(let id, _) = self { return id }
    return nil
  }
}

extension Driver {
  /// Ticks at `hz` until `end` while simulating an audio output: a chunk's audio starts when the
  /// engine says so and runs at `1 + skew` times real time; its position is fed back each tick.
  /// Like ``run(until:hz:audio:sourceLocation:)``, a run that would tick nothing is an issue.
  mutating func runWithAudio(
    until end: Double, skew: Double, hz: Double = 60,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    var k = (now * hz).rounded(.down) + 1
    if k / hz > end + 1e-9 {
      Issue.record(
        "runWithAudio(until: \(end)) ticks nothing: the last tick was at \(now)",
        sourceLocation: sourceLocation)
    }
    while k / hz <= end + 1e-9 {
      let t = k / hz
      let clock = audioPlaying.map {
        AudioClock(chunk: $0.id, position: $0.offset + (t - $0.start) * (1 + skew))
      }
      let result = tick(at: t, audio: clock)
      for action in result.actions {
        switch action {
        case .startAudio(let id, let offset): audioPlaying = (id, t, offset)
        case .stopAudio: audioPlaying = nil
        default: break
        }
      }
      k += 1
    }
  }
}
