import Logging
import NIOCore
import NIOSSL

/// How a ``SocketIOClient`` connects.
public struct SocketIOClientConfiguration: Sendable {
  /// The server, e.g. `https://api.example.com` or `ws://127.0.0.1:5000`. `http`/`https` are
  /// turned into `ws`/`wss`.
  public var url: String
  /// The Engine.IO path, `/socket.io/` by default.
  public var path: String
  /// Query parameters sent with the handshake (e.g. `user_id`), in order.
  public var query: [(name: String, value: String)]
  /// The namespace to join, `/` by default. One client joins one namespace.
  public var namespace: String
  /// The auth payload sent with the namespace CONNECT packet, if any.
  public var auth: JSONValue?
  /// When and how often to reconnect.
  public var reconnection: ReconnectionPolicy
  /// Limits on what the server may send.
  public var limits: SocketIOLimits
  /// How long to wait for the connection: TCP, TLS and the WebSocket upgrade together, then
  /// again for the Engine.IO handshake and the namespace CONNECT after the WebSocket opened.
  public var connectTimeout: Duration
  /// The acknowledgement timeout of ``SocketIOClient/emitWithAck(_:_:timeout:)`` when none is given.
  public var ackTimeout: Duration
  /// How long to wait for the server's answer to a WebSocket close.
  public var closeTimeout: Duration
  /// The most emits kept while not connected; a later emit is refused with `outboundFull`
  /// (nothing accepted is dropped).
  public var maximumBufferedEmits: Int
  /// Bytes of emits the client holds, unsent (not connected, or queued behind a slow link) or
  /// sent and not yet confirmed by the server (16 MiB); a later emit is refused with
  /// `outboundFull`, so a link slower than the application's sends, or a dead one, costs at
  /// most this much memory.
  public var maximumOutboundBytes = 16 << 20
  /// How long the server may take to answer the WebSocket ping that follows an emit. Without
  /// an answer the link is declared dead (`pingTimeout`), the client reconnects and sends the
  /// unconfirmed emits again, once. The default, 5 s, finds a silently dead link long before
  /// a production heartbeat (25 s + 60 s) would.
  public var livenessTimeout: Duration
  /// Bytes of received events (as they came on the wire) the application may leave untaken in
  /// ``SocketIOClient/events`` before the client stops reading the socket (32 MiB): a consumer
  /// that falls behind a fast server holds at most this much plus one packet, and the server's
  /// writes wait in TCP's flow control instead. While the client waits for room it does not
  /// judge the link: neither the liveness probe nor the heartbeat ends the connection then.
  public var maximumQueuedEventBytes = 32 << 20
  /// Waits between reconnection attempts. Replace it in tests to control time.
  public var sleep: @Sendable (Duration) async throws -> Void
  /// A uniform random number in `0..<1` for the reconnection jitter. Replace it in tests.
  public var random: @Sendable () -> Double
  /// TLS for `https`/`wss` URLs; nil (the default): the platform's trust roots and
  /// `TLSConfiguration.makeClientConfiguration()`'s defaults. Set it to trust a private
  /// certificate authority or to pin one.
  public var tlsConfiguration: TLSConfiguration?

  /// Creates a configuration; only the URL is required.
  public init(
    url: String, path: String = "/socket.io/", query: [(name: String, value: String)] = [],
    namespace: String = "/", auth: JSONValue? = nil,
    reconnection: ReconnectionPolicy = ReconnectionPolicy(), limits: SocketIOLimits = .default,
    connectTimeout: Duration = .seconds(20), ackTimeout: Duration = .seconds(30),
    closeTimeout: Duration = .seconds(2), maximumBufferedEmits: Int = 1_000,
    livenessTimeout: Duration = .seconds(5)
  ) {
    self.url = url
    self.path = path
    self.query = query
    self.namespace = namespace
    self.auth = auth
    self.reconnection = reconnection
    self.limits = limits
    self.connectTimeout = connectTimeout
    self.ackTimeout = ackTimeout
    self.closeTimeout = closeTimeout
    self.maximumBufferedEmits = maximumBufferedEmits
    self.livenessTimeout = livenessTimeout
    self.sleep = { try await Task.sleep(for: $0) }
    self.random = { Double.random(in: 0..<1) }
  }

  /// The WebSocket URL of the Engine.IO endpoint, with `EIO=4&transport=websocket` and the
  /// query parameters, percent-encoded.
  public var engineURL: String {
    var base = url
    if base.hasPrefix("http://") {
      base = "ws://" + base.dropFirst(7)
    } else if base.hasPrefix("https://") {
      base = "wss://" + base.dropFirst(8)
    }
    while base.hasSuffix("/") { base.removeLast() }
    var path = path.hasPrefix("/") ? path : "/" + path
    if !path.hasSuffix("/") { path += "/" }
    var text = base + path + "?EIO=4&transport=websocket"
    for item in query {
      text += "&" + percentEncoded(item.name) + "=" + percentEncoded(item.value)
    }
    return text
  }
}

private func percentEncoded(_ text: String) -> String {
  let hex = Array("0123456789ABCDEF".utf8)
  var bytes: [UInt8] = []
  for byte in text.utf8 {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
      UInt8(ascii: "_"), UInt8(ascii: "~"):
      bytes.append(byte)
    default:
      bytes.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
    }
  }
  return String(decoding: bytes, as: UTF8.self)
}
