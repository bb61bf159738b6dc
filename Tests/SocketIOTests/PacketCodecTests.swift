import Testing

@testable import SocketIO

private func decodeText(_ text: String, limits: SocketIOLimits = .default) throws(SocketIOError)
  -> SocketIOPacket?
{
  var decoder = SocketIOPacketDecoder(limits: limits)
  return try decoder.decode(text: text)
}

private func errorCode(_ body: () throws(SocketIOError) -> Void) -> SocketIOError.Code? {
  do {
    try body()
    return nil
  } catch {
    return error.code
  }
}

struct DecodeCase: CustomTestStringConvertible, Sendable {
  var text: String
  var expected: SocketIOPacket
  var testDescription: String { text }
}

struct RejectCase: CustomTestStringConvertible, Sendable {
  var text: String
  var code: SocketIOError.Code
  var testDescription: String { "\(text.prefix(60)) → \(code)" }
}

@Suite("Socket.IO packet codec")
struct PacketCodecTests {
  static let decodeCases: [DecodeCase] = [
    DecodeCase(text: "0", expected: .connect()),
    DecodeCase(text: "0{\"token\":\"abc\"}", expected: .connect(payload: ["token": "abc"])),
    DecodeCase(
      text: "0/admin,{\"sid\":\"x1\"}",
      expected: .connect(namespace: "/admin", payload: ["sid": "x1"])),
    DecodeCase(
      text: "0/admin?token=1&b=2,{\"sid\":\"x1\"}",
      expected: .connect(namespace: "/admin", payload: ["sid": "x1"])),
    DecodeCase(text: "0/admin?token=1", expected: .connect(namespace: "/admin")),
    DecodeCase(text: "0/admin", expected: .connect(namespace: "/admin")),
    DecodeCase(text: "1", expected: .disconnect()),
    DecodeCase(text: "1/admin,", expected: .disconnect(namespace: "/admin")),
    DecodeCase(text: "1/admin", expected: .disconnect(namespace: "/admin")),
    DecodeCase(text: "2[\"hello\",1]", expected: .event("hello", [1])),
    DecodeCase(text: "2/admin,[\"hello\"]", expected: .event("hello", namespace: "/admin")),
    DecodeCase(
      text: "2/admin?q=1,7[\"hello\"]", expected: .event("hello", namespace: "/admin", ackID: 7)),
    DecodeCase(text: "212[\"hello\"]", expected: .event("hello", ackID: 12)),
    DecodeCase(
      text: "2/chat,456[\"x\",null]", expected: .event("x", [nil], namespace: "/chat", ackID: 456)),
    // A '-' inside the JSON is not an attachment count.
    DecodeCase(text: "2[\"a-b\"]", expected: .event("a-b")),
    DecodeCase(text: "2[\"x\",{\"y\":\"1-2\"},-3]", expected: .event("x", [["y": "1-2"], -3])),
    DecodeCase(text: "23[\"x\",\"5-\"]", expected: .event("x", ["5-"], ackID: 3)),
    // Ack ids up to the limit (10 digits by default).
    DecodeCase(text: "29999999999[\"x\"]", expected: .event("x", ackID: 9_999_999_999)),
    DecodeCase(text: "20[\"x\"]", expected: .event("x", ackID: 0)),
    DecodeCase(text: "3456[]", expected: .ack(456)),
    DecodeCase(
      text: "3/admin,1[\"ok\",{\"n\":1.5}]",
      expected: .ack(1, ["ok", ["n": 1.5]], namespace: "/admin")),
    DecodeCase(
      text: "4{\"message\":\"Not authorized\"}", expected: .connectError("Not authorized")),
    DecodeCase(
      text: "4/admin,\"bad\"",
      expected: SocketIOPacket(kind: .connectError, namespace: "/admin", payload: "bad")),
    // A placeholder-looking object in a non-binary event stays an object.
    DecodeCase(
      text: "2[\"x\",{\"_placeholder\":true,\"num\":0}]",
      expected: .event("x", [["_placeholder": true, "num": 0]])),
    DecodeCase(
      text: "2[\"esc\",\"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\"]",
      expected: .event("esc", ["a\"b\\c\né😀"])),
    DecodeCase(text: "2 [ \"ws\" , true , false ] ", expected: .event("ws", [true, false])),
    DecodeCase(
      text: "2[\"n\",0,-0.5,1e3,12345678901234567890]",
      expected: .event("n", [0, -0.5, 1000, 12_345_678_901_234_567_890.0])),
  ]

  @Test("decodes", arguments: decodeCases)
  func decodes(_ testCase: DecodeCase) throws {
    let packet = try decodeText(testCase.text)
    #expect(packet == testCase.expected)
  }

