import NIOCore

/// Turns the flushes asked for within one event-loop turn into one.
///
/// Hummingbird's WebSocket writer flushes after every frame, and a Socket.IO event with
/// binary attachments is a frame per attachment (51 for a batch of 50 images). Each flush is
/// a `writev` and wakes the peer for a few kilobytes. This handler, first in the pipeline
/// (next to the socket), notes a flush and performs it once the event loop has run the
/// writes already queued, so the frames of one event leave in one `writev`. A close flushes
/// first, so nothing written before it is lost.
final class FlushCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
  typealias OutboundIn = NIOAny
  typealias OutboundOut = NIOAny

  private var flushPending = false

  func flush(context: ChannelHandlerContext) {
    guard !flushPending else { return }
    flushPending = true
    context.eventLoop.assumeIsolated().execute {
      self.flushNow(context: context)
    }
  }

  func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
    flushNow(context: context)
    context.close(mode: mode, promise: promise)
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    flushNow(context: context)
  }

  private func flushNow(context: ChannelHandlerContext) {
    guard flushPending else { return }
    flushPending = false
    context.flush()
  }
}
