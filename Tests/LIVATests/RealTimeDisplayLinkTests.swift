import Foundation
import LIVAPlatform
import Locking
import Testing

@testable import LIVA

/// The headless display link's schedule as a pure function of time, and its thread: ticks in
/// order, on the schedule's grid, and a stopped generation that ticks no more.
@Suite("RealTimeDisplayLink")
struct RealTimeDisplayLinkTests {
  @Test(
    "the next tick: one period on, or the first grid point after a handler that ran long",
    arguments: [
      // (due, now, expected next)
      (0.0, 0.001, 1.0), (0.0, 0.999, 1.0), (0.0, 1.0, 1.0),  // on time
      (0.0, 1.2, 2.0), (0.0, 2.0, 3.0), (0.0, 2.5, 3.0), (4.0, 9.7, 10.0),  // overran: skipped
    ] as [(Double, Double, Double)])
  func schedule(due: Double, now: Double, expected: Double) {
    #expect(RealTimeDisplayLink.nextDue(after: due, now: now, period: 1) == expected)
  }

  @Test("a handler that runs long never brings a burst: ticks stay on the grid, one per point")
  func overrunsSkip() {
    // A simulated thread: handlers take 0.1 periods, every seventh 3.4 periods.
    var due = 0.0
    var ticks: [Double] = []
    var now = 0.0
    for k in 0..<200 {
      now = max(now, due)
      ticks.append(now)
      now += k % 7 == 6 ? 3.4 : 0.1
      due = RealTimeDisplayLink.nextDue(after: due, now: now, period: 1)
    }
    // Every tick on a grid point, strictly later than the one before and never two in one
    // period; an overrun of 3.4 periods costs exactly three points.
    #expect(ticks.allSatisfy { $0 == $0.rounded() })
    let gaps = zip(ticks.dropFirst(), ticks).map { $0 - $1 }
    #expect(gaps.allSatisfy { $0 >= 1 })
    #expect(gaps.filter { $0 != 1 }.allSatisfy { $0 == 4 })
    #expect(gaps.filter { $0 == 4 }.count == 200 / 7)
  }

  /// One generation's ticks: the link started, its times collected until the tenth, the link
  /// stopped from inside that tick.
  struct Ticks: Sendable {
    let times = Locked<[Double]>([])
    let done = DispatchSemaphore(value: 0)

    init(starting link: RealTimeDisplayLink) {
      let (times, done) = (self.times, self.done)
      link.start { time in
        let enough = times.withLock {
          $0.append(time)
          return $0.count == 10
        }
        if enough {
          link.stop()
          done.signal()
        }
      }
    }
  }

  @Test("the thread ticks in order, never before a period is up, and stop ends its generation")
  func thread() {
    let link = RealTimeDisplayLink(hz: 500)
    let first = Ticks(starting: link)
    #expect(first.done.wait(timeout: .now() + 10) == .success)
    // A second generation: while it runs, the first must not tick again.
    let second = Ticks(starting: link)
    #expect(second.done.wait(timeout: .now() + 10) == .success)
    let times = first.times.withLock { $0 }
    #expect(times.count == 10, "the stopped generation ticked on: \(times.count) ticks")
    for run in [times, second.times.withLock { $0 }] {
      #expect(zip(run.dropFirst(), run).allSatisfy { $0 > $1 })
      // Tick k is due k periods after the first, and never comes before it.
      for (k, time) in run.enumerated() {
        #expect(time - run[0] >= Double(k) / 500 - 1e-9, "tick \(k) early: \(run)")
      }
    }
  }
}