  static let rejectCases: [RejectCase] = [
    RejectCase(text: "", code: .malformedPacket),
    RejectCase(text: "7[\"x\"]", code: .malformedPacket),
    RejectCase(text: "x", code: .malformedPacket),
    // Empty or nameless event arrays.
    RejectCase(text: "2[]", code: .invalidPayload),
    RejectCase(text: "2", code: .invalidPayload),
    RejectCase(text: "2{}", code: .invalidPayload),
    RejectCase(text: "2[1,\"x\"]", code: .invalidPayload),
    RejectCase(text: "2/admin,", code: .invalidPayload),
    RejectCase(text: "3[\"x\"]", code: .invalidPayload),
    RejectCase(text: "312{}", code: .invalidPayload),
    RejectCase(text: "0[]", code: .invalidPayload),
    RejectCase(text: "012{}", code: .invalidPayload),
    RejectCase(text: "1{}", code: .invalidPayload),
    RejectCase(text: "4[]", code: .invalidPayload),
    // Ack id over the limit.
    RejectCase(text: "212345678901[\"x\"]", code: .ackIDTooLong),
    RejectCase(text: "2" + String(repeating: "9", count: 5000) + "[\"x\"]", code: .ackIDTooLong),
    // Attachment counts.
    RejectCase(text: "5-[\"x\"]", code: .malformedPacket),
    RejectCase(text: "5[\"x\"]", code: .malformedPacket),
    RejectCase(text: "51[\"x\"]", code: .malformedPacket),
    RejectCase(text: "5a-[\"x\"]", code: .malformedPacket),
    RejectCase(text: "5257-[\"x\"]", code: .tooManyAttachments),
    RejectCase(text: "51000-[\"x\"]", code: .tooManyAttachments),
    RejectCase(text: "50001-[\"x\"]", code: .tooManyAttachments),
    RejectCase(
      text: "5" + String(repeating: "9", count: 40) + "-[\"x\"]", code: .tooManyAttachments),
    RejectCase(text: "61-{}", code: .invalidPayload),
    RejectCase(text: "61-[]", code: .invalidPayload),
    // Broken JSON.
    RejectCase(text: "2[\"a\"", code: .malformedJSON),
    RejectCase(text: "2[\"a\"]x", code: .malformedJSON),
    RejectCase(text: "2[\"a\",]", code: .malformedJSON),
    RejectCase(text: "2[\"a\",01]", code: .malformedJSON),
    RejectCase(text: "2[\"a\",1e999]", code: .malformedJSON),
    RejectCase(text: "2[\"a\",NaN]", code: .malformedJSON),
    RejectCase(text: "2[\"a\",{\"k\"}]", code: .malformedJSON),
    RejectCase(text: "2[\"a\",{1:2}]", code: .malformedJSON),
    RejectCase(text: "2[\"a\\x\"]", code: .malformedJSON),
    RejectCase(text: "2[\"a\\u12\"]", code: .malformedJSON),
    RejectCase(text: "2[\"a\nb\"]", code: .malformedJSON),
    RejectCase(text: "2[\"a\",tru]", code: .malformedJSON),
    RejectCase(
      text: "2[\"deep\"," + String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        + "]",
      code: .malformedJSON),
  ]

  @Test("rejects", arguments: rejectCases)
  func rejects(_ testCase: RejectCase) {
    #expect(
      errorCode { () throws(SocketIOError) in _ = try decodeText(testCase.text) } == testCase.code)
  }

  @Test("limits are configurable")
  func configurableLimits() {
    let tight = SocketIOLimits(
      maximumAttachments: 2, maximumAckIDDigits: 3, maximumPayloadBytes: 32)
    #expect(
      errorCode { () throws(SocketIOError) in _ = try decodeText("2999[\"x\"]", limits: tight) }
        == nil)
    #expect(
      errorCode { () throws(SocketIOError) in _ = try decodeText("21000[\"x\"]", limits: tight) }
        == .ackIDTooLong)
    #expect(
      errorCode { () throws(SocketIOError) in _ = try decodeText("53-[\"x\"]", limits: tight) }
        == .tooManyAttachments)
    #expect(
      errorCode { () throws(SocketIOError) in
        _ = try decodeText("2[\"" + String(repeating: "a", count: 40) + "\"]", limits: tight)
      } == .payloadTooLarge)
  }

  @Test(
    "escapes and control characters are found at every offset of both fast paths (8-byte words, and memchr for strings of 128 bytes or more)"
  )
  func escapesAtEveryOffset() throws {
    for length in Array(1..<26) + [127, 128, 129, 136, 200] {
      for position in 0..<length {
        for (escaped, expected) in [
          ("\\\"", "\""), ("\\\\", "\\"), ("\\n", "\n"), ("\\u00e9", "é"), ("é", "é"),
        ] {
          var raw = Array(repeating: "a", count: length)
          raw[position] = escaped
          var text = Array(repeating: "a", count: length)
          text[position] = expected
          let packet = try decodeText("2[\"e\",\"" + raw.joined() + "\"]")
          #expect(packet?.arguments == [.string(text.joined())], "length \(length) at \(position)")
        }
        var bad = Array(repeating: "a", count: length)
        bad[position] = "\u{1}"
        #expect(
          errorCode { () throws(SocketIOError) in
            _ = try decodeText("2[\"e\",\"" + bad.joined() + "\"]")
          } == .malformedJSON, "control at \(position) of \(length)")
      }
    }
  }

  @Test("JSON nesting at the limit is accepted")
  func nestingAtLimit() throws {
    let depth = 63  // plus the event array itself: 64
    let text =
      "2[\"deep\"," + String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
      + "]"
    #expect(try decodeText(text)?.eventName == "deep")
  }
}

