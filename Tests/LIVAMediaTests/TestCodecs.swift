import Foundation
import Locking

@testable import LIVAMedia

/// A gate a test codec passes through: the test sees when a decode is inside the codec and
/// decides when it may finish. All waits are bounded.
final class Gate: Sendable {
  private struct State {
    var entered = 0
    var allowed = 0
    var open = false
  }
  // The counters live in `Locked`; the condition only wakes waiters when they change.
  private let condition = NSCondition()
  private let state = Locked(State())

  init(open: Bool = false) { state.withLock { $0.open = open } }

  /// Called by the codec: records entry, then waits until allowed through.
  func pass() {
    condition.lock()
    state.withLock { $0.entered += 1 }
    condition.broadcast()
    while true {
      let through = state.withLock { state -> Bool in
        if state.open { return true }
        if state.allowed > 0 {
          state.allowed -= 1
          return true
        }
        return false
      }
      if through { break }
      condition.wait()
    }
    condition.unlock()
  }

  /// Waits (at most `timeout` seconds) until `count` decodes have entered the codec.
  func waitEntered(_ count: Int = 1, timeout: TimeInterval = 10) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    condition.lock()
    defer { condition.unlock() }
    while state.withLock({ $0.entered }) < count {
      if !condition.wait(until: deadline) { return false }
    }
    return true
  }

  /// Lets `count` more decodes through.
  func allow(_ count: Int = 1) {
    condition.lock()
    state.withLock { $0.allowed += count }
    condition.broadcast()
    condition.unlock()
  }

  /// Holds every decode from now on (until ``allow(_:)`` or ``open()``).
  func close() {
    condition.lock()
    state.withLock { $0.open = false }
    condition.unlock()
  }

  /// Lets every decode through from now on.
  func open() {
    condition.lock()
    state.withLock { $0.open = true }
    condition.broadcast()
    condition.unlock()
  }
}

/// A codec that "decodes" a UTF-8 label to a 2×2 image, records the order of decodes,
/// passes an optional gate, and fails for labels starting with `bad`.
final class FakeCodec: ImageCodec {
  let gate: Gate
  private let log = Locked<[String]>([])

  init(gate: Gate = Gate(open: true)) { self.gate = gate }

  var decoded: [String] { log.withLock { $0 } }

  func decode(_ data: Data, limits: DecodeLimits) throws(LIVAMediaError) -> RGBAImage {
    let label = String(decoding: data, as: UTF8.self)
    log.withLock { $0.append(label) }
    gate.pass()
    if label.hasPrefix("bad") { throw LIVAMediaError(.corruptData, "fake corrupt \(label)") }
    return RGBAImage(width: 2, height: 2, fill: RGBA(UInt8(label.utf8.count), 1, 2, 255))
  }

  func encode(_ image: RGBAImage, as format: ImageFormat, quality: Float?) throws(LIVAMediaError)
    -> Data
  {
    throw LIVAMediaError(.unsupportedOperation, "fake")
  }
}

/// Collects events from any thread and lets a test wait (bounded) for a condition on them.
final class EventLog<Event: Sendable>: Sendable {
  private let condition = NSCondition()
  private let events = Locked<[Event]>([])

  func append(_ event: Event) {
    condition.lock()
    events.withLock { $0.append(event) }
    condition.broadcast()
    condition.unlock()
  }

  var all: [Event] { events.withLock { $0 } }

  /// Waits at most `timeout` seconds for `predicate` to hold over the events so far.
  func wait(timeout: TimeInterval = 10, until predicate: ([Event]) -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    condition.lock()
    defer { condition.unlock() }
    while !predicate(all) {
      if !condition.wait(until: deadline) { return predicate(all) }
    }
    return true
  }
}

/// Wraps a codec and counts the decodes and encodes that go through it.
final class CountingCodec: ImageCodec {
  let wrapped: any ImageCodec
  private let counts = Locked((decodes: 0, encodes: 0))

  init(_ wrapped: any ImageCodec = SystemImageCodec()) { self.wrapped = wrapped }

  var decodes: Int { counts.withLock { $0.decodes } }
  var encodes: Int { counts.withLock { $0.encodes } }

  func decode(_ data: Data, limits: DecodeLimits) throws(LIVAMediaError) -> RGBAImage {
    counts.withLock { $0.decodes += 1 }
    return try wrapped.decode(data, limits: limits)
  }

  func encode(_ image: RGBAImage, as format: ImageFormat, quality: Float?) throws(LIVAMediaError)
    -> Data
  {
    counts.withLock { $0.encodes += 1 }
    return try wrapped.encode(image, as: format, quality: quality)
  }
}
