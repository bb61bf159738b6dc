import Locking
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// The WebSocket a ``SocketIOClient`` runs Engine.IO over: a TCP (or TLS) connection upgraded
/// with an HTTP/1.1 request, whose frames an ``EngineIOChannelHandler`` turns into packets on
/// the event loop. The async side gets one element per packet.
enum WebSocketTransport {
  /// A connected transport: packets in, frames out.
  typealias Channel = NIOAsyncChannel<TransportInbound, WebSocketFrame>

  /// Where a `ws://` or `wss://` URL points.
  struct Endpoint: Equatable {
    var secure: Bool
    var host: String
    var port: Int
    /// The path and query of the request line (`/` when the URL has none).
    var target: String

    /// The Host header: the port only when it is not the scheme's own.
    var hostHeader: String {
      let host = self.host.contains(":") ? "[\(self.host)]" : self.host
      return port == (secure ? 443 : 80) ? host : "\(host):\(port)"
    }

    /// Parses `ws://host[:port][/path][?query]` (or `wss://`); IPv6 hosts in brackets.
    init(url: String) throws(SocketIOError) {
      func invalid() -> SocketIOError {
        SocketIOError(.connectionFailed, "not a WebSocket URL: \(url)")
      }
      let rest: Substring
      if url.hasPrefix("ws://") {
        secure = false
        rest = url.dropFirst(5)
      } else if url.hasPrefix("wss://") {
        secure = true
        rest = url.dropFirst(6)
      } else {
        throw invalid()
      }
      let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
      let authority = rest[..<authorityEnd]
      let path = rest[authorityEnd...]
      target = path.isEmpty ? "/" : path.hasPrefix("?") ? "/" + path : String(path)
      var hostPart = authority
      var portPart: Substring?
      if authority.hasPrefix("[") {
        guard let close = authority.firstIndex(of: "]") else { throw invalid() }
        hostPart = authority[authority.index(after: authority.startIndex)..<close]
        let after = authority[authority.index(after: close)...]
        if after.hasPrefix(":") {
          portPart = after.dropFirst()
        } else if !after.isEmpty {
          throw invalid()
        }
      } else if let colon = authority.lastIndex(of: ":") {
        hostPart = authority[..<colon]
        portPart = authority[authority.index(after: colon)...]
      }
      guard !hostPart.isEmpty, !hostPart.contains("@") else { throw invalid() }
      host = String(hostPart)
      if let portPart {
        guard let port = Int(portPart), (1...65_535).contains(port) else { throw invalid() }
        self.port = port
      } else {
        port = secure ? 443 : 80
      }
    }

    /// Whether the host is an IP address (no server name to send for TLS).
    var hostIsAddress: Bool {
      host.contains(":")
        || host.split(separator: ".").count == 4
          && host.split(separator: ".").allSatisfy { UInt8($0) != nil }
    }
  }

  private enum Upgrade: Sendable {
    case websocket(Channel)
    case refused
  }