@Suite("Binary attachments")
struct BinaryAttachmentTests {
  private func decode(_ text: String, _ attachments: [[UInt8]], limits: SocketIOLimits = .default)
    throws(SocketIOError) -> SocketIOPacket?
  {
    var decoder = SocketIOPacketDecoder(limits: limits)
    var result = try decoder.decode(text: text)
    for (index, attachment) in attachments.enumerated() {
      #expect(result == nil, "packet completed before attachment \(index)")
      #expect(decoder.isAwaitingAttachments)
      result = try decoder.decode(attachment: attachment)
    }
    #expect(!decoder.isAwaitingAttachments)
    return result
  }

  static let placeholderTexts: [String] = [
    "51-[\"img\",{\"_placeholder\":true,\"num\":0}]",
    "51-[\"img\",{\"num\":0,\"_placeholder\":true}]",
    "51-[\"img\",{ \"num\" : 0 , \"_placeholder\" : true, \"extra\": 1 }]",
  ]

  @Test("placeholder keys in any order", arguments: placeholderTexts)
  func placeholderKeyOrder(_ text: String) throws {
    let packet = try decode(text, [[1, 2, 3]])
    #expect(packet == .event("img", [.binary([1, 2, 3])]))
  }

  @Test("placeholders rebuilt at any depth")
  func nestedPlaceholders() throws {
    let text =
      "62-/media,9[{\"frames\":[{\"image_data\":{\"_placeholder\":true,\"num\":1},\"i\":0},"
      + "{\"deep\":[[{\"x\":{\"num\":0,\"_placeholder\":true}}]]}]},"
      + "{\"_placeholder\":true,\"num\":1}]"
    let packet = try decode(text, [[0xAA], [0xBB, 0xCC]])
    let expected = SocketIOPacket.ack(
      9,
      [
        [
          "frames": [
            ["image_data": .binary([0xBB, 0xCC]), "i": 0],
            ["deep": [[["x": .binary([0xAA])]]]],
          ]
        ],
        .binary([0xBB, 0xCC]),
      ], namespace: "/media")
    #expect(packet == expected)
  }

