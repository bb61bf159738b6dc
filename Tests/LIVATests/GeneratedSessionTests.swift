import Foundation
import LIVA
import LIVATestSupport
import Testing

/// Generated backend sessions through the player on a virtual clock (see `GeneratedSession`):
/// every session keeps the invariants. The seeds vary per run (the base is printed);
/// `LIVA_SESSION_SEED` replays one, `LIVA_SESSION_COUNT` sets how many (`scripts/sessions`
/// runs a million). A failing seed is shrunk to its smallest failing session, printed, and
/// belongs in ``regressions``.
@Suite("Generated sessions: every legal ordering, retry and fault plays")
struct GeneratedSessionTests {
  /// Seeds that broke an invariant once, each with what it found; they run on every test run.
  static let regressions: [UInt64] = []

  static let avatar = try! FixtureAvatar()

  static func runAndReport(_ seed: UInt64) -> [String] {
    let session = GeneratedSession.generate(seed: seed)
    let failures = session.run(avatar: avatar)
    guard !failures.isEmpty else { return [] }
    let (small, smallFailures) = session.shrunk(avatar: avatar)
    return [
      "seed \(seed) broke: \(failures.joined(separator: "; "))\nshrunk to:\n\(small)\n"
        + "which breaks: \(smallFailures.joined(separator: "; "))"
    ]
  }

  @Test("the regression seeds", arguments: regressions)
  func regression(seed: UInt64) {
    for failure in Self.runAndReport(seed) { Issue.record(Comment(rawValue: failure)) }
  }

  @Test("generated sessions keep every invariant")
  func generated() {
    let environment = ProcessInfo.processInfo.environment
    let count = environment["LIVA_SESSION_COUNT"].flatMap(Int.init) ?? 2_000
    let seeds: [UInt64]
    if let one = environment["LIVA_SESSION_SEED"].flatMap(UInt64.init) {
      seeds = [one]
    } else {
      let base =
        environment["LIVA_SESSION_BASE"].flatMap(UInt64.init) ?? UInt64.random(in: 0..<1 << 40)
      print(
        "generated sessions: seeds \(base)..<\(base + UInt64(count)) (LIVA_SESSION_BASE=\(base))")
      seeds = (0..<UInt64(count)).map { base + $0 }
    }
    var failed = 0
    for seed in seeds {
      let session = GeneratedSession.generate(seed: seed)
      guard !session.run(avatar: Self.avatar).isEmpty else { continue }
      failed += 1
      if failed <= 3 {
        for failure in Self.runAndReport(seed) { Issue.record(Comment(rawValue: failure)) }
      }
    }
    #expect(failed == 0, "\(failed) of \(seeds.count) sessions broke an invariant")
  }
}
