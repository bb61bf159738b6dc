import Foundation
import LIVATestSupport
import Testing

/// `liva bench-session --check`'s verdict, from the executable's exit status: a short session
/// of the small sample avatar, with the budgets that can be set put out of reach or below what
/// any run measures. Serialized: the runs share the session's client cache, which the first
/// one fills.
@Suite(
  "liva bench-session --check: the exit status",
  .serialized,
  .enabled(if: livaBinary != nil || requireAllTools, "the liva executable is not built"))
struct BenchSessionCheckTests {
  /// A 2 s session (no message starts in it) of the suite's sample avatar, images only.
  static func bench(_ arguments: [String]) async throws -> LivaRun {
    _ = try await Cache.preparedPack()
    return try await runLiva(
      ["bench-session", "--size", "\(Cache.width)x\(Cache.height)", "--duration", "2"]
        + ["--images-only"] + arguments)
  }

  @Test("every budget held: exit 0")
  func held() async throws {
    let run = try await Self.bench(
      ["--check", "--peak-budget", "100000", "--first-frame-budget", "100000"])
    #expect(!run.signalled)
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("budget 100000"))
  }

  @Test(
    "a budget missed: a failure naming it",
    arguments: [
      (["--peak-budget", "1", "--first-frame-budget", "100000"], "peak"),
      (["--peak-budget", "100000", "--first-frame-budget", "0"], "time to first frame"),
    ])
  func missed(budgets: [String], named: String) async throws {
    let run = try await Self.bench(["--check"] + budgets)
    #expect(!run.signalled)
    #expect(run.status != 0)
    #expect(run.stderr.contains("budgets missed: " + named), "\(run.stderr)")
  }

  @Test("without --check a missed budget is reported, and the run succeeds")
  func unchecked() async throws {
    let run = try await Self.bench(["--peak-budget", "1"])
    #expect(!run.signalled)
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("budget 1)"))
  }
}
