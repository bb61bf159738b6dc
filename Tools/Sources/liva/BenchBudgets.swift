import ArgumentParser
import Foundation
import LIVABench

/// `liva bench-budgets`: the latency budgets of Benchmarks/'s engine and media benchmarks,
/// timed on the same scenarios (Tools' LIVABench).
struct BenchBudgets: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "bench-budgets",
    abstract:
      "Benchmark: the engine's tick and the media codecs' and compositor's latency budgets.",
    discussion: """
      Times each of Benchmarks/'s budgeted benchmarks one call at a time with ContinuousClock, \
      after a warm-up, and prints its samples, median, p90 and p99 beside its budget: \
      Engine.Tick.ThreeQueuedChunks p99 <= 20 us per tick (one 60 Hz tick of an engine \
      speaking with three chunks queued); Media.WebPDecode.Sprite100x80 p90 <= 0.3 ms; \
      Media.Composite.Full1280x768 p90 <= 2 ms (a new base frame and one feathered mouth); \
      Media.Composite.OverlayOnly1280x768 p90 <= 0.2 ms (the mouth's region only). The \
      budgets are for release builds. A machine shared with other work can dip: a benchmark \
      over its budget is measured once more and both samples are printed; it fails only when \
      both miss. With --check, a failure makes the exit status 1 (scripts/bench-budgets, CI).
      """)

  @Flag(help: "Exit with an error when a budget is missed twice in a row.")
  var check = false

  @Option(
    help: ArgumentHelp(
      "Samples taken, as a multiple of each benchmark's default (20,000 engine ticks after 100"
        + " unkept; 2,000 calls of each media benchmark after 20).",
      valueName: "factor"))
  var samplesScale = 1.0

  func validate() throws {
    guard samplesScale > 0, samplesScale.isFinite else {
      throw ValidationError("--samples-scale must be positive")
    }
  }

  func run() throws {
    #if DEBUG
      progress("liva bench-budgets: a debug build; the budgets are for release builds")
    #endif
    let fixtures = try MediaBenchFixtures()
    var failed: [String] = []
    for budget in LatencyBudget.standard(fixtures: fixtures) {
      let samples = max(1, Int((Double(budget.samples) * samplesScale).rounded()))
      let first = try budget.measure(samples: samples)
      progress(line(budget, first))
      guard !budget.isMet(by: first) else { continue }
      progress("  over budget; measuring once more")
      let second = try budget.measure(samples: samples)
      progress(line(budget, second))
      if !budget.isMet(by: second) { failed.append(budget.name) }
    }
    if failed.isEmpty {
      progress("every budget met")
    } else {
      progress("over budget in both measurements: " + failed.joined(separator: ", "))
      if check { throw ExitCode.failure }
    }
  }

  /// `name: N samples, median …, p90 …, p99 …; budget p99 ≤ … ok|MISS`, in the budget's unit
  /// (milliseconds from 0.1 ms up, else microseconds).
  private func line(_ budget: LatencyBudget, _ samples: LatencySamples) -> String {
    let inMilliseconds = budget.limit >= .microseconds(100)
    func shown(_ duration: Duration, digits: Int) -> String {
      let (seconds, attoseconds) = duration.components
      let value = (Double(seconds) + Double(attoseconds) * 1e-18) * (inMilliseconds ? 1e3 : 1e6)
      return String(format: "%.\(digits)f", value) + (inMilliseconds ? " ms" : " µs")
    }
    let digits = inMilliseconds ? 3 : 2
    return
      "\(budget.name): \(samples.count) samples, median \(shown(samples.median, digits: digits)), "
      + "p90 \(shown(samples.p90, digits: digits)), p99 \(shown(samples.p99, digits: digits)); "
      + "budget \(budget.statistic.rawValue) ≤ \(shown(budget.limit, digits: 1)) "
      + (budget.isMet(by: samples) ? "ok" : "MISS")
  }
}
