/// The one error type of the reference backend's domain: unreadable or inconsistent avatar
/// packs, bad utterances, failed speech synthesis, file-system failures.
///
/// Follows the house rule for errors: an extensible ``Code``, a human message, and the
/// location of the offending input (a file path, a manifest field, a command).
public struct LIVAServerError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What went wrong, as an extensible set of static values (new codes are not a breaking change).
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// The stable identifier of the code, e.g. `"invalidPack"`.
    public let rawValue: String

    /// Creates a code from its identifier.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// An avatar pack's manifest is missing, malformed or inconsistent with its files.
    public static let invalidPack = Code("invalidPack")
    /// An utterance (timing JSON or audio chunks) is missing, malformed or inconsistent.
    public static let invalidUtterance = Code("invalidUtterance")
    /// A file-system operation failed.
    public static let ioFailure = Code("ioFailure")
    /// An external tool (espeak-ng, lame) or library is not available.
    public static let toolUnavailable = Code("toolUnavailable")
    /// An external tool ran but failed, or produced unusable output.
    public static let synthesisFailed = Code("synthesisFailed")
    /// An image could not be encoded or decoded.
    public static let imageFailure = Code("imageFailure")
    /// An argument is outside what the operation accepts (e.g. a frame size of zero).
    public static let invalidArgument = Code("invalidArgument")
    /// The plan needs an animation the pack (or the client) does not have.
    public static let missingAnimation = Code("missingAnimation")

    /// The identifier.
    public var description: String { rawValue }
  }

  /// What went wrong.
  public var code: Code
  /// A human-readable explanation.
  public var message: String
  /// Where the offending input is, when known: a file path, optionally followed by a field
  /// path (`manifest.json: animations.idle_1_s_idle_1_e.frames`), or a command.
  public var location: String?

  /// Creates an error.
  public init(_ code: Code, _ message: String, location: String? = nil) {
    self.code = code
    self.message = message
    self.location = location
  }

  /// `code: message (location)`.
  public var description: String {
    guard let location else { return "\(code): \(message)" }
    return "\(code): \(message) (\(location))"
  }
}