  /// Opens the WebSocket of `url`: TCP (TLS for `wss`), the HTTP upgrade, then the frame
  /// handler, all three within `connectTimeout`: a server that accepts TCP and never answers
  /// the TLS handshake or the upgrade has its channel closed at the deadline. Cancelling the
  /// calling task closes the channel at once. Every byte read is counted into `meter`.
  /// Fails with ``SocketIOError`` `connectionFailed` when the server refuses the upgrade or the
  /// deadline passes, `CancellationError` when cancelled.
  static func connect(
    url: String, limits: SocketIOLimits, tls: TLSConfiguration?, connectTimeout: Duration,
    meter: InboundByteMeter, logger: Logger,
    group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
  ) async throws -> Channel {
    let endpoint = try Endpoint(url: url)
    let sslContext =
      endpoint.secure ? try NIOSSLContext(configuration: tls ?? .makeClientConfiguration()) : nil
    let serverName = endpoint.hostIsAddress ? nil : endpoint.host
    let deadline = NIODeadline.now() + .nanoseconds(max(1, connectTimeout.nanoseconds))
    let opened = OpeningChannel()
    try Task.checkCancellation()
    let upgrade = try await ClientBootstrap(group: group)
      .connectTimeout(.nanoseconds(max(1, connectTimeout.nanoseconds)))
      .connect(host: endpoint.host, port: endpoint.port) { channel in
        opened.set(channel)
        // TLS and the upgrade share the connect's deadline: past it the channel closes, which
        // fails the upgrade.
        let expiry = channel.eventLoop.scheduleTask(deadline: deadline) {
          if opened.expire() { channel.close(promise: nil) }
        }
        opened.setExpiry(expiry)
        channel.closeFuture.whenComplete { _ in expiry.cancel() }
        return channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandler(InboundByteCounter(meter: meter))
          if let sslContext {
            try channel.pipeline.syncOperations.addHandler(
              NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
          }
          let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(
            maxFrameSize: limits.maximumPayloadBytes,
            upgradePipelineHandler: { channel, _ in
              channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(
                  EngineIOChannelHandler(limits: limits, logger: logger))
                return Upgrade.websocket(try Channel(wrappingChannelSynchronously: channel))
              }
            })
          var headers = HTTPHeaders()
          headers.add(name: "Host", value: endpoint.hostHeader)
          let request = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: endpoint.target, headers: headers)
          var configuration = NIOUpgradableHTTPClientPipelineConfiguration(
            upgradeConfiguration: NIOTypedHTTPClientUpgradeConfiguration(
              upgradeRequestHead: request, upgraders: [upgrader],
              notUpgradingCompletionHandler: { channel in
                channel.eventLoop.makeCompletedFuture { Upgrade.refused }
              }))
          // Bytes right behind the 101 answer (the Engine.IO open packet) are frames.
          configuration.leftOverBytesStrategy = .forwardBytes
          return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
            configuration: configuration)
        }
      }
    let outcome: Upgrade
    do {
      // `get()` does not see cancellation: closing the channel fails the upgrade instead.
      outcome = try await withTaskCancellationHandler {
        try await upgrade.get()
      } onCancel: {
        opened.close()
      }
    } catch {
      if Task.isCancelled { throw CancellationError() }
      if opened.hasTimedOut {
        throw SocketIOError(
          .connectionFailed, "no TLS handshake or WebSocket upgrade within \(connectTimeout)")
      }
      throw error
    }
    switch outcome {
    case .websocket(let channel):
      opened.cancelExpiry()
      if Task.isCancelled {
        try? await channel.executeThenClose { _, _ in }
        throw CancellationError()
      }
      return channel
    case .refused:
      opened.close()
      throw SocketIOError(.connectionFailed, "the server refused the WebSocket upgrade")
    }
  }
}

/// The channel being opened, shared between the connect call and its cancellation handler and
/// deadline.
private final class OpeningChannel: @unchecked Sendable {
  private let lock = Locked()
  private var channel: (any NIOCore.Channel)?
  private var closeRequested = false
  private var expired = false
  private var expiryCancelled = false
  private var expiry: Scheduled<Void>?

  func set(_ channel: any NIOCore.Channel) {
    let closeNow = lock.withLock {
      self.channel = channel
      return closeRequested
    }
    if closeNow { channel.close(promise: nil) }
  }

  /// Closes the channel now, or as soon as it exists.
  func close() {
    let channel: (any NIOCore.Channel)? = lock.withLock {
      closeRequested = true
      return self.channel
    }
    channel?.close(promise: nil)
  }

  func setExpiry(_ expiry: Scheduled<Void>) { lock.withLock { self.expiry = expiry } }

  /// The deadline passed: true when the channel is to be closed (the upgrade did not finish).
  func expire() -> Bool {
    lock.withLock {
      if !expiryCancelled { expired = true }
      return expired
    }
  }

  /// The upgrade finished: the deadline no longer applies.
  func cancelExpiry() {
    let expiry = lock.withLock {
      expiryCancelled = true
      return self.expiry
    }
    expiry?.cancel()
  }

  var hasTimedOut: Bool { lock.withLock { expired } }
}

extension Duration {
  /// The duration in whole nanoseconds (saturating).
  fileprivate var nanoseconds: Int64 {
    let (seconds, attoseconds) = components
    let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    return overflow ? .max : product &+ attoseconds / 1_000_000_000
  }
}
