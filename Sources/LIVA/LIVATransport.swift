import Logging
import SocketIO

/// What a ``LIVAClient`` needs of its connection to the backend: Socket.IO's events and
/// statuses in, emits out, and a start and a stop. ``SocketIOClient`` is the transport of every
/// client; another one (a test double that plays the backend on virtual time, a relay) is given
/// with ``LIVAConfiguration/makeTransport``.
public protocol LIVATransport: AnyObject, Sendable {
  /// The events the backend sends, across reconnections. Read by one task of the client.
  var events: SocketIOEvents { get }
  /// Every status change. Read by one task of the client.
  var statusUpdates: AsyncStream<SocketIOStatus> { get }
  /// Whether it is connecting, connected or waiting to reconnect (false once stopped for good).
  var isStarted: Bool { get async }
  /// Starts connecting (and reconnecting).
  func connect() async
  /// Stops for good, within a bounded time.
  func disconnect() async
  /// Emits an event: sent when connected, else kept for the next connection.
  func emit(_ name: String, _ arguments: [JSONValue]) async throws
  /// Bytes received from the backend so far, counted as they arrive (not per whole event):
  /// read on every display tick, a count that moves tells the player a slow link is still
  /// delivering, so speech waits for it. A transport that cannot tell returns 0.
  var bytesReceived: Int { get }
}

extension SocketIOClient: LIVATransport {}
