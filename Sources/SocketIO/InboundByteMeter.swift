import Locking
import NIOCore

/// A running count of the bytes a client has read from the network, over all its connections
/// (TLS records included, before any decoding). It moves as bytes arrive, not when a whole
/// WebSocket message or Socket.IO packet is complete: a 125 KB packet on a 20 KB/s link is six
/// seconds of reads and one packet, and the count shows the link delivering all along.
final class InboundByteMeter: Sendable {
  private let count = Locked(0)

  /// The bytes read so far.
  var total: Int { count.withLock { $0 } }

  /// Adds `bytes` read now.
  func add(_ bytes: Int) { count.withLock { $0 &+= bytes } }
}

/// The first handler of a client's channel: counts what the socket read into an
/// ``InboundByteMeter`` and passes it on unchanged.
final class InboundByteCounter: ChannelInboundHandler, RemovableChannelHandler {
  typealias InboundIn = ByteBuffer
  typealias InboundOut = ByteBuffer

  private let meter: InboundByteMeter

  init(meter: InboundByteMeter) { self.meter = meter }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    meter.add(unwrapInboundIn(data).readableBytes)
    context.fireChannelRead(data)
  }
}
