import Foundation
import LIVA
import LIVAEngine
import LIVAPlatform
import LIVAProtocol
import LIVATestSupport
import Testing

@testable import LIVAMedia

/// The player's change feed: what tests and the tool wait on instead of polling.
@Suite("Player change feed", .timeLimit(.minutes(1)))
struct PlayerChangeFeedTests {
  @Test("the window of base frames coming into memory on a worker wakes a waiter on isPreloadIdle")
  func preloadIdleWakes() async throws {
    let avatar = try FixtureAvatar(preload: false)
    let scheduler = PlayerTests.ManualDecodeScheduler()
    let (player, _, _, _) = try makePlayer(avatar: avatar, scheduler: scheduler)
    #expect(!player.isPreloadIdle)
    let before = player.changes.generation
    // The waiter checks (not idle) and sleeps before the decodes run: only their signal can
    // wake it (an hour's timeout; a missing signal fails the suite's time limit).
    let waiter = Task {
      await until(player.changes, timeout: .seconds(3600)) { player.isPreloadIdle }
    }
    while player.changes.waiterCount < 1 { await Task.yield() }
    scheduler.runAll()
    #expect(player.isPreloadIdle)
    #expect(player.changes.generation > before)
    #expect(await waiter.value)
  }

  @Test("a decode worker finishing wakes a waiter on isIngestIdle; each input signals")
  func ingestIdleWakes() async throws {
    let scheduler = PlayerTests.ManualDecodeScheduler()
    let (player, _, _, _) = try makePlayer(scheduler: scheduler)
    scheduler.runAll()
    let frames = try wireFrames(count: 4, tag: "feed")
    var seen = player.changes.generation
    player.handle(.frameImagesBatch(FrameImagesBatch(frames: frames, chunkIndex: 0, batchIndex: 0)))
    #expect(player.changes.generation > seen)
    #expect(!player.isIngestIdle)
    seen = player.changes.generation
    let waiter = Task {
      await until(player.changes, timeout: .seconds(3600)) { player.isIngestIdle }
    }
    while player.changes.waiterCount < 1 { await Task.yield() }  // asleep: only a signal wakes it
    scheduler.runAll()
    #expect(player.changes.generation > seen)
    #expect(await waiter.value)
    #expect(player.overlays.statistics.count > 0)
  }
}
