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

/// A latency budget of one benchmark: a percentile of its samples must not exceed a limit.
public struct LatencyBudget: Sendable {
  /// Which percentile the budget is for.
  public enum Statistic: String, Sendable {
    /// The 90th percentile.
    case p90
    /// The 99th percentile.
    case p99

    /// This percentile of `samples`.
    public func of(_ samples: LatencySamples) -> Duration {
      switch self {
      case .p90: samples.p90
      case .p99: samples.p99
      }
    }
  }

  /// The benchmark's name in Benchmarks/ (`Engine.Tick.ThreeQueuedChunks`, …).
  public let name: String
  /// The percentile the budget bounds.
  public let statistic: Statistic
  /// The longest that percentile may be.
  public let limit: Duration
  /// Samples measured by default.
  public let samples: Int
  /// Calls made, and not kept, before the samples.
  public let warmUp: Int
  private let run: @Sendable (_ samples: Int, _ warmUp: Int) throws -> LatencySamples

  /// A budget whose samples `run` measures (given the sample and warm-up counts); each call of
  /// `run` starts its scenario afresh.
  public init(
    name: String, statistic: Statistic, limit: Duration, samples: Int, warmUp: Int,
    run: @escaping @Sendable (_ samples: Int, _ warmUp: Int) throws -> LatencySamples
  ) {
    self.name = name
    self.statistic = statistic
    self.limit = limit
    self.samples = samples
    self.warmUp = warmUp
    self.run = run
  }

  /// Measures the benchmark afresh: `samples` samples (default ``samples``) after the warm-up.
  public func measure(samples: Int? = nil) throws -> LatencySamples {
    try run(samples ?? self.samples, warmUp)
  }

  /// Whether `samples` keep the budget: their ``statistic`` at most ``limit``.
  public func isMet(by samples: LatencySamples) -> Bool {
    statistic.of(samples) <= limit
  }

  /// The budgets of Benchmarks/'s `Engine.*` and `Media.*` benchmarks, on release builds:
  ///
  /// - `Engine.Tick.ThreeQueuedChunks`: p99 ≤ 20 µs per tick (20,000 ticks);
  /// - `Media.WebPDecode.Sprite100x80`: p90 ≤ 0.3 ms (2,000 decodes);
  /// - `Media.Composite.Full1280x768`: p90 ≤ 2 ms (2,000 frames);
  /// - `Media.Composite.OverlayOnly1280x768`: p90 ≤ 0.2 ms (2,000 frames).
  public static func standard(fixtures: MediaBenchFixtures) -> [LatencyBudget] {
    [
      LatencyBudget(
        name: "Engine.Tick.ThreeQueuedChunks", statistic: .p99, limit: .microseconds(20),
        samples: 20_000, warmUp: 100
      ) { samples, warmUp in
        let bench = EngineTickBench()
        return LatencySamples.measure(count: samples, warmUp: warmUp, prepare: bench.prepareTick) {
          bench.tick()
        }
      },
      LatencyBudget(
        name: "Media.WebPDecode.Sprite100x80", statistic: .p90, limit: .microseconds(300),
        samples: 2_000, warmUp: 20
      ) { samples, warmUp in
        try LatencySamples.measure(count: samples, warmUp: warmUp) { try fixtures.decodeSprite() }
      },
      compositeBudget(.full, "Media.Composite.Full1280x768", .milliseconds(2), fixtures),
      compositeBudget(
        .overlayOnly, "Media.Composite.OverlayOnly1280x768", .microseconds(200), fixtures),
    ]
  }

  private static func compositeBudget(
    _ scenario: CompositeBench.Scenario, _ name: String, _ limit: Duration,
    _ fixtures: MediaBenchFixtures
  ) -> LatencyBudget {
    LatencyBudget(name: name, statistic: .p90, limit: limit, samples: 2_000, warmUp: 20) {
      samples, warmUp in
      let bench = CompositeBench(scenario, fixtures: fixtures)
      return LatencySamples.measure(count: samples, warmUp: warmUp) { bench.render() }
    }
  }
}
