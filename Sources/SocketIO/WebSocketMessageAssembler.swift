import NIOCore
import NIOWebSocket

/// Joins fragmented WebSocket frames into messages, within a size limit.
struct WebSocketMessageAssembler {
  let maximumBytes: Int
  private var fragmentsAreText: Bool?
  private var fragments = ByteBuffer()

  init(maximumBytes: Int) {
    self.maximumBytes = maximumBytes
  }

  /// Takes the next data frame (its opcode, payload and FIN bit); returns a whole message
  /// (whether it is text, and its payload) when the frame completes one.
  /// - Throws: ``SocketIOError`` `unexpectedFrame` for a continuation without a start or a
  ///   new message inside a fragmented one, `payloadTooLarge` beyond the limit; the
  ///   connection cannot go on after either.
  mutating func append(_ opcode: WebSocketOpcode, _ data: ByteBuffer, fin: Bool)
    throws(SocketIOError) -> (Bool, ByteBuffer)?
  {
    switch opcode {
    case .text, .binary:
      guard fragmentsAreText == nil else {
        throw SocketIOError(.unexpectedFrame, "a new message began inside a fragmented one")
      }
      guard data.readableBytes <= maximumBytes else {
        throw SocketIOError(.payloadTooLarge, "message of \(data.readableBytes) bytes")
      }
      if fin { return (opcode == .text, data) }
      fragmentsAreText = opcode == .text
      fragments = data
      return nil
    case .continuation:
      guard let isText = fragmentsAreText else {
        throw SocketIOError(.unexpectedFrame, "a continuation frame without a message")
      }
      guard fragments.readableBytes + data.readableBytes <= maximumBytes else {
        throw SocketIOError(
          .payloadTooLarge, "fragmented message over \(maximumBytes) bytes")
      }
      var data = data
      fragments.writeBuffer(&data)
      guard fin else { return nil }
      defer {
        fragmentsAreText = nil
        fragments = ByteBuffer()
      }
      return (isText, fragments)
    default:
      throw SocketIOError(.unexpectedFrame, "a control frame (\(opcode)) is not data")
    }
  }
}
