import SocketIO

/// The ``LIVAState`` a ``LIVAClient`` reports, decided from what it knows: the connection, the
/// idle animation's availability and whether the avatar speaks. Pure: inputs in, the new state
/// out; the client holds one behind its lock.
///
/// The state is truthful: ``LIVAState/speaking`` only while connected (a speech that goes on
/// playing what was received while the connection is down or failed reads as `connecting` or
/// `error`, and as `speaking` again once reconnected if it still plays), ``LIVAState/ready``
/// only while connected with the idle animation available, ``LIVAState/error(_:)`` only for a
/// connection that ended for good (refused, closed by the server, reconnection given up).
struct ClientStateMachine: Hashable, Sendable {
  /// Where the connection is.
  enum Link: Hashable, Sendable {
    /// Never connected, or disconnected by the app.
    case idle
    /// Connecting, or reconnecting after a transient drop.
    case connecting
    /// The namespace is connected.
    case connected
    /// Ended for good; ``LIVAClient/connect()`` starts afresh.
    case failed(LIVAClientError)
  }

  /// What the client learns.
  enum Input: Hashable, Sendable {
    /// The app called ``LIVAClient/connect()`` and a socket starts.
    case connectRequested
    /// The app called ``LIVAClient/disconnect()``.
    case disconnectRequested
    /// The socket reported a status.
    case status(SocketIOStatus)
    /// Whether the idle animation can be drawn.
    case idleAvailable(Bool)
    /// The player began a message's speech.
    case speakingStarted
    /// The player ended a message's speech (played out or interrupted).
    case speakingEnded
  }

  /// The connection.
  private(set) var link: Link = .idle
  /// Whether the player speaks.
  private(set) var speaking = false
  /// Whether the idle animation can be drawn.
  private(set) var idleAvailable = false

  /// The state reported.
  var state: LIVAState {
    switch link {
    case .idle: return .idle
    case .connecting: return .connecting
    case .failed(let error): return .error(error)
    case .connected: return speaking ? .speaking : idleAvailable ? .ready : .connected
    }
  }

  /// Takes an input; returns the new state when it changed, nil otherwise.
  mutating func apply(_ input: Input) -> LIVAState? {
    let before = state
    switch input {
    case .connectRequested: link = .connecting
    case .disconnectRequested: link = .idle
    case .status(let status): link = Self.link(after: status, current: link)
    case .idleAvailable(let available): idleAvailable = available
    case .speakingStarted: speaking = true
    case .speakingEnded: speaking = false
    }
    let after = state
    return after == before ? nil : after
  }

  /// The connection after a socket status. Transient drops (the socket reconnects) read as
  /// connecting; only what ends the connection for good (refused, closed by the server,
  /// reconnection given up after the policy's failure limit) is a failure, and the app's own
  /// disconnect is idle.
  static func link(after status: SocketIOStatus, current: Link) -> Link {
    switch status {
    case .idle: return current
    case .connecting, .reconnecting: return .connecting
    case .connected: return .connected
    case .disconnected(let reason):
      switch reason {
      case .clientDisconnect: return .idle
      case .serverDisconnect:
        return .failed(LIVAClientError(.connection, "the server closed the connection"))
      case .connectRefused(let message):
        return .failed(
          LIVAClientError(.connection, "the server refused the connection: \(message)"))
      case .transportClose, .transportError, .pingTimeout: return .connecting
      }
    case .failed(let error):
      return .failed(LIVAClientError(.connection, "reconnection gave up: \(error)"))
    }
  }
}
