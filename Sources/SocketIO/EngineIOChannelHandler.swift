import Logging
import NIOCore
import NIOWebSocket

/// What the WebSocket under a Socket.IO client hands to the client: whole packets, decoded.
enum TransportInbound: Sendable {
  /// An Engine.IO control packet (open, ping, close, …).
  case engine(EngineIOPacket)
  /// A complete Socket.IO packet (a binary one with all its attachments) and its bytes on
  /// the wire (its messages' payloads).
  case socket(SocketIOPacket, bytes: Int)
  /// The server answered a WebSocket ping: the probe number its payload echoes (nil when the
  /// payload is not four bytes, so not one of the client's pings).
  case pong(UInt32?)
}

/// The client's end of the WebSocket, on the channel's event loop: answers pings and closes,
/// joins fragmented frames into messages and decodes them into Engine.IO and Socket.IO
/// packets, so that the async side wakes once per packet, not once per frame (a batch of 50
/// images as binary attachments is 51 frames and one packet).
///
/// A message that does not decode is dropped with a log line; frames that no longer make
/// messages (a continuation without a start, a message over the limit) end the connection.
final class EngineIOChannelHandler: ChannelDuplexHandler, RemovableChannelHandler {
  typealias InboundIn = WebSocketFrame
  typealias InboundOut = TransportInbound
  typealias OutboundIn = WebSocketFrame
  typealias OutboundOut = WebSocketFrame

  private let limits: SocketIOLimits
  private let logger: Logger
  private var messages: WebSocketMessageAssembler
  private var decoder: SocketIOPacketDecoder
  /// A close frame went out (ours, or our answer to the server's): none is sent again.
  private var closing = false
  /// Bytes of the messages of the packet being assembled (a binary one's attachments).
  private var packetBytes = 0

  init(limits: SocketIOLimits, logger: Logger) {
    self.limits = limits
    self.logger = logger
    messages = WebSocketMessageAssembler(maximumBytes: limits.maximumPayloadBytes)
    decoder = SocketIOPacketDecoder(limits: limits)
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let frame = unwrapInboundIn(data)
    switch frame.opcode {
    case .ping:
      let pong = WebSocketFrame(
        fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
      context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
    case .pong:
      var data = frame.unmaskedData
      let id = data.readableBytes == 4 ? data.readInteger(as: UInt32.self) : nil
      context.fireChannelRead(wrapInboundOut(.pong(id)))
    case .connectionClose:
      // The server closes: answer with its status code (or none), then end the connection;
      // when it answers our close, only end it.
      guard !closing else {
        context.close(promise: nil)
        return
      }
      closing = true
      var data = frame.unmaskedData
      let close = Self.closeFrame(
        code: data.readInteger(as: UInt16.self), allocator: context.channel.allocator)
      // Called back on the event loop, where the context lives.
      context.writeAndFlush(wrapOutboundOut(close)).assumeIsolated().whenComplete { _ in
        context.close(promise: nil)
      }
    case .text, .binary, .continuation:
      let message: (Bool, ByteBuffer)?
      do {
        message = try messages.append(frame.opcode, frame.unmaskedData, fin: frame.fin)
      } catch {
        logger.warning("Closing the connection: \(error)")
        context.close(promise: nil)
        return
      }
      guard let (isText, payload) = message else { return }
      packetBytes += payload.readableBytes
      do {
        if let packet = try decode(isText: isText, payload) {
          if case .engine = packet { packetBytes = 0 }
          context.fireChannelRead(wrapInboundOut(packet))
        }
      } catch {
        packetBytes = 0
        // A bad packet is dropped; the decoder is ready for the next one.
        logger.warning("Dropped a malformed Socket.IO packet: \(error)")
      }
    default:
      logger.warning("Closing the connection: a frame with the reserved opcode \(frame.opcode)")
      context.close(promise: nil)
    }
  }

  /// Passes frames out, noting a close: the server's answer to it then only ends the
  /// connection.
  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    if unwrapOutboundIn(data).opcode == .connectionClose { closing = true }
    context.write(data, promise: promise)
  }

  /// A masked close frame with `code` (1000: a normal close; nil: no status code). The shell
  /// sends the normal one once; the server's answer, or the shell's timeout, ends the
  /// connection.
  static func closeFrame(code: UInt16? = 1000, allocator: ByteBufferAllocator)
    -> WebSocketFrame
  {
    var data = allocator.buffer(capacity: 2)
    if let code { data.writeInteger(code) }
    return WebSocketFrame(
      fin: true, opcode: .connectionClose, maskKey: .random(), data: data)
  }

  /// A whole Socket.IO packet, with the bytes of its messages (counted afresh for the next).
  private func socket(_ packet: SocketIOPacket) -> TransportInbound {
    defer { packetBytes = 0 }
    return .socket(packet, bytes: packetBytes)
  }

  /// The packet a whole message makes, or nil while a binary packet waits for attachments.
  private func decode(isText: Bool, _ payload: ByteBuffer) throws -> TransportInbound? {
    if isText, payload.readableBytesView.first == UInt8(ascii: "4") {
      // An Engine.IO message, by far the most frequent and the largest text: parsed in the
      // frame's buffer, with no String made of it first.
      let packet = try payload.withUnsafeReadableBytes { raw in
        try decoder.decode(
          utf8: UnsafeBufferPointer(
            rebasing: raw.assumingMemoryBound(to: UInt8.self).dropFirst()))
      }
      return packet.map { socket($0) }
    }
    let frame: EngineIOFrame =
      isText ? .text(String(buffer: payload)) : .binary(Array(payload.readableBytesView))
    let packet = try EngineIOPacket(frame: frame, limits: limits)
    switch packet {
    case .message, .binaryMessage:
      return try decoder.decode(packet).map { socket($0) }
    default:
      return .engine(packet)
    }
  }
}
