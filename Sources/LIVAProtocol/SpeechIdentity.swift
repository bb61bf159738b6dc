// The identities of speech: messages and their chunks.

/// Identifies one spoken message: the one numbering of messages from the wire to the image
/// store. The client's speech receiver gives them, in the order messages open (a new
/// `receive_audio` with `chunk_index` 0).
public struct MessageID: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The message's sequence number (0 for the first message of an engine).
  public let rawValue: Int
  /// Creates an identifier.
  public init(_ rawValue: Int) { self.rawValue = rawValue }
  /// Orders by sequence number.
  public static func < (lhs: MessageID, rhs: MessageID) -> Bool { lhs.rawValue < rhs.rawValue }
  /// `m<number>`.
  public var description: String { "m\(rawValue)" }
}

/// Identifies one chunk: its message and its `chunk_index` within that message.
public struct ChunkID: Hashable, Sendable, CustomStringConvertible {
  /// The message the chunk belongs to.
  public let message: MessageID
  /// The chunk's index within the message (`chunk_index` on the wire).
  public let index: Int
  /// Creates an identifier.
  public init(message: MessageID, index: Int) {
    self.message = message
    self.index = index
  }
  /// `m<message>/c<index>`.
  public var description: String { "\(message)/c\(index)" }
}
