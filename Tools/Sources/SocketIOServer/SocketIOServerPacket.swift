import HummingbirdWebSocket
import NIOCore
import NIOWebSocket
import SocketIO

/// A Socket.IO packet encoded into the buffers of its WebSocket frames, ready to be written to
/// any number of sockets (buffers are shared, not copied).
///
/// ```swift
/// let packet = SocketIOServerPacket(.event("receive_audio", [payload]))
/// for socket in listeners { socket.send(packet) }
/// ```
public struct SocketIOServerPacket: Sendable {
  let frames: [WebSocketOutboundWriter.OutboundFrame]

  /// Encodes `packet` (its namespace must be that of the sockets it is sent to).
  public init(_ packet: SocketIOPacket) {
    self.init(frames: packet.frames)
  }

  /// Wraps the frames of an encoded packet (e.g. ``SocketIO/SocketIOPacket/frames``).
  public init(frames: [SocketIO.EngineIOFrame]) {
    self.frames = frames.map { frame in
      switch frame {
      case .text(let text):
        .custom(
          WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text)))
      case .binary(let bytes): .binary(ByteBuffer(bytes: bytes))
      }
    }
  }
}
