import Locking
import NIOCore
import NIOPosix

/// A TCP link between a client and a server that a test can break the way networks break:
/// it forwards bytes both ways until told to go silent, then reads nothing more from either
/// side and passes nothing, keeping both connections open (no FIN, no RST), as a dead mobile
/// link or a NAT that forgot the flow does: the peers' writes fill their socket buffers and
/// stall. Started silent, it is a proxy that accepts TCP and never answers anything. Started
/// paced, it carries the server's bytes to the client at a fixed rate (a slow mobile link), in
/// order, everything the server wrote queued in the link.
final class FaultyLink: Sendable {
  /// One connection through the link: the client's side, the server's side once connected.
  private final class Connection: Sendable {
    let silent: Locked<Bool>
    let channels = Locked<[any Channel]>([])
    init(silent: Bool) { self.silent = Locked(silent) }

    func goSilent() {
      silent.withLock { $0 = true }
      for channel in channels.withLock({ $0 }) {
        channel.setOption(.autoRead, value: false).whenComplete { _ in }
      }
    }
  }

  private let connections: Locked<[Connection]>
  private let listener: any Channel
  /// One element per connection accepted, for a test to wait on (the accept runs on an event
  /// loop that a busy neighbour can hold up: counting at once could miss the latest).
  let accepted: Recorder<Int>
  private let stopped: Locked<Bool>
  /// The port the client connects to.
  let port: Int

  /// A link on an ephemeral loopback port to `upstreamPort`. `silentFromStart`: every
  /// connection is silent from its first byte (a proxy that swallows the handshake).
  /// `pace`: the server's bytes reach the client at this many bytes a second.
  static func start(to upstreamPort: Int, silentFromStart: Bool = false, pace: Int? = nil)
    async throws -> FaultyLink
  {
    let connections = Locked<[Connection]>([])
    let accepted = Recorder<Int>()
    let stopped = Locked(false)
    let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      // Nothing is read from the client until the server side is connected.
      .childChannelOption(.autoRead, value: false)
      // Small buffers: a silent link stalls its peers' writes after a few hundred KiB.
      .childChannelOption(.socketOption(.so_rcvbuf), value: 64 << 10)
      .childChannelInitializer { inbound in
        let connection = Connection(silent: silentFromStart)
        connection.channels.withLock { $0.append(inbound) }
        let count = connections.withLock {
          $0.append(connection)
          return $0.count
        }
        Task { await accepted.append(count) }
        let forward = Forward(silent: connection.silent)
        return inbound.pipeline.addHandler(forward).flatMap {
          ClientBootstrap(group: inbound.eventLoop)
            .channelInitializer { outbound in
              outbound.pipeline.addHandler(
                Forward(silent: connection.silent, partner: inbound, pace: pace))
            }
            .connect(host: "127.0.0.1", port: upstreamPort)
            .flatMap { upstream in
              forward.partner = upstream
              connection.channels.withLock { $0.append(upstream) }
              // Connected after stop() closed what it knew: closed here (a server waiting for
              // its connections to end would wait for ever).
              if stopped.withLock({ $0 }) {
                upstream.close(promise: nil)
                inbound.close(promise: nil)
              }
              let silent = connection.silent.withLock { $0 }
              return silent
                ? upstream.setOption(.autoRead, value: false)
                : inbound.setOption(.autoRead, value: true)
            }
        }
      }
      .bind(host: "127.0.0.1", port: 0).get()
    return FaultyLink(
      connections: connections, listener: listener, accepted: accepted, stopped: stopped,
      port: listener.localAddress?.port ?? 0)
  }

  private init(
    connections: Locked<[Connection]>, listener: any Channel,
    accepted: Recorder<Int>, stopped: Locked<Bool>, port: Int
  ) {
    self.stopped = stopped
    self.connections = connections
    self.listener = listener
    self.accepted = accepted
    self.port = port
  }

  var url: String { "http://127.0.0.1:\(port)" }

  /// From now on the connections made so far read and pass nothing; they stay open.
  /// Connections made later forward again (the network came back).
  func goSilent() {
    for connection in connections.withLock({ $0 }) { connection.goSilent() }
  }

  /// How many connections were made through the link.
  var connectionCount: Int { connections.withLock { $0.count } }

  /// Closes the listener and every connection through the link.
  func stop() async {
    stopped.withLock { $0 = true }
    try? await listener.close()
    for connection in connections.withLock({ $0 }) {
      for channel in connection.channels.withLock({ $0 }) {
        try? await channel.close()
      }
    }
  }

  /// Passes what one side reads to the other, unless the link is silent.
  private final class Forward: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let silent: Locked<Bool>
    var partner: (any Channel)?
    /// Bytes a second passed on, or nil for as fast as they come.
    let pace: Int?
    /// What waits for its turn on a paced link (touched on this handler's event loop only).
    private var queued = ByteBuffer()
    private var draining = false
    /// A slice every 20 ms.
    private static let tick = TimeAmount.milliseconds(20)

    init(silent: Locked<Bool>, partner: (any Channel)? = nil, pace: Int? = nil) {
      self.silent = silent
      self.partner = partner
      self.pace = pace
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      guard !silent.withLock({ $0 }), let partner else { return }
      var bytes = unwrapInboundIn(data)
      guard pace != nil else {
        partner.writeAndFlush(bytes, promise: nil)
        return
      }
      queued.writeBuffer(&bytes)
      if !draining { drain(context.eventLoop) }
    }

    /// Passes one slice of the queue on, and comes back in a tick while anything is left.
    private func drain(_ loop: any EventLoop) {
      guard let pace, let partner, queued.readableBytes > 0 else {
        draining = false
        return
      }
      draining = true
      let slice = max(1, pace / 50)
      if let bytes = queued.readSlice(length: min(slice, queued.readableBytes)) {
        partner.writeAndFlush(bytes, promise: nil)
      }
      queued.discardReadBytes()
      loop.scheduleTask(in: Self.tick) { self.drain(loop) }
    }

    func channelInactive(context: ChannelHandlerContext) {
      if !silent.withLock({ $0 }) { partner?.close(promise: nil) }
      context.fireChannelInactive()
    }
  }
}
