/// A pose of the avatar: a state and its variant number, e.g. `idle_1` or `talking_2`.
public struct Pose: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The state, e.g. `"idle"`, `"talking"`, `"hi"`. Lowercase ASCII letters and digits,
  /// starting with a letter; segments may be joined by `_` (e.g. `"head_nod"`).
  public let state: String
  /// The variant number, e.g. `1` in `idle_1`.
  public let number: Int

  /// Creates a pose. No validation: use ``AnimationName/init(parsing:)`` for untrusted input.
  public init(state: String, number: Int) {
    self.state = state
    self.number = number
  }

  /// The default idle pose, `idle_1`.
  public static let idle = Pose(state: "idle", number: 1)

  /// Whether this is an idle pose (its state is `idle`).
  public var isIdle: Bool { state == "idle" }
  /// Whether this is a talking pose (its state is `talking`).
  public var isTalking: Bool { state == "talking" }

  /// `state_number`, e.g. `idle_1`.
  public var description: String { "\(state)_\(number)" }

  /// Orders by state, then number.
  public static func < (lhs: Pose, rhs: Pose) -> Bool {
    (lhs.state, lhs.number) < (rhs.state, rhs.number)
  }
}

/// One of the two key poses of a ``Pose``: its start (`s`) or its end (`e`).
///
/// Key poses are the nodes of the ``AnimationGraph``: an animation starts at one key pose and
/// ends at another, and two animations join without a visible jump only at a shared key pose.
public struct KeyPose: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// Which key of a pose.
  public enum Key: String, Hashable, Sendable, CaseIterable {
    /// The start key pose, written `s`.
    case start = "s"
    /// The end key pose, written `e`.
    case end = "e"
  }

  /// The pose.
  public let pose: Pose
  /// Start or end.
  public let key: Key

  /// Creates a key pose.
  public init(_ pose: Pose, _ key: Key) {
    self.pose = pose
    self.key = key
  }

  /// `idle_1_s`: where the idle loop starts.
  public static let idleStart = KeyPose(.idle, .start)
  /// `idle_1_e`: where the idle loop ends and transitions into talking begin.
  public static let idleEnd = KeyPose(.idle, .end)

  /// `state_number_key`, e.g. `idle_1_e`.
  public var description: String { "\(pose)_\(key.rawValue)" }

  /// Orders by pose, then start before end.
  public static func < (lhs: KeyPose, rhs: KeyPose) -> Bool {
    if lhs.pose != rhs.pose { return lhs.pose < rhs.pose }
    return lhs.key == .start && rhs.key == .end
  }
}

