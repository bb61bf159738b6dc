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
    ClientEvent(
      name: Wire.Event.requestBaseAnimationsManifest,
      payload: [Wire.Field.requestAgentId: .string(agentID)])
  }

  /// `request_specific_base_animation` — `{animationType, agentId}`.
  public static func requestSpecificBaseAnimation(_ animation: AnimationName, agentID: String)
    -> ClientEvent
  {
    ClientEvent(
      name: Wire.Event.requestSpecificBaseAnimation,
      payload: [
        Wire.Field.requestAnimationType: .string(animation.rawValue),
        Wire.Field.requestAgentId: .string(agentID),
      ])
  }

  /// `user_message` — `{message, ready_animations}`: the text and the animations the client
  /// can draw now, so that the backend plans only with those.
  public static func userMessage(_ message: String, readyAnimations: [AnimationName])
    -> ClientEvent
  {
    ClientEvent(
      name: Wire.Event.userMessage,
      payload: [
        Wire.Field.message: .string(message),
        Wire.Field.readyAnimations: .array(readyAnimations.map { .string($0.rawValue) }),
      ])
  }

  /// `set_session_id` — `{session_id}`.
  public static func setSessionID(_ sessionID: String) -> ClientEvent {
    ClientEvent(name: Wire.Event.setSessionId, payload: [Wire.Field.sessionId: .string(sessionID)])
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
      name: Wire.Event.userFullAudio,
      payload: [
        Wire.Field.userId: .string(userID), Wire.Field.agentId: .string(agentID),
        Wire.Field.appName: .string(appName),
        Wire.Field.instanceId: .string(instanceID), Wire.Field.audioData: audioValue,
        Wire.Field.userResolution: .string(userResolution),
        Wire.Field.messageHistory: .array(messageHistory),
        Wire.Field.timestamp: .string(timestamp),
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
      (Wire.Query.userId, userID), (Wire.Query.agentId, agentID),
      (Wire.Query.instanceId, instanceID),
      (Wire.Query.userResolution, userResolution),
    ]
  }

  /// The room the backend puts the socket in: `{user_id}-{agent_id}-instance-{instance_id}`.
  public var room: String { "\(userID)-\(agentID)-instance-\(instanceID)" }
}

/// `POST {server}/messages`, the HTTP way of sending a user message (the first iOS app's):
/// header `X-User-ID`, body `{AgentID, message, instance_id, userResolution, readyAnimations}`.
public struct HTTPUserMessage: Sendable, Hashable {
  /// `AgentID`.
  public var agentID: String
  /// `message`.
  public var message: String
  /// `instance_id`.
  public var instanceID: String
  /// `userResolution`.
  public var userResolution: String
  /// `readyAnimations`: the animations the client can draw; nil when not sent.
  public var readyAnimations: [AnimationName]?

  /// Creates a message.
  public init(
    agentID: String, message: String, instanceID: String = "default", userResolution: String,
    readyAnimations: [AnimationName]? = nil
  ) {
    self.agentID = agentID
    self.message = message
    self.instanceID = instanceID
    self.userResolution = userResolution
    self.readyAnimations = readyAnimations
  }

  /// The JSON body.
  public var body: WireValue {
    var members: [String: WireValue] = [
      Wire.Field.httpAgentID: .string(agentID), Wire.Field.message: .string(message),
      Wire.Field.instanceId: .string(instanceID),
      Wire.Field.userResolution: .string(userResolution),
    ]
    if let readyAnimations {
      members[Wire.Field.httpReadyAnimations] = .array(readyAnimations.map { .string($0.rawValue) })
    }
    return .object(members)
  }