  @Test("an empty attachment is valid")
  func emptyAttachment() throws {
    #expect(
      try decode("51-[\"e\",{\"_placeholder\":true,\"num\":0}]", [[]]) == .event("e", [.binary([])])
    )
  }

  static let badPlaceholders: [String] = [
    "51-[\"img\",{\"_placeholder\":true,\"num\":1}]",
    "51-[\"img\",{\"_placeholder\":true,\"num\":-1}]",
    "51-[\"img\",{\"_placeholder\":true,\"num\":0.5}]",
    "51-[\"img\",{\"_placeholder\":true,\"num\":\"0\"}]",
    "51-[\"img\",{\"_placeholder\":true}]",
  ]

  @Test("placeholders that name no attachment are rejected", arguments: badPlaceholders)
  func badPlaceholder(_ text: String) {
    #expect(
      errorCode { () throws(SocketIOError) in _ = try decode(text, [[1]]) } == .invalidPlaceholder)
  }

  @Test("frames out of sequence are rejected and the decoder recovers")
  func outOfSequence() throws {
    var decoder = SocketIOPacketDecoder()
    #expect(
      errorCode { () throws(SocketIOError) in _ = try decoder.decode(attachment: [1]) }
        == .unexpectedFrame)
    #expect(try decoder.decode(text: "52-[\"x\",{\"_placeholder\":true,\"num\":0}]") == nil)
    #expect(try decoder.decode(attachment: [1]) == nil)
    #expect(
      errorCode { () throws(SocketIOError) in _ = try decoder.decode(text: "2[\"y\"]") }
        == .unexpectedFrame)
    #expect(!decoder.isAwaitingAttachments)
    #expect(try decoder.decode(text: "2[\"y\"]") == .event("y"))
  }

  @Test("attachments count toward the payload limit")
  func attachmentSizeLimit() {
    let limits = SocketIOLimits(maximumPayloadBytes: 100)
    let text = "52-[\"x\",{\"_placeholder\":true,\"num\":0},{\"_placeholder\":true,\"num\":1}]"
    #expect(
      errorCode { () throws(SocketIOError) in
        _ = try decode(
          text, [[UInt8](repeating: 0, count: 20), [UInt8](repeating: 0, count: 20)], limits: limits
        )
      } == .payloadTooLarge)
  }

  @Test("binary is split out on send and rebuilt on receive")
  func roundTrip() throws {
    let packet = SocketIOPacket.event(
      "receive_frame_images_batch",
      [
        [
          "frames": [["image_data": .binary([1, 2]), "n": 1], ["image_data": .binary([3])]],
          "k": "a-b",
        ]
      ],
      namespace: "/liva", ackID: 42)
    let (text, attachments) = packet.encode()
    #expect(text.hasPrefix("52-/liva,42["))
    #expect(attachments == [[1, 2], [3]])
    #expect(!text.contains("\"image_data\":[1"))
    let frames = packet.frames
    #expect(frames.count == 3)
    #expect(try decode(text, attachments) == packet)
  }

  @Test("wire form of packets without binary")
  func encodeText() {
    #expect(SocketIOPacket.event("hi", ["a", 1]).encode().text == "2[\"hi\",\"a\",1]")
    #expect(SocketIOPacket.event("hi", namespace: "/x", ackID: 3).encode().text == "2/x,3[\"hi\"]")
    #expect(SocketIOPacket.ack(3, [true]).encode().text == "33[true]")
    #expect(SocketIOPacket.connect(payload: ["token": "t"]).encode().text == "0{\"token\":\"t\"}")
    #expect(SocketIOPacket.connect(namespace: "/a").encode().text == "0/a,")
    #expect(SocketIOPacket.disconnect().encode().text == "1")
    #expect(SocketIOPacket.connectError("no").encode().text == "4{\"message\":\"no\"}")
    #expect(
      SocketIOPacket.ack(1, [.binary([9])]).encode().text
        == "61-1[{\"_placeholder\":true,\"num\":0}]")
    #expect(
      SocketIOPacket.event("s", ["q\"\\\n\u{01}é", 1.5, -2, .null]).encode().text
        == "2[\"s\",\"q\\\"\\\\\\n\\u0001é\",1.5,-2,null]")
  }
}

@Suite("Engine.IO packets")
struct EngineIOPacketTests {
  static let textCases: [(String, EngineIOPacket)] = [
    ("1", .close), ("2", .ping("")), ("2probe", .ping("probe")), ("3", .pong("")),
    ("3probe", .pong("probe")),
    ("4", .message("")), ("42[\"x\"]", .message("2[\"x\"]")), ("5", .upgrade), ("6", .noop),
  ]

  @Test("text frames", arguments: textCases)
  func textFrames(_ text: String, _ packet: EngineIOPacket) throws {
    #expect(try EngineIOPacket(frame: .text(text)) == packet)
    #expect(packet.frame == .text(text))
  }

  @Test("binary frames are binary messages")
  func binaryFrames() throws {
    #expect(try EngineIOPacket(frame: .binary([0, 4, 255])) == .binaryMessage([0, 4, 255]))
    #expect(EngineIOPacket.binaryMessage([7]).frame == .binary([7]))
  }

  @Test("the open handshake round-trips")
  func openPacket() throws {
    let text =
      "0{\"sid\":\"lv_XN3\",\"upgrades\":[],\"pingInterval\":25000,\"pingTimeout\":20000,\"maxPayload\":1000000}"
    let packet = try EngineIOPacket(frame: .text(text))
    let expected = EngineIOHandshake(sid: "lv_XN3", pingInterval: 25_000, pingTimeout: 20_000)
    #expect(packet == .open(expected))
    #expect(try EngineIOPacket(frame: packet.frame) == packet)
  }

  static let rejected: [(String, SocketIOError.Code)] = [
    ("", .malformedPacket), ("7", .malformedPacket), ("a", .malformedPacket),
    ("0", .malformedJSON), ("0{}", .malformedPacket),
    ("0{\"sid\":\"a\",\"pingInterval\":-1,\"pingTimeout\":1}", .malformedPacket),
  ]

  @Test("malformed frames", arguments: rejected)
  func malformed(_ text: String, _ code: SocketIOError.Code) {
    #expect(
      errorCode { () throws(SocketIOError) in _ = try EngineIOPacket(frame: .text(text)) } == code)
  }
}
