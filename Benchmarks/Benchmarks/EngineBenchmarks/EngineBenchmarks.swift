// Benchmarks of LIVAEngine, with its budget:
//
//   Engine.Tick.ThreeQueuedChunks   p99 ≤ 20 µs per tick
//
// Each sample is one 60 Hz tick of an engine that is speaking with three chunks of 60 frames
// queued behind the playing one (refilled outside the measured region), so every tick pays
// for readiness checks, boundaries and action lists as in production.
import Benchmark
import LIVAEngine
import LIVAProtocol

/// The benchmark closure runs on one thread; the box only carries the engine between samples.
final class EngineBox: @unchecked Sendable {
  var engine: LIVAEngine
  var now = 0.0
  var nextChunk = 0
  let counts: [AnimationName: Int]

  init() {
    let names: [String: Int] = [
      "idle_1_s_idle_1_e": 48, "idle_1_e_idle_1_s": 48, "idle_1_e_talking_1_s": 12,
      "talking_1_s_talking_1_e": 72, "talking_1_e_idle_1_s": 12, "talking_1_e_talking_1_s": 72,
    ]
    counts = Dictionary(
      uniqueKeysWithValues: names.map { (try! AnimationName(parsing: $0.key), $0.value) })
    engine = LIVAEngine(animations: counts)
    _ = engine.tick(now: 0)
  }

  /// A 60-frame chunk walking the talking loop, with one overlay per frame.
  func plan(_ index: Int) -> ChunkPlan {
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

  /// Keeps three chunks queued behind the playing one.
  func refill() {
    while engine.queuedChunks.count < 3 {
      let plan = plan(nextChunk)
      engine.imagesReady(plan.frames.map { $0.layers[0].key })
      _ = engine.enqueue(plan)
      nextChunk += 1
    }
  }
}

let benchmarks: @Sendable () -> Void = {
  Benchmark.defaultConfiguration = .init(
    metrics: [.wallClock, .mallocCountTotal], warmupIterations: 100,
    scalingFactor: .one, maxDuration: .seconds(5), maxIterations: 100_000)

  let box = EngineBox()
  Benchmark("Engine.Tick.ThreeQueuedChunks") { benchmark in
    box.refill()
    box.now += 1.0 / 60
    benchmark.startMeasurement()
    blackHole(box.engine.tick(now: box.now))
    benchmark.stopMeasurement()
  }
}
