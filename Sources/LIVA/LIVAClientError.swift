import Foundation

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
