import Foundation
import Testing

@testable import LIVAProtocol

@Suite("Client events: one codec both ways")
struct ClientRequestTests {
  let talking = try! AnimationName(parsing: "talking_1_s_talking_1_e")

  @Test("what ClientEvent writes, ClientRequest reads back")
  func roundTrip() throws {
    let cases: [(ClientEvent, ClientRequest)] = [
      (.requestBaseAnimationsManifest(agentID: "a"), .baseAnimationsManifest(agentID: "a")),
      (
        .requestSpecificBaseAnimation(talking, agentID: "a"),
        .specificBaseAnimation(talking, agentID: "a")
      ),
      (
        .userMessage("hi", readyAnimations: [talking]),
        .userMessage("hi", readyAnimations: [talking])
      ),
      (.setSessionID("s-1"), .setSessionID("s-1")),
      (
        .userFullAudio(
          audio: Data([1, 2]), encoding: .binary, userID: "u", agentID: "a", appName: "x",
          userResolution: "512", timestamp: "t"),
        .userFullAudio(Data([1, 2]), userID: "u", agentID: "a")
      ),
    ]
    for (event, expected) in cases {
      #expect(try ClientRequest.decode(name: event.name, payload: event.payload) == expected)
    }
  }

  @Test(
    "client events are read tolerantly: numbers as text, bad names skipped; what is needed is required"
  )
  func tolerance() throws {
    #expect(
      try ClientRequest.decode(
        name: "user_message",
        payload: ["message": "hi", "ready_animations": ["Bad/Name", .string(talking.rawValue), 3]])
        == .userMessage("hi", readyAnimations: [talking]))
    #expect(
      try ClientRequest.decode(name: "set_session_id", payload: ["session_id": 42])
        == .setSessionID("42"))
    #expect(throws: LIVAProtocolError.self) {
      try ClientRequest.decode(name: "user_message", payload: ["ready_animations": []])
    }
    #expect(try ClientRequest.decode(name: "something_else", payload: [:]) == nil)
  }

  @Test("POST /messages: the body written is the body read")
  func httpBody() throws {
    let message = HTTPUserMessage(
      agentID: "anna", message: "Hello", instanceID: "i2", userResolution: "512",
      readyAnimations: [talking])
    #expect(try HTTPUserMessage(body: message.body) == message)
    #expect(throws: LIVAProtocolError.self) { try HTTPUserMessage(body: ["message": "x"]) }
  }
}
