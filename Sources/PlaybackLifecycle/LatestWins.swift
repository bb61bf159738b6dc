/// A mailbox between a thread that produces values faster than another can take them (a
/// display link's frames, its ticks) and the thread that takes them (the main thread, a render
/// queue): only the newest value waits, and at most one delivery is scheduled at a time, so a
/// slow taker never builds a backlog. A pure value: its owner keeps it under a lock.
///
/// ```swift
/// if lock.withLock({ mailbox.post(frame) }) {
///   DispatchQueue.main.async { if let frame = lock.withLock({ mailbox.take() }) { show(frame) } }
/// }
/// ```
public struct LatestWins<Value> {
  private var waiting: Value?
  private var scheduled = false
  /// Values replaced before they were taken (frames never shown, ticks merged).
  public private(set) var replaced = 0

  /// An empty mailbox.
  public init() {}

  /// Leaves `value` for the taker, in place of any value still waiting. Returns whether the
  /// owner must schedule a delivery: true only when none is scheduled already.
  public mutating func post(_ value: Value) -> Bool {
    if waiting != nil { replaced += 1 }
    waiting = value
    guard !scheduled else { return false }
    scheduled = true
    return true
  }

  /// Takes the newest value (nil when none waits); the next ``post(_:)`` schedules a delivery
  /// again.
  public mutating func take() -> Value? {
    scheduled = false
    defer { waiting = nil }
    return waiting
  }
}

extension LatestWins: Sendable where Value: Sendable {}
