// Benchmarks of LIVAMedia, with their budgets. Budgets are checked by reading the
// p90 wall-clock numbers of a release run (they are not encoded as thresholds, which the
// benchmark package uses for baseline-to-baseline deltas):
//
//   Media.WebPDecode.Sprite100x80        ≤ 0.3 ms
//   Media.PNGDecode.Frame1280x768        (no budget; reported)
//   Media.Composite.Full1280x768         ≤ 2 ms   (scaled base copy + one feathered overlay)
//   Media.Composite.OverlayOnly1280x768  ≤ 0.2 ms (same base key: overlay region only)
//   Media.Store.RenderReadDuringIngest   the longest single render-side read ("Longest read")
//                                        while a pipeline decodes 60-image batches
//   Media.Store.ImmediateReadDuringIngest  the same with OverlayImageStore.read(_:), which
//                                        never waits for the store's lock
import Benchmark
import Foundation
import LIVAMedia
import LIVAProtocol

/// A deterministic image with smooth gradients and some texture, like an avatar frame.
func sampleImage(width: Int, height: Int, seed: Int) -> RGBAImage {
  var image = RGBAImage(width: width, height: height)
  var noise = UInt32(truncatingIfNeeded: seed &* 2_654_435_761 | 1)
  for y in 0..<height {
    for x in 0..<width {
      noise ^= noise << 13
      noise ^= noise >> 17
      noise ^= noise << 5
      let jitter = Int(noise & 7)
      image[x, y] = RGBA(
        UInt8((x * 255 / width + jitter) & 255), UInt8((y * 255 / height + jitter) & 255),
        UInt8((x + y + seed) & 255), 255)
    }
  }
  return image
}

let benchmarks: @Sendable () -> Void = {
  Benchmark.defaultConfiguration = .init(
    metrics: [.wallClock, .mallocCountTotal], warmupIterations: 3,
    maxDuration: .seconds(3), maxIterations: 2_000)

  let codec = SystemImageCodec()
  let sprite = sampleImage(width: 100, height: 80, seed: 1)
  let spriteWebP = try! codec.encode(sprite, as: .webp, quality: 80)
  let frame = sampleImage(width: 1280, height: 768, seed: 2)
  let framePNG = try! codec.encode(frame, as: .png)

  // Budget ≤ 0.3 ms.
  Benchmark("Media.WebPDecode.Sprite100x80") { benchmark in
    for _ in benchmark.scaledIterations {
      blackHole(try! codec.decode(spriteWebP))
    }
  }

  // No budget in the issue; a production base frame.
  Benchmark("Media.PNGDecode.Frame1280x768", configuration: .init(maxIterations: 200)) {
    benchmark in
    for _ in benchmark.scaledIterations {
      blackHole(try! codec.decode(framePNG))
    }
  }

  let overlay = PlacedOverlay(image: sprite, rect: .at(x: 590, y: 420))
  let moved = PlacedOverlay(image: sprite, rect: .at(x: 592, y: 421))

  // Budget ≤ 2 ms: a new base frame every call (alternating keys), one feathered overlay.
  Benchmark("Media.Composite.Full1280x768") { benchmark in
    let compositor = Compositor(width: 1280, height: 768, featherWidth: 6)
    var index = 0
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      index += 1
      blackHole(compositor.render(base: frame, baseKey: "f/\(index)", overlays: [overlay]))
    }
  }

  // Budget ≤ 0.2 ms: the base is unchanged, only the overlay region is redrawn.
  Benchmark("Media.Composite.OverlayOnly1280x768") { benchmark in
    let compositor = Compositor(width: 1280, height: 768, featherWidth: 6)
    compositor.render(base: frame, baseKey: "f/0", overlays: [overlay])
    var flip = false
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      flip.toggle()
      blackHole(compositor.render(base: frame, baseKey: "f/0", overlays: [flip ? moved : overlay]))
    }
  }

  // The render side reads the store while 60-image batches are decoded on another thread.
  // Each sample runs a fresh store, pipeline and feeder, lets ingest get going, then times
  // 5,000 reads one by one: "Longest read" is the slowest single render-side call of the
  // sample (its p100 over samples is the longest seen), "Mean read" the average.
  let longestRead = BenchmarkMetric.custom("Longest read (ns)", useScalingFactor: false)
  let meanRead = BenchmarkMetric.custom("Mean read (ns)", useScalingFactor: false)
  for immediate in [false, true] {
    Benchmark(
      immediate ? "Media.Store.ImmediateReadDuringIngest" : "Media.Store.RenderReadDuringIngest",
      configuration: .init(
        metrics: [.wallClock, longestRead, meanRead], maxDuration: .seconds(5), maxIterations: 200)
    ) { benchmark in
      let store = OverlayImageStore(byteLimit: 16 << 20)
      let pipeline = IngestPipeline(store: store) { _ in }
      let keys = (0..<60).map { "talking_1_s_talking_1_e/\($0)/J1_X2_M0.webp" }
      let feeding = Locked(true)
      let message = Locked(0)
      let feeder = Thread {
        while feeding.value {
          message.value += 1
          let current = message.value
          pipeline.submit(
            keys.map { EncodedOverlay(key: "\(current)/\($0)", data: spriteWebP) }, chunk: 0,
            message: current)
          // Keep the store from growing: drop the message before the next one.
          while pipeline.statistics.queued > 30 && feeding.value {
            Thread.sleep(forTimeInterval: 0.001)
          }
          pipeline.cancel(message: current - 1)
        }
      }
      feeder.start()
      while message.value < 2 { Thread.sleep(forTimeInterval: 0.001) }
      // Read the keys of the message being decoded: a mix of hits and misses.
      let readKeys = (0..<60).map { "\(message.value)/\(keys[$0])" }
      timeReads(
        store, readKeys, benchmark, longest: longestRead, mean: meanRead, immediate: immediate)
      feeding.value = false
    }
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
    for key in keys.prefix(30) { store.insert(sprite, for: key, message: 1) }
    timeReads(store, keys, benchmark, longest: longestRead, mean: meanRead)
  }
}

/// Times 5,000 render-side reads of `keys` one by one and reports the slowest and the mean;
/// `immediate` uses the read that does not wait for the store's lock.
func timeReads(
  _ store: OverlayImageStore, _ keys: [String], _ benchmark: Benchmark,
  longest longestMetric: BenchmarkMetric, mean meanMetric: BenchmarkMetric,
  immediate: Bool = false
) {
  var longest: UInt64 = 0
  var total: UInt64 = 0
  let reads = 5_000
  benchmark.startMeasurement()
  for index in 0..<reads {
    let start = DispatchTime.now().uptimeNanoseconds
    if immediate {
      blackHole(store.read(keys[index % keys.count]))
    } else {
      blackHole(store.image(for: keys[index % keys.count]))
    }
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
