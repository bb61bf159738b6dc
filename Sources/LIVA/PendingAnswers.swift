/// The texts sent with ``LIVAClient/sendMessage(_:)`` that no speech answered yet, oldest
/// first: a pure value the client owns (time is an argument).
///
/// The protocol gives a message no id the answer would carry: a new message's speech answers
/// the oldest text waiting. A text waits at most ``timeout`` seconds and at most ``limit``
/// wait; one given up is returned to be reported, so a lost answer is neither silent nor
/// paired with the wrong text for ever.
struct PendingAnswers {
  /// The most texts waiting at once; a newer one pushes the oldest out.
  static let limit = 16
  /// Seconds a text waits for its answer.
  let timeout: Double
  /// The texts waiting, oldest first, with when they were sent (nil: before the first tick;
  /// stamped at the next).
  private(set) var waiting: [(text: String, sentAt: Double?)] = []

  init(timeout: Double) {
    self.timeout = timeout
  }

  /// `text` was sent at `now` (nil when no tick came yet). Returns the texts given up to
  /// make room (beyond ``limit``).
  mutating func sent(_ text: String, at now: Double?) -> [String] {
    waiting.append((text, now))
    let over = max(0, waiting.count - Self.limit)
    defer { waiting.removeFirst(over) }
    return waiting.prefix(over).map(\.text)
  }

  /// The send of `text` failed: it waits no more (its newest copy).
  mutating func withdraw(_ text: String) {
    if let index = waiting.lastIndex(where: { $0.text == text }) { waiting.remove(at: index) }
  }

  /// A new message's speech came: the text it answers (the oldest waiting), if any.
  mutating func answer() -> String? {
    waiting.isEmpty ? nil : waiting.removeFirst().text
  }

  /// The texts that waited longer than ``timeout`` at `now`, oldest first; they wait no more.
  mutating func expire(now: Double) -> [String] {
    var expired: [String] = []
    waiting = waiting.compactMap { entry in
      guard let sentAt = entry.sentAt else { return (entry.text, now) }
      if now - sentAt >= timeout {
        expired.append(entry.text)
        return nil
      }
      return entry
    }
    return expired
  }

  /// The connection was given up: every text waits no more. Returns them, oldest first.
  mutating func clear() -> [String] {
    defer { waiting = [] }
    return waiting.map(\.text)
  }
}
