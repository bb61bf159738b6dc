/// JSON text that cannot be read: what is wrong and the byte offset where it was found.
public struct JSONWireError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What is wrong.
  public var message: String
  /// The byte offset of the problem in the text given to the reader.
  public var offset: Int
  /// True when the text may be valid but holds more than the reader's limit allows (too
  /// many values), rather than being malformed.
  public var exceedsLimit = false

  /// An error at `offset`.
  public init(_ message: String, offset: Int) {
    self.message = message
    self.offset = offset
  }

  /// The message and the offset.
  public var description: String { "\(message) (at byte \(offset))" }
}
