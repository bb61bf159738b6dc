import Foundation
import LIVA
import LIVATestSupport
import Testing

/// Generated backend sessions (see `GeneratedSession`): every session keeps the invariants,
/// through the pure `PlayerCore` (thousands) and through the whole `LIVAPlayer` with its
/// stores, ingest and compositor (fewer). The seeds start at a fixed base (1,000,000) so a test
/// run is deterministic; `LIVA_SESSION_BASE=random` (or a number) explores others (the base is
/// printed), `LIVA_SESSION_SEED` replays one, `LIVA_SESSION_COUNT` sets how many
/// (`scripts/sessions` runs a million through the core, from a random base). A failing seed is
/// shrunk to its smallest failing session and printed; it then belongs in ``regressions``.
@Suite("Generated sessions: every legal ordering, retry and fault plays")
struct GeneratedSessionTests {
  /// Seeds that broke an invariant once (with this generator), each with what it found; they
  /// run on every test run, through both runners. The scenarios they shrank to are also named
  /// tests in `SpeechReceiverTests` and `EngineSpeechTests`.
  static let regressions: [UInt64] = [
    1025,  // a chunk-0 re-send after audio_end (no masters) opened a second message
    1029,  // the invariant itself: a stop after the audio's natural end is not a cut
    5022,  // a re-sent chunk_images_ready(0) after audio_end marked the next message's chunk 0
    5285,  // chunk 1 before chunk 0 (no masters) joined the open message and was lost
    5384,  // a chunk starting mid-animation after the body moved on: a cut back (now a walk back)
    5725,  // a late audio_end of an interrupted message (no masters) ended its successor
    5774,  // a late re-send of an interrupted message's chunk 0 reopened it
    5884,  // chunk 1 before chunk 0 (masters) joined the previous message
    5887,  // as 5774, the successor's re-send then opened a third message
    102145,  // a walk back through idle, interrupted at its frame 0, went on from the wrong pose
    115615,  // a parked chunk of a message (no masters) was taken by the next message
    115802,  // a return planned from a backwards walk's end pose instead of its start pose
    // chunk_images_ready(0) kept for a next message whose mouths were still coming
    106_513_547_852,
    // an interrupted message's late chunk_images_ready(1), credited ahead to the next message's
    // chunk 1 while its mouths were still coming
    569_471_270_926,
    // events of a dropped connection read after the reconnect's status (two streams): a re-send
    // of chunk 0 among them opened a second message; the chunk after it, parked, was taken by
    // the next connection's message; without the fix, the message waited for its lost mouths
    1_002_770,
    1_003_817,
    783_403_770_355,
    783_403_770_485,
    1_042_452_869_725,
    1_042_452_871_730,
    // without masters, an interrupted message's late audio_end ended its successor; the
    // successor's chunk 2, parked, was taken by the next message's chunk 0 0.16 s later
    651_205_728_247,
    // the whole player only: a frame after the chunk's last mouth, not in the window of base
    // frames, missed its slot; the next slot drew the frame after it (a pop)
    478_924_071_602,
  ]

  /// An avatar of each test's own: the store keeps in memory the windows of the players that
  /// use it, so a store shared by tests running in parallel made one test's windows evict
  /// another's frames (a session of the late-decode run lost a mouth 1 run in 3 of the whole
  /// suite, never alone).
  static func avatar() -> FixtureAvatar { try! FixtureAvatar() }

  static func seeds(default count: Int) -> [UInt64] {
    let environment = ProcessInfo.processInfo.environment
    if let one = environment["LIVA_SESSION_SEED"].flatMap(UInt64.init) { return [one] }
    let count = environment["LIVA_SESSION_COUNT"].flatMap(Int.init) ?? count
    // Fresh seeds every run, from the run's seed (printed; LIVA_TEST_SEED replays the run), so
    // every run tries new sessions beside the kept regressions. LIVA_SESSION_BASE sets the
    // first seed (or `random`), as `scripts/sessions` does for long runs.
    let base: UInt64 =
      environment["LIVA_SESSION_BASE"] == "random"
      ? UInt64.random(in: 0..<1 << 40)
      : environment["LIVA_SESSION_BASE"].flatMap(UInt64.init) ?? RunSeed.seeds(1)[0]
    print("generated sessions: seeds \(base)..<\(base + UInt64(count)) (LIVA_SESSION_BASE=\(base))")
    return (0..<UInt64(count)).map { base + $0 }
  }

  /// Runs the seeds; the first three failures are shrunk and recorded.
  static func check(_ seeds: [UInt64], _ run: (GeneratedSession) -> [String]) -> Int {
    var failed = 0
    for seed in seeds {
      let session = GeneratedSession.generate(seed: seed)
      let failures = run(session)
      guard !failures.isEmpty else { continue }
      failed += 1
      guard failed <= 3 else { continue }
      let (small, smallFailures) = session.shrunk(using: run)
      Issue.record(
        Comment(
          rawValue:
            "seed \(seed) broke: \(failures.joined(separator: "; "))\nshrunk to:\n\(small)\n"
            + "which breaks: \(smallFailures.joined(separator: "; "))"))
    }
    return failed
  }

  @Test("the regression seeds, through the core and the whole player", arguments: regressions)
  func regression(seed: UInt64) {
    #expect(Self.check([seed]) { $0.runCore() } == 0)
    let avatar = Self.avatar()
    #expect(Self.check([seed]) { $0.run(avatar: avatar) } == 0)
  }

  @Test("generated sessions through the player core keep every invariant")
  func generatedCore() {
    let seeds = Self.seeds(default: 2_000)
    let failed = Self.check(seeds) { $0.runCore() }
    #expect(failed == 0, "\(failed) of \(seeds.count) sessions broke an invariant")
  }

  @Test("generated sessions through the whole player keep every invariant")
  func generatedPlayer() {
    let seeds = Self.seeds(default: 150)
    let avatar = Self.avatar()
    let failed = Self.check(seeds) { $0.run(avatar: avatar) }
    #expect(failed == 0, "\(failed) of \(seeds.count) sessions broke an invariant")
  }

  /// Seeds that popped when every decode landed 2 display ticks late: a frame outside speech
  /// whose base frame was not in memory at its slot was skipped (now shown late).
  static let lateDecodeRegressions: [UInt64] = [1_000_025, 1_000_215]

  @Test(
    "the late-decode regression seeds, 2 display ticks late, through the whole player",
    arguments: lateDecodeRegressions)
  func lateDecodeRegression(seed: UInt64) {
    let avatar = Self.avatar()
    #expect(Self.check([seed]) { $0.run(avatar: avatar, decodesLate: 2) } == 0)
  }

  @Test("generated sessions keep every invariant when each decode lands a display tick late")
  func generatedPlayerDecodingLate() {
    let seeds = Self.seeds(default: 150)
    let avatar = Self.avatar()
    let failed = Self.check(seeds) { $0.run(avatar: avatar, decodesLate: 1) }
    #expect(failed == 0, "\(failed) of \(seeds.count) sessions broke an invariant")
  }
}