  /// Reads a body: `AgentID` and `message` are required strings; the rest is read tolerantly
  /// (a number where a string is expected, unparsable animation names skipped).
  public init(body: WireValue) throws(LIVAProtocolError) {
    guard case .string(let agent)? = body[Wire.Field.httpAgentID] else {
      throw LIVAProtocolError(.missingField, "AgentID is required", event: "POST /messages")
    }
    guard case .string(let text)? = body[Wire.Field.message] else {
      throw LIVAProtocolError(.missingField, "message is required", event: "POST /messages")
    }
    self.init(
      agentID: agent, message: text, instanceID: body[Wire.Field.instanceId]?.text ?? "default",
      userResolution: body[Wire.Field.userResolution]?.text ?? "",
      readyAnimations: body[Wire.Field.httpReadyAnimations].flatMap(AnimationName.list))
  }
}

/// A decoded client → server LIVA event, for backends (the reference backend, tests).
public enum ClientRequest: Sendable, Hashable {
  /// `request_base_animations_manifest` — `{agentId}`.
  case baseAnimationsManifest(agentID: String?)
  /// `request_specific_base_animation` — `{animationType, agentId}`.
  case specificBaseAnimation(AnimationName, agentID: String?)
  /// `user_message` — `{message, ready_animations}`; nil names when not sent.
  case userMessage(String, readyAnimations: [AnimationName]?)
  /// `set_session_id` — `{session_id}`.
  case setSessionID(String)
  /// `user_full_audio` — the audio (base64 or binary) and the sender's ids.
  case userFullAudio(Data, userID: String?, agentID: String?)

  /// Decodes a client event by name from its first argument, as the one codec reads it: what
  /// the backend needs is required, the rest tolerant. Nil for a name that is not a LIVA client
  /// event.
  public static func decode(name: String, payload: WireValue) throws(LIVAProtocolError)
    -> ClientRequest?
  {
    func required(_ key: String) throws(LIVAProtocolError) -> String {
      guard let text = payload[key]?.text else {
        throw LIVAProtocolError(.missingField, "\(key) is required", event: name, fieldPath: key)
      }
      return text
    }
    switch name {
    case Wire.Event.requestBaseAnimationsManifest:
      return .baseAnimationsManifest(agentID: payload[Wire.Field.requestAgentId]?.text)
    case Wire.Event.requestSpecificBaseAnimation:
      let text = try required(Wire.Field.requestAnimationType)
      do {
        return .specificBaseAnimation(
          try AnimationName(parsing: text), agentID: payload[Wire.Field.requestAgentId]?.text)
      } catch {
        throw LIVAProtocolError(
          error.code, error.message, event: name, fieldPath: Wire.Field.requestAnimationType)
      }
    case Wire.Event.userMessage:
      guard case .string(let text)? = payload[Wire.Field.message] else {
        throw LIVAProtocolError(
          .missingField, "message is required", event: name, fieldPath: Wire.Field.message)
      }
      return .userMessage(
        text, readyAnimations: payload[Wire.Field.readyAnimations].flatMap(AnimationName.list))
    case Wire.Event.setSessionId:
      return .setSessionID(try required(Wire.Field.sessionId))
    case Wire.Event.userFullAudio:
      let reader = EventReader(event: name, limits: .default)
      let (audio, _) = try reader.bytes(
        reader.required(payload[Wire.Field.audioData], Wire.Field.audioData, in: ""),
        maximumBytes: LIVAEventLimits.default.maximumAudioBytes, at: Wire.Field.audioData)
      return .userFullAudio(
        audio, userID: payload[Wire.Field.userId]?.text, agentID: payload[Wire.Field.agentId]?.text)
    default:
      return nil
    }
  }
}

extension WireValue {
  /// A string, or a number as its decimal text (tolerant reading of string fields).
  fileprivate var text: String? {
    if case .string(let text) = self { return text }
    return decimalText
  }
}

extension AnimationName {
  /// The valid animation names of a JSON array (others are skipped); nil when not an array.
  fileprivate static func list(_ value: WireValue) -> [AnimationName]? {
    guard case .array(let items) = value else { return nil }
    return items.compactMap { item in
      guard case .string(let text) = item else { return nil }
      return try? AnimationName(parsing: text)
    }
  }
}
