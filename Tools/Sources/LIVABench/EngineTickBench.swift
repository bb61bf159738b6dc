import LIVAEngine
import LIVAProtocol

/// The scenario of `Engine.Tick.ThreeQueuedChunks`: one 60 Hz tick at a time of an engine that
/// is speaking with three chunks of 60 frames queued behind the playing one, so every tick pays
/// for readiness checks, boundaries and action lists as in production.
///
/// Call ``prepareTick()`` outside the measured region (it refills the queue and moves the clock
/// on by 1/60 s), then ``tick()``, which is what is measured.
public final class EngineTickBench: @unchecked Sendable {
  // @unchecked Sendable: used from one thread at a time (a benchmark's closure); it only
  // carries the engine from one sample to the next.

  /// The engine being ticked.
  public private(set) var engine: LIVAEngine
  /// The display time of the next tick, in seconds.
  public private(set) var now = 0.0
  private var nextChunk = 0

  /// An engine of six animations (idle and talking loops and their transitions), ticked once
  /// at time 0.
  public init() {
    let names: [String: Int] = [
      "idle_1_s_idle_1_e": 48, "idle_1_e_idle_1_s": 48, "idle_1_e_talking_1_s": 12,
      "talking_1_s_talking_1_e": 72, "talking_1_e_idle_1_s": 12, "talking_1_e_talking_1_s": 72,
    ]
    let counts = Dictionary(
      uniqueKeysWithValues: names.map { (try! AnimationName(parsing: $0.key), $0.value) })
    engine = LIVAEngine(animations: counts)
    _ = engine.tick(now: 0)
  }

  /// Chunk `index`: 60 frames walking the talking loop, with one overlay per frame.
  public func plan(_ index: Int) -> ChunkPlan {
    let forward = try! AnimationName(parsing: "talking_1_s_talking_1_e")
    let back = try! AnimationName(parsing: "talking_1_e_talking_1_s")
    let frames = (0..<60).map { k -> PlannedFrame in
      let position = (index * 60 + k) % 144
      let animation = position < 72 ? forward : back
      let base = position % 72
      return PlannedFrame(
        key: "\(animation)/\(base)/J1_X\(k % 9)_M0.webp", animation: animation, baseFrame: base,
        rect: PlacementRect(x: 590, y: 420, width: 100, height: 80))
    }
    return ChunkPlan(index: index, frames: frames, message: MessageID(0))
  }

  /// Keeps three chunks queued behind the playing one, their images all ready.
  public func refill() {
    while engine.queuedChunks.count < 3 {
      let plan = plan(nextChunk)
      engine.imagesReady(plan.frames.map { $0.layers[0].key })
      if nextChunk == 0 { _ = engine.begin(plan.message) }
      _ = engine.enqueue(plan)
      nextChunk += 1
    }
  }

  /// What comes before each measured tick: ``refill()``, and the clock moved on by 1/60 s.
  public func prepareTick() {
    refill()
    now += 1.0 / 60
  }

  /// The measured work: one tick at ``now``.
  public func tick() -> TickResult {
    engine.tick(now: now)
  }
}
