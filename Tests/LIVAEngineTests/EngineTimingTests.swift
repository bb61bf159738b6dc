import LIVAEngine
import LIVAProtocol
import LIVATestSupport
import Testing

@Suite("Engine: rates and time")
struct EngineTimingTests {
  static let idleSequence: [(String, Int)] =
    (0..<6).map { ("idle_1_s_idle_1_e", $0) } + (0..<6).map { ("idle_1_e_idle_1_s", $0) }
    + [("idle_1_s_idle_1_e", 0)]

  @Test(
    "idle plays at 10 fps, ping-ponging, whatever the display rate", arguments: [60.0, 120.0, 30.0])
  func idleRate(hz: Double) {
    var driver = Driver()
    driver.tick(at: 0)
    driver.run(until: 1.2, hz: hz)
    let draws = driver.draws
    #expect(
      draws.map { "\($0.frame.animation)#\($0.frame.index)" }
        == Self.idleSequence.map { "\($0.0)#\($0.1)" })
    for (k, draw) in draws.enumerated() {
      #expect(abs(draw.time - Double(k) * 0.1) < 1e-6, "frame \(k) drawn at \(draw.time)")
    }
    #expect(driver.engine.metrics.pops == 0)
    #expect(driver.engine.metrics.framesDrawn == 13)
  }

  @Test("a configurable idle rate")
  func configurableIdleRate() {
    var configuration = EngineConfiguration()
    configuration.idleFPS = 30
    var driver = Driver(configuration: configuration)
    driver.tick(at: 0)
    driver.run(until: 0.2)
    #expect(driver.draws.count == 7)
  }

  @Test(
    "irregular ticks: the k-th frame comes on the first tick at or after k slots, less the phase of half the first delta"
  )
  func irregularTicks() {
    var generator = SplitMix64(seed: 7)
    var driver = Driver()
    var t = 0.0
    driver.tick(at: t)
    while t < 3 {
      t += Double(generator.next(in: 1...45)) / 1000
      driver.tick(at: t)
    }
    let draws = driver.draws
    let times = driver.log.map(\.time)
    // Frame slots sit half a tick before the ticks, so tick jitter cannot move a frame.
    let phase = min(times[1] - times[0], 0.1) / 2
    for (k, draw) in draws.enumerated() where k > 0 {
      let due = Double(k) * 0.1 - phase
      let firstTickAfter = times.first { $0 + 1e-9 >= due }
      #expect(draw.time == firstTickAfter, "frame \(k) due at \(due) drawn at \(draw.time)")
    }
    #expect(driver.engine.metrics.skippedBaseFrames == 0)
  }

  @Test("the first tick has delta 0 and draws frame 0 at once")
  func firstTick() {
    var driver = Driver()
    let first = driver.tick(at: 1000)
    #expect(first.plan.frame?.animation == .idleForward)
    #expect(first.plan.frame?.index == 0)
    #expect(driver.tick(at: 1000.05).plan == .hold(.notDue))
    #expect(driver.tick(at: 1000.1).plan.frame?.index == 1)
  }

  @Test("a negative delta is clamped: time going backwards neither advances nor stalls")
  func negativeDelta() {
    var driver = Driver()
    driver.tick(at: 10)
    driver.tick(at: 10.1)
    #expect(driver.tick(at: 5).plan == .hold(.notDue))
    #expect(driver.tick(at: 5.02).plan == .hold(.notDue))
    // The phase (half the first delta, 0.05 s) carries over: one slot after frame 1, less it.
    #expect(driver.tick(at: 5.05).plan.frame?.index == 2)
  }

  @Test("catch-up after a stall is capped and counted")
  func stallCatchUp() {
    var driver = Driver()
    driver.tick(at: 0)
    let result = driver.tick(at: 2.0)
    // 20 slots elapsed; at most 4 advance, 3 of them passed over undrawn.
    #expect(result.plan.frame?.index == 4)
    #expect(driver.engine.metrics.catchUps == 1)
    #expect(driver.engine.metrics.skippedBaseFrames == 3)
    #expect(driver.tick(at: 2.05).plan == .hold(.notDue))
    #expect(driver.tick(at: 2.1).plan.frame?.index == 5)
  }

  @Test("resume after a pause does not jump")
  func pauseResume() {
    var driver = Driver()
    driver.tick(at: 0)
    driver.run(until: 0.55)
    let before = driver.engine.lastDrawnFrame
    #expect(driver.engine.pause().isEmpty)
    driver.run(until: 9)
    #expect(driver.log.last?.result.plan == .hold(.paused))
    #expect(driver.engine.lastDrawnFrame == before)
    _ = driver.engine.resume()
    #expect(driver.tick(at: 60).plan == .hold(.notDue))
    let next = driver.tick(at: 60.05).plan.frame
    #expect(next == DrawnFrame(animation: .idleBack, index: 0, overlays: [], mode: .idle))
    #expect(before?.animation == .idleForward && before?.index == 5)
    #expect(driver.engine.metrics.catchUps == 0)
    #expect(driver.engine.metrics.skippedBaseFrames == 0)
  }

  @Test("nothing to draw until an idle animation is available")
  func waitsForIdle() {
    var driver = Driver(counts: [:])
    #expect(driver.tick(at: 0).plan == .hold(.noBaseAnimation))
    #expect(driver.engine.mode == .waiting)
    driver.engine.setAvailableAnimations(animations())
    #expect(driver.tick(at: 0.01).plan.frame?.animation == .idleForward)
    #expect(driver.engine.mode == .idle)
  }
}
