/// The durations of one operation timed one call at a time, sorted.
public struct LatencySamples: Sendable {
  /// Every sample, shortest first.
  public let sorted: [Duration]

  /// Samples from `durations`, in any order (at least one).
  public init(_ durations: [Duration]) {
    precondition(!durations.isEmpty, "no samples")
    sorted = durations.sorted()
  }

  /// How many samples there are.
  public var count: Int { sorted.count }
  /// The 50th percentile.
  public var median: Duration { percentile(0.5) }
  /// The 90th percentile.
  public var p90: Duration { percentile(0.9) }
  /// The 99th percentile.
  public var p99: Duration { percentile(0.99) }

  /// The nearest-rank percentile: the shortest sample that at least `fraction` (0...1) of
  /// the samples do not exceed.
  public func percentile(_ fraction: Double) -> Duration {
    let rank = Int((Double(count) * fraction).rounded(.up))
    return sorted[min(max(rank, 1), count) - 1]
  }

  /// Times `operation` `count` times with `ContinuousClock`, one call per sample, after
  /// `warmUp` calls that are not kept; `prepare` runs before each call, outside the timing.
  public static func measure<Result>(
    count: Int, warmUp: Int, prepare: () -> Void = {}, _ operation: () throws -> Result
  ) rethrows -> LatencySamples {
    let clock = ContinuousClock()
    for _ in 0..<warmUp {
      prepare()
      keep(try operation())
    }
    var durations: [Duration] = []
    durations.reserveCapacity(count)
    for _ in 0..<max(count, 1) {
      prepare()
      let start = clock.now
      let result = try operation()
      durations.append(clock.now - start)
      keep(result)
    }
    return LatencySamples(durations)
  }

  /// Keeps `value` alive as far as the optimiser knows.
  @inline(never)
  private static func keep<Value>(_ value: Value) {
    withExtendedLifetime(value) {}
  }
}

/// A fixed piece of CPU work timed in the same run as the benchmarks, so that their budgets are
/// ratios to it and hold on a faster or a slower machine alike: an FNV-1a hash of 64 KiB, one
/// multiply that waits on the one before per byte (no vector unit shortens it), about 0.1 ms.
public struct ReferenceWork: Sendable {
  private let bytes: [UInt8]

  /// The work's 64 KiB of input.
  public init() {
    bytes = (0..<65_536).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
  }

  /// Does the work once, from `seed` (a different seed each call, so that no call's result
  /// can be reused for the next).
  @inline(never)
  public func run(seed: UInt64) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ seed
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    return hash
  }

  /// Times the work `samples` times after 20 unkept runs.
  public func measure(samples: Int = 400) -> LatencySamples {
    var seed: UInt64 = 0
    return LatencySamples.measure(
      count: samples, warmUp: 20, prepare: { seed &+= 1 }, { run(seed: seed) })
  }
}

/// A latency budget of one benchmark: the median of its samples, in units of the median of
/// ``ReferenceWork`` timed in the same run, must not exceed a limit. The median, because on a
/// machine shared with other work the tail percentiles move twofold from run to run while the
/// median moves by a few percent; a ratio, because the machine's speed cancels out of it.
public struct LatencyBudget: Sendable {
  /// The benchmark's name in Benchmarks/ (`Engine.Tick.ThreeQueuedChunks`, …).
  public let name: String
  /// The longest the median may be, as a multiple of the reference work's median.
  public let limit: Double
  /// Samples measured by default.
  public let samples: Int
  /// Calls made, and not kept, before the samples.
  public let warmUp: Int
  private let run: @Sendable (_ samples: Int, _ warmUp: Int) throws -> LatencySamples

  /// A budget whose samples `run` measures (given the sample and warm-up counts); each call of
  /// `run` starts its scenario afresh.
  public init(
    name: String, limit: Double, samples: Int, warmUp: Int,
    run: @escaping @Sendable (_ samples: Int, _ warmUp: Int) throws -> LatencySamples
  ) {
    self.name = name
    self.limit = limit
    self.samples = samples
    self.warmUp = warmUp
    self.run = run
  }

  /// Measures the benchmark afresh: `samples` samples (default ``samples``) after the warm-up.
  public func measure(samples: Int? = nil) throws -> LatencySamples {
    try run(samples ?? self.samples, warmUp)
  }

  /// The median of `samples` in units of the median of `reference`.
  public static func ratio(_ samples: LatencySamples, to reference: LatencySamples) -> Double {
    seconds(samples.median) / max(seconds(reference.median), 1e-12)
  }

  /// Whether `samples` keep the budget, against `reference` timed in the same run.
  public func isMet(by samples: LatencySamples, reference: LatencySamples) -> Bool {
    Self.ratio(samples, to: reference) <= limit
  }

  /// `duration` in seconds.
  public static func seconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) + Double(attoseconds) * 1e-18
  }

  /// The budgets of Benchmarks/'s `Engine.*` and `Media.*` benchmarks on release builds, the
  /// one place they are stated. Each is about 1.25 times the ratio measured on the 2-core
  /// Linux machine CI runs on, with nothing else running (docs/Architecture.md has the
  /// measurements):
  ///
  /// - `Engine.Tick.ThreeQueuedChunks`: one 60 Hz tick of an engine speaking with three chunks
  ///   queued (20,000 ticks);
  /// - `Media.WebPDecode.Sprite100x80`: a 100×80 mouth sprite decoded (2,000 decodes);
  /// - `Media.Composite.Full1280x768`: a new base frame and one feathered mouth (2,000 frames);
  /// - `Media.Composite.OverlayOnly1280x768`: the mouth's region only (2,000 frames).
  public static func standard(fixtures: MediaBenchFixtures) -> [LatencyBudget] {
    [
      LatencyBudget(
        name: "Engine.Tick.ThreeQueuedChunks", limit: 0.011, samples: 20_000, warmUp: 100
      ) { samples, warmUp in
        let bench = EngineTickBench()
        return LatencySamples.measure(count: samples, warmUp: warmUp, prepare: bench.prepareTick) {
          bench.tick()
        }
      },
      LatencyBudget(name: "Media.WebPDecode.Sprite100x80", limit: 1.0, samples: 2_000, warmUp: 20) {
        samples, warmUp in
        try LatencySamples.measure(count: samples, warmUp: warmUp) { try fixtures.decodeSprite() }
      },
      compositeBudget(.full, "Media.Composite.Full1280x768", 2.7, fixtures),
      compositeBudget(.overlayOnly, "Media.Composite.OverlayOnly1280x768", 1.07, fixtures),
    ]
  }

  private static func compositeBudget(
    _ scenario: CompositeBench.Scenario, _ name: String, _ limit: Double,
    _ fixtures: MediaBenchFixtures
  ) -> LatencyBudget {
    LatencyBudget(name: name, limit: limit, samples: 2_000, warmUp: 20) { samples, warmUp in
      let bench = CompositeBench(scenario, fixtures: fixtures)
      return LatencySamples.measure(count: samples, warmUp: warmUp) { bench.render() }
    }
  }
}
