import Foundation

/// A client → server LIVA event: its wire name and payload, ready to emit.
///
/// Build one with the static constructors; each writes the field names exactly as the
/// backend expects them (a mix of snake_case and camelCase).
public struct ClientEvent: Sendable, Hashable {
  /// The event name on the wire.
  public var name: String
  /// The payload object.
  public var payload: WireValue

  /// Creates an event from raw parts (prefer the static constructors).
  public init(name: String, payload: WireValue) {
    self.name = name
    self.payload = payload
  }

  /// `request_base_animations_manifest` — `{agentId}`.
  public static func requestBaseAnimationsManifest(agentID: String) -> ClientEvent {
    ClientEvent(name: "request_base_animations_manifest", payload: ["agentId": .string(agentID)])
  }

  /// `request_specific_base_animation` — `{animationType, agentId}`.
  public static func requestSpecificBaseAnimation(_ animation: AnimationName, agentID: String)
    -> ClientEvent
  {
    ClientEvent(
      name: "request_specific_base_animation",
      payload: ["animationType": .string(animation.rawValue), "agentId": .string(agentID)])
  }

  /// `user_message` — `{message, ready_animations}`: the text and the animations the client
  /// can draw now, so that the backend plans only with those.
  public static func userMessage(_ message: String, readyAnimations: [AnimationName])
    -> ClientEvent
  {
    ClientEvent(
      name: "user_message",
      payload: [
        "message": .string(message),
        "ready_animations": .array(readyAnimations.map { .string($0.rawValue) }),
      ])
  }

  /// `set_session_id` — `{session_id}`.
  public static func setSessionID(_ sessionID: String) -> ClientEvent {
    ClientEvent(name: "set_session_id", payload: ["session_id": .string(sessionID)])
  }

  /// How `user_full_audio` carries its audio.
  public enum AudioEncoding: Sendable, Hashable {
    /// A base64 string in the JSON.
    case base64
    /// A binary attachment (a Socket.IO BINARY_EVENT).
    case binary
  }

  /// `user_full_audio` — voice input: `{user_id, agent_id, app_name, instance_id, audio_data,
  /// userResolution, messageHistory, timestamp}`.
  public static func userFullAudio(
    audio: Data, encoding: AudioEncoding = .base64, userID: String, agentID: String,
    appName: String, instanceID: String = "default", userResolution: String,
    messageHistory: [WireValue] = [], timestamp: String
  ) -> ClientEvent {
    let audioValue: WireValue =
      encoding == .binary ? .binary(audio) : .string(audio.base64EncodedString())
    return ClientEvent(
      name: "user_full_audio",
      payload: [
        "user_id": .string(userID), "agent_id": .string(agentID), "app_name": .string(appName),
        "instance_id": .string(instanceID), "audio_data": audioValue,
        "userResolution": .string(userResolution), "messageHistory": .array(messageHistory),
        "timestamp": .string(timestamp),
      ])
  }
}

/// The connection parameters the backend reads from the Socket.IO handshake query.
public struct LIVAConnectionQuery: Sendable, Hashable {
  /// `user_id`.
  public var userID: String
  /// `agent_id`.
  public var agentID: String
  /// `instance_id`, `"default"` unless set.
  public var instanceID: String
  /// `userResolution`: the canvas size asked for, e.g. `"512"`.
  public var userResolution: String

  /// Creates the query.
  public init(
    userID: String, agentID: String, instanceID: String = "default", userResolution: String
  ) {
    self.userID = userID
    self.agentID = agentID
    self.instanceID = instanceID
    self.userResolution = userResolution
  }

  /// The query items, in a fixed order.
  public var items: [(name: String, value: String)] {
    [
      ("user_id", userID), ("agent_id", agentID), ("instance_id", instanceID),
      ("userResolution", userResolution),
    ]
  }

  /// The room the backend puts the socket in: `{user_id}-{agent_id}-instance-{instance_id}`.
  public var room: String { "\(userID)-\(agentID)-instance-\(instanceID)" }
}
