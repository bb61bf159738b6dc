/// The one error type of the LIVA protocol domain: malformed animation names, events with
/// missing or mistyped fields, hostile values.
///
/// Follows the house rule for errors: an extensible ``Code``, a human message, and the
/// location of the offending input (the event name and the field path inside it).
public struct LIVAProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What went wrong, as an extensible set of static values (new codes are not a breaking change).
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// The stable identifier of the code, e.g. `"invalidAnimationName"`.
    public let rawValue: String

    /// Creates a code from its identifier.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// A string that does not follow the animation-name grammar.
    public static let invalidAnimationName = Code("invalidAnimationName")
    /// A required field is absent.
    public static let missingField = Code("missingField")
    /// A field has the wrong JSON type.
    public static let wrongType = Code("wrongType")
    /// A value is outside its allowed range (negative or absurd index, count or size).
    public static let outOfRange = Code("outOfRange")
    /// A payload exceeds a configured limit.
    public static let tooLarge = Code("tooLarge")
    /// A value is malformed (bad base64, bad data URL, bad timestamp...).
    public static let malformedValue = Code("malformedValue")
    /// A well-formed event the client did not ask for (a base-animation download it never
    /// requested): ignored, so a backend cannot fill the cache unasked.
    public static let unrequested = Code("unrequested")

    /// The identifier.
    public var description: String { rawValue }
  }

  /// The smallest unit of input a problem cost, from a field's value up to a whole event.
  public enum Scope: String, Hashable, Sendable, CaseIterable, Codable {
    /// One field's value was dropped (an informational field read tolerantly, or an optional
    /// one); the rest of its frame and event were kept.
    case field
    /// One frame object was rejected: it costs that frame's mouth only.
    case frame
    /// One entry of a list other than frames (a manifest animation) was dropped.
    case entry
    /// The whole event was dropped.
    case event
  }

  /// What went wrong.
  public var code: Code
  /// What the problem cost: the value, its frame, an entry, or the whole event. A thrown
  /// error is always an event rejection; smaller ones come back as the decoder's issues.
  public var scope: Scope = .event
  /// A human-readable explanation.
  public var message: String
  /// The event the offending input came from, when known (e.g. `"receive_audio"`).
  public var event: String?
  /// The path of the offending field inside the event, e.g. `"frames[3].overlay_id"`.
  public var fieldPath: String?

  /// Creates an error.
  public init(_ code: Code, _ message: String, event: String? = nil, fieldPath: String? = nil) {
    self.code = code
    self.message = message
    self.event = event
    self.fieldPath = fieldPath
  }

  /// `code: message (event at fieldPath)`.
  public var description: String {
    var text = "\(code): \(message)"
    if scope != .event { text += " [\(scope.rawValue) dropped]" }
    switch (event, fieldPath) {
    case (let event?, let path?): text += " (\(event) at \(path))"
    case (let event?, nil): text += " (\(event))"
    case (nil, let path?): text += " (at \(path))"
    case (nil, nil): break
    }
    return text
  }
}
