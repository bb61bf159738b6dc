import NIOCore
import NIOEmbedded
import Testing

@testable import SocketIOServer

/// Records the outbound operations that reach it, in order.
private final class OutboundRecorder: ChannelOutboundHandler {
  typealias OutboundIn = ByteBuffer
  var log: [String] = []

  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    log.append("write " + String(buffer: unwrapOutboundIn(data)))
    context.write(data, promise: promise)
  }

  func flush(context: ChannelHandlerContext) {
    log.append("flush")
    context.flush()
  }

  func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
    log.append("close")
    context.close(mode: mode, promise: promise)
  }
}

@Suite("Flush coalescing")
struct FlushCoalescingTests {
  /// A channel with the coalescing handler and, between it and the socket, a recorder.
  private func channel() throws -> (EmbeddedChannel, OutboundRecorder) {
    let channel = EmbeddedChannel()
    let recorder = OutboundRecorder()
    try channel.pipeline.syncOperations.addHandler(recorder)
    try channel.pipeline.syncOperations.addHandler(FlushCoalescingHandler())
    return (channel, recorder)
  }

  @Test("flushes asked for in one turn of the loop become one, after the writes")
  func coalesces() throws {
    let (channel, recorder) = try channel()
    for text in ["a", "b", "c"] {
      channel.write(ByteBuffer(string: text), promise: nil)
      channel.flush()
    }
    #expect(recorder.log == ["write a", "write b", "write c"])
    channel.embeddedEventLoop.run()
    #expect(recorder.log == ["write a", "write b", "write c", "flush"])
    // The next turn flushes again.
    channel.write(ByteBuffer(string: "d"), promise: nil)
    channel.flush()
    channel.embeddedEventLoop.run()
    #expect(recorder.log.suffix(2) == ["write d", "flush"])
    _ = try channel.finish()
  }

  @Test("a write without a flush is not flushed")
  func noFlushNoWrite() throws {
    let (channel, recorder) = try channel()
    channel.write(ByteBuffer(string: "a"), promise: nil)
    channel.embeddedEventLoop.run()
    #expect(recorder.log == ["write a"])
    _ = try channel.finish()
  }

  @Test("a close right after a flush flushes first")
  func closeFlushesFirst() throws {
    let (channel, recorder) = try channel()
    channel.write(ByteBuffer(string: "goodbye"), promise: nil)
    channel.flush()
    channel.close(promise: nil)
    #expect(recorder.log == ["write goodbye", "flush", "close"])
    channel.embeddedEventLoop.run()
    #expect(recorder.log == ["write goodbye", "flush", "close"])
  }
}
