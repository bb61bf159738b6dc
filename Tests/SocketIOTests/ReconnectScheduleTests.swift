import Testing

@testable import SocketIO

/// The reconnection decisions without a socket or a clock: what stops, how failures count, the
/// waits, and the failure limit.
@Suite("Reconnect schedule: what follows a connection that ended")
struct ReconnectScheduleTests {
  /// No jitter (random 0.5 is the middle), waits 1, 2, 4… s up to 30 s.
  let policy = ReconnectionPolicy(failureLimit: 3)

  @Test func whatEndsTheSessionOnPurposeStopsWithoutAFailure() {
    for reason: SocketIODisconnectReason in [
      .clientDisconnect, .serverDisconnect, .connectRefused("no"),
    ] {
      var schedule = ReconnectSchedule(policy: policy)
      #expect(
        schedule.connectionEnded(
          reason: reason, wasConnected: true, stopRequested: false, random: 0.5)
          == .stop(failed: nil))
    }
    var stopping = ReconnectSchedule(policy: policy)
    #expect(
      stopping.connectionEnded(
        reason: .pingTimeout, wasConnected: true, stopRequested: true, random: 0.5)
        == .stop(failed: nil))
    var disabled = ReconnectSchedule(policy: ReconnectionPolicy(isEnabled: false))
    #expect(
      disabled.connectionEnded(
        reason: .transportClose, wasConnected: true, stopRequested: false, random: 0.5)
        == .stop(failed: nil))
  }

  @Test func failuresBackOffAndTheLimitStopsWithAnError() {
    var schedule = ReconnectSchedule(policy: policy)
    let steps = (0..<3).map { _ in
      schedule.connectionEnded(
        reason: .transportError("refused"), wasConnected: false, stopRequested: false,
        random: 0.5)
    }
    #expect(steps[0] == .retry(attempt: 1, delay: .seconds(1), failed: nil))
    #expect(steps[1] == .retry(attempt: 2, delay: .seconds(2), failed: nil))
    guard case .stop(let failed?) = steps[2] else {
      Issue.record("the third failure should stop: \(steps[2])")
      return
    }
    #expect(failed.code == .reconnectFailed)
  }

  @Test func pastTheLimitItGoesOnWhenToldReportingEveryMultiple() {
    var schedule = ReconnectSchedule(
      policy: ReconnectionPolicy(
        maximumDelay: .seconds(4), failureLimit: 2, continuesAfterFailureLimit: true))
    var reported: [Int] = []
    var delays: [Duration] = []
    for _ in 0..<5 {
      let step = schedule.connectionEnded(
        reason: .pingTimeout, wasConnected: false, stopRequested: false, random: 0.5)
      guard case .retry(let attempt, let delay, let failed) = step else {
        Issue.record("should go on: \(step)")
        return
      }
      if failed != nil { reported.append(attempt) }
      delays.append(delay)
    }
    #expect(reported == [2, 4])
    #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4)])
  }

  @Test func aConnectionThatConnectedStartsTheCountAgain() {
    var schedule = ReconnectSchedule(policy: policy)
    for _ in 0..<2 {
      _ = schedule.connectionEnded(
        reason: .transportClose, wasConnected: false, stopRequested: false, random: 0.5)
    }
    #expect(
      schedule.connectionEnded(
        reason: .transportClose, wasConnected: true, stopRequested: false, random: 0.5)
        == .retry(attempt: 1, delay: .seconds(1), failed: nil))
    #expect(schedule.failures == 1)
  }

  @Test func theJitterComesFromTheRandomNumberGiven() {
    var low = ReconnectSchedule(policy: policy)
    var high = ReconnectSchedule(policy: policy)
    #expect(
      low.connectionEnded(
        reason: .pingTimeout, wasConnected: false, stopRequested: false, random: 0)
        == .retry(attempt: 1, delay: .milliseconds(800), failed: nil))
    #expect(
      high.connectionEnded(
        reason: .pingTimeout, wasConnected: false, stopRequested: false, random: 0.9999999)
        != .retry(attempt: 1, delay: .seconds(1), failed: nil))
  }
}
