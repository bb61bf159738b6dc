import LIVAEngine
import LIVAProtocol

/// What a ``LIVAClient`` tells an app as it happens, on ``LIVAClient/events``.
public enum LIVAEvent: Sendable, Hashable {
  /// The client's state changed (connection, readiness, speaking, errors).
  case stateChanged(LIVAState)
  /// A message's first frame with its speech was drawn. `text` is what this client sent with
  /// ``LIVAClient/sendMessage(_:)`` for it, when it sent one: replies are matched to the texts
  /// sent, in order (a message the backend started by itself has none).
  case speakingStarted(MessageID, text: String?)
  /// A message is over: played to its end, or interrupted (a message interrupted before its
  /// first frame ends so too, with no ``speakingStarted(_:text:)`` before: its text, if it
  /// answered one, is never left without an end).
  case speakingEnded(MessageID, text: String?, interrupted: Bool)
  /// A chunk's audio started (its first slot was drawn).
  case chunkStarted(ChunkID)
  /// Part of an event from the server was dropped (a field's value, a frame, or the whole
  /// event: see ``LIVAProtocolError/scope``); playback went on.
  case rejected(LIVAProtocolError)
  /// The engine worked around a problem (a wrapped frame number, a lost mouth, a cut…).
  case warning(EngineWarning)
  /// Something failed (connection, download, send).
  case error(LIVAClientError)
  /// A text sent with ``LIVAClient/sendMessage(_:)`` got no speech: none came within
  /// ``LIVAConfiguration/answerTimeout``, more than 16 texts waited, or the client
  /// disconnected first. Later speech is no longer matched to it.
  case messageUnanswered(text: String)
}
