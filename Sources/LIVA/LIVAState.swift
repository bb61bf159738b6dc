import Foundation

/// Where a ``LIVAClient``'s connection is in its life cycle. Truthful: `ready` and `speaking`
/// only while connected. Speech received before a drop plays on while the state reads
/// `connecting`, `error` or `idle` (see ``LIVAEvent`` for what plays).
public enum LIVAState: Sendable, Hashable {
  /// Created or disconnected by the app.
  case idle
  /// Connecting (or reconnecting after a transient drop) to the backend.
  case connecting
  /// Connected; the idle animation is not available yet, and the avatar is not speaking.
  case connected
  /// Connected, and the idle animation is available: the avatar is on screen and can speak.
  case ready
  /// Connected, and the avatar is speaking.
  case speaking
  /// The connection ended for good: the server refused or closed it, or reconnection gave up
  /// after the policy's failure limit. ``LIVAClient/connect()`` starts afresh. (Failures that
  /// leave the connection up, such as a download, arrive as ``LIVAEvent/error(_:)`` only.)
  case error(LIVAClientError)
}

/// The error of the client domain: connection, messages, downloads.
public struct LIVAClientError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What went wrong, as an extensible set of static values.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// The stable identifier.
    public let rawValue: String
    /// Creates a code.
    public init(_ rawValue: String) { self.rawValue = rawValue }
    /// The cache directory could not be opened.
    public static let cache = Code("cache")
    /// The connection failed or was lost.
    public static let connection = Code("connection")
    /// A message could not be sent.
    public static let send = Code("send")
    /// An event from the server was malformed (it was dropped).
    public static let protocolViolation = Code("protocolViolation")
    /// A base animation could not be stored.
    public static let download = Code("download")
    /// The backend did not answer in time (the manifest, a download).
    public static let timeout = Code("timeout")
    /// The identifier.
    public var description: String { rawValue }
  }

  /// What went wrong.
  public var code: Code
  /// A human explanation, with the underlying error's description.
  public var message: String

  /// Creates an error.
  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  /// `code: message`.
  public var description: String { "\(code): \(message)" }
}
