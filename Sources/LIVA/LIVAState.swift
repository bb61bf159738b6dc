import Foundation

/// Where a ``LIVAClient``'s connection is in its life cycle. Truthful: `ready` and `speaking`
/// only while connected. Speech received before a drop plays on while the state reads
/// `connecting`, `error` or `idle` (see ``LIVAEvent`` for what plays).
public enum LIVAState: Sendable, Hashable {
  /// Created or disconnected by the app.
  case idle
  /// Connecting (or reconnecting after a transient drop) to the backend.
  case connecting
  /// Connected; the idle animation is not available yet, and the avatar is not speaking.
  case connected
  /// Connected, and the idle animation is available: the avatar is on screen and can speak.
  case ready
  /// Connected, and the avatar is speaking.
  case speaking
  /// The connection ended for good: the server refused or closed it, or reconnection gave up
  /// after the policy's failure limit. ``LIVAClient/connect()`` starts afresh. (Failures that
  /// leave the connection up, such as a download, arrive as ``LIVAEvent/error(_:)`` only.)
  case error(LIVAClientError)
}