/// A validated base-animation name, `{pose}_{s|e}_{pose}_{s|e}`, e.g. `idle_1_e_talking_1_s`.
///
/// A base animation runs from one key pose to another. Names are parsed strictly: anything
/// outside the grammar (path separators, dots, uppercase, empty segments, numbers with more
/// than four digits, names longer than ``maximumLength``) is a
/// ``LIVAProtocolError/Code-swift.struct/invalidAnimationName`` error. A valid name is
/// therefore also safe as a single path component.
public struct AnimationName: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The longest accepted name, in bytes.
  public static let maximumLength = 128

  /// The name as it appears on the wire.
  public let rawValue: String
  /// The key pose the animation starts at.
  public let from: KeyPose
  /// The key pose the animation ends at.
  public let to: KeyPose

  /// Parses a name, throwing ``LIVAProtocolError`` with code `invalidAnimationName` when it
  /// does not follow the grammar.
  public init(parsing text: String) throws(LIVAProtocolError) {
    guard let (from, to) = Self.parse(text) else {
      let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
      throw LIVAProtocolError(
        .invalidAnimationName,
        "\"\(shown)\" is not an animation name of the form {pose}_{s|e}_{pose}_{s|e}")
    }
    self.rawValue = text
    self.from = from
    self.to = to
  }

  /// Builds the name of the animation from one key pose to another.
  public init(from: KeyPose, to: KeyPose) {
    self.from = from
    self.to = to
    self.rawValue = "\(from)_\(to)"
  }

  /// `idle_1_s_idle_1_e`: the idle loop, first half.
  public static let idleForward = AnimationName(from: .idleStart, to: .idleEnd)
  /// `idle_1_e_idle_1_s`: the idle loop, second half (the ping-pong partner).
  public static let idleBack = AnimationName(from: .idleEnd, to: .idleStart)

  /// Whether the animation stays within one pose (e.g. `talking_1_s_talking_1_e`), as
  /// opposed to a transition between poses (e.g. `idle_1_e_talking_1_s`).
  public var isLoop: Bool { from.pose == to.pose }

  /// The raw name.
  public var description: String { rawValue }

  /// Orders by raw name.
  public static func < (lhs: AnimationName, rhs: AnimationName) -> Bool {
    lhs.rawValue < rhs.rawValue
  }

  /// Splits `text` into its two key poses, or returns nil when it is not in the grammar.
  ///
  /// The grammar, over `_`-separated segments: `state+ number key state+ number key`, where a
  /// state segment is `[a-z][a-z0-9]*`, a number is 1–4 ASCII digits and a key is `s` or `e`.
  /// Because a key must follow a number, the split point is unambiguous.
  private static func parse(_ text: String) -> (KeyPose, KeyPose)? {
    guard !text.isEmpty, text.utf8.count <= maximumLength else { return nil }
    let segments = text.utf8.split(separator: UInt8(ascii: "_"), omittingEmptySubsequences: false)
    // Find the positions of the two keys: a segment "s" or "e" right after a number.
    var keyPositions: [Int] = []
    for index in segments.indices where index >= 2 {
      let segment = segments[index]
      guard segment.count == 1,
        segment.first == UInt8(ascii: "s") || segment.first == UInt8(ascii: "e")
      else { continue }
      if isNumber(segments[index - 1]) { keyPositions.append(index) }
    }
    guard keyPositions.count == 2, keyPositions[1] == segments.count - 1 else { return nil }
    guard let from = keyPose(segments[0...keyPositions[0]]),
      let to = keyPose(segments[(keyPositions[0] + 1)...])
    else { return nil }
    return (from, to)
  }

  private static func keyPose(_ segments: ArraySlice<Substring.UTF8View.SubSequence>) -> KeyPose? {
    // state segments..., number, key
    guard segments.count >= 3 else { return nil }
    let stateSegments = segments.dropLast(2)
    for segment in stateSegments where !isStateSegment(segment) { return nil }
    let numberSegment = segments[segments.endIndex - 2]
    guard isNumber(numberSegment), let number = Int(String(decoding: numberSegment, as: UTF8.self))
    else { return nil }
    let key: KeyPose.Key = segments.last?.first == UInt8(ascii: "s") ? .start : .end
    let state = stateSegments.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "_")
    return KeyPose(Pose(state: state, number: number), key)
  }

  private static func isNumber(_ segment: Substring.UTF8View.SubSequence) -> Bool {
    (1...4).contains(segment.count) && segment.allSatisfy { (0x30...0x39).contains($0) }
  }

  private static func isStateSegment(_ segment: Substring.UTF8View.SubSequence) -> Bool {
    guard let first = segment.first, (0x61...0x7A).contains(first) else { return false }
    return segment.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) }
  }
}

extension AnimationName: Codable {
  /// Decodes and validates a name from a JSON string.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    let text = try container.decode(String.self)
    try self.init(parsing: text)
  }

  /// Encodes the raw name as a JSON string.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(rawValue)
  }
}

/// One base frame: an animation and a frame index in it. The engine plans with it, the player
/// asks the base-frame store for it, the compositor knows its base by it.
public struct BaseFrameRef: Hashable, Sendable, CustomStringConvertible {
  /// The base animation.
  public var animation: AnimationName
  /// The frame's index in it.
  public var index: Int

  /// Creates a reference.
  public init(animation: AnimationName, index: Int) {
    self.animation = animation
    self.index = index
  }

  /// `animation#index`.
  public var description: String { "\(animation)#\(index)" }
}
