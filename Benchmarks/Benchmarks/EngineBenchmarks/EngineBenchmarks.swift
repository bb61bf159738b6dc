// Benchmarks of LIVAEngine:
//
//   Engine.Tick.ThreeQueuedChunks   one 60 Hz tick (budgeted)
//
// Each sample is one 60 Hz tick of an engine that is speaking with three chunks of 60 frames
// queued behind the playing one (refilled outside the measured region), so every tick pays
// for readiness checks, boundaries and action lists as in production. The scenario is Tools'
// LIVABench library (`EngineTickBench`). Its latency budget is stated once, in LIVABench's
// `LatencyBudget.standard`, and CI checks it with `liva bench-budgets --check`
// (scripts/bench-budgets), which needs no build of this package.
import Benchmark
import LIVABench

let benchmarks: @Sendable () -> Void = {
  Benchmark.defaultConfiguration = .init(
    metrics: [.wallClock, .mallocCountTotal], warmupIterations: 100,
    scalingFactor: .one, maxDuration: .seconds(5), maxIterations: 100_000)

  let box = EngineTickBench()
  Benchmark("Engine.Tick.ThreeQueuedChunks") { benchmark in
    box.prepareTick()
    benchmark.startMeasurement()
    blackHole(box.tick())
    benchmark.stopMeasurement()
  }
}
