// Benchmarks of LIVAMedia:
//
//   Media.WebPDecode.Sprite100x80        a mouth sprite decoded (budgeted)
//   Media.PNGDecode.Frame1280x768        a production base frame decoded (reported)
//   Media.Composite.Full1280x768         scaled base copy + one feathered overlay (budgeted)
//   Media.Composite.OverlayOnly1280x768  same base key: overlay region only (budgeted)
//   Media.Store.RenderReadDuringIngest   the longest single render-side read ("Longest read")
//                                        while a pipeline decodes 60-image batches
//
// The images and the compositor set-ups are Tools' LIVABench library (`MediaBenchFixtures`,
// `CompositeBench`). The three latency budgets are stated once, in LIVABench's
// `LatencyBudget.standard`; CI checks them with `liva bench-budgets --check`
// (scripts/bench-budgets), which needs no build of this package. They are not encoded here as
// thresholds, which the benchmark package uses for baseline-to-baseline deltas.
import Benchmark
import Foundation
import LIVABench
import LIVAMedia
import LIVAProtocol

let benchmarks: @Sendable () -> Void = {
  Benchmark.defaultConfiguration = .init(
    metrics: [.wallClock, .mallocCountTotal], warmupIterations: 3,
    maxDuration: .seconds(3), maxIterations: 2_000)

  let fixtures = try! MediaBenchFixtures()
  let codec = fixtures.codec
  let sprite = fixtures.sprite
  let spriteWebP = fixtures.spriteWebP
  let framePNG = try! codec.encode(fixtures.frame, as: .png)

  Benchmark("Media.WebPDecode.Sprite100x80") { benchmark in
    for _ in benchmark.scaledIterations {
      blackHole(try! fixtures.decodeSprite())
    }
  }

  // No budget; a production base frame.
  Benchmark("Media.PNGDecode.Frame1280x768", configuration: .init(maxIterations: 200)) {
    benchmark in
    for _ in benchmark.scaledIterations {
      blackHole(try! codec.decode(framePNG))
    }
  }

  // A new base key every call (the base copied in full), one feathered overlay.
  Benchmark("Media.Composite.Full1280x768") { benchmark in
    let composite = CompositeBench(.full, fixtures: fixtures)
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      blackHole(composite.render())
    }
  }

  // The base is unchanged, only the overlay region is redrawn.
  Benchmark("Media.Composite.OverlayOnly1280x768") { benchmark in
    let composite = CompositeBench(.overlayOnly, fixtures: fixtures)
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      blackHole(composite.render())
    }
  }

  // The render side reads the store while 60-image batches are decoded on another thread.
  // Each sample runs a fresh store, pipeline and feeder, lets ingest get going, then times
  // 5,000 reads one by one: "Longest read" is the slowest single render-side call of the
  // sample (its p100 over samples is the longest seen), "Mean read" the average.
  let longestRead = BenchmarkMetric.custom("Longest read (ns)", useScalingFactor: false)
  let meanRead = BenchmarkMetric.custom("Mean read (ns)", useScalingFactor: false)
  Benchmark(
    "Media.Store.RenderReadDuringIngest",
    configuration: .init(
      metrics: [.wallClock, longestRead, meanRead], maxDuration: .seconds(5), maxIterations: 200)
  ) { benchmark in
    let store = OverlayImageStore(byteLimit: 16 << 20)
    let pipeline = IngestPipeline(store: store)
    let keys = (0..<60).map { "talking_1_s_talking_1_e/\($0)/J1_X2_M0.webp" }
    let feeding = Locked(true)
    let message = Locked(0)
    let feeder = Thread {
      while feeding.value {
        message.value += 1
        let current = message.value
        pipeline.submit(keys.map { EncodedOverlay(key: "\(current)/\($0)", data: spriteWebP) }) {
          _ in
        }
        // At most half a batch waits: the store's byte limit bounds the images.
        while pipeline.statistics.queued > 30 && feeding.value {
          Thread.sleep(forTimeInterval: 0.001)
        }
      }
    }
    feeder.start()
    while message.value < 2 { Thread.sleep(forTimeInterval: 0.001) }
    // Read the keys of the message being decoded: a mix of hits and misses.
    let readKeys = (0..<60).map { "\(message.value)/\(keys[$0])" }
    timeReads(store, readKeys, benchmark, longest: longestRead, mean: meanRead)
    feeding.value = false
  }

  // The control for the benchmark above: the same reads with no ingest running, so the
  // difference is what decoding on another thread costs the render side (the rest is the
  // scheduler preempting the reading thread).
  Benchmark(
    "Media.Store.RenderReadIdle",
    configuration: .init(
      metrics: [.wallClock, longestRead, meanRead], maxDuration: .seconds(5), maxIterations: 200)
  ) { benchmark in
    let store = OverlayImageStore(byteLimit: 16 << 20)
    let keys = (0..<60).map { "1/talking_1_s_talking_1_e/\($0)/J1_X2_M0.webp" }
    for key in keys.prefix(30) { store.insert(sprite, for: key) }
    timeReads(store, keys, benchmark, longest: longestRead, mean: meanRead)
  }
}

/// Times 5,000 render-side reads of `keys` one by one and reports the slowest and the mean.
func timeReads(
  _ store: OverlayImageStore, _ keys: [String], _ benchmark: Benchmark,
  longest longestMetric: BenchmarkMetric, mean meanMetric: BenchmarkMetric
) {
  var longest: UInt64 = 0
  var total: UInt64 = 0
  let reads = 5_000
  benchmark.startMeasurement()
  for index in 0..<reads {
    let start = DispatchTime.now().uptimeNanoseconds
    blackHole(store.image(for: keys[index % keys.count]))
    let elapsed = DispatchTime.now().uptimeNanoseconds - start
    longest = max(longest, elapsed)
    total += elapsed
  }
  benchmark.stopMeasurement()
  benchmark.measurement(longestMetric, Int(longest))
  benchmark.measurement(meanMetric, Int(total / UInt64(reads)))
}

/// A tiny lock-protected flag for the benchmark's feeder thread.
final class Locked<Value: Sendable>: @unchecked Sendable {
  // @unchecked Sendable: `storage` is only touched under `lock`.
  private let lock = NSLock()
  private var storage: Value
  init(_ value: Value) { storage = value }
  var value: Value {
    get {
      lock.lock()
      defer { lock.unlock() }
      return storage
    }
    set {
      lock.lock()
      storage = newValue
      lock.unlock()
    }
  }
}
