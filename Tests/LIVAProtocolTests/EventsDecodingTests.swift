import Foundation
import Testing

@testable import LIVAProtocol

private let webpBytes = Data([0x52, 0x49, 0x46, 0x46, 0x10, 0, 0, 0, 0x57, 0x45, 0x42, 0x50])
private let mp3Bytes = Data([0xFF, 0xFB, 0x90, 0x64, 0x00])

private func anim(_ text: String) -> AnimationName { try! AnimationName(parsing: text) }

/// A `receive_audio` payload shaped like the production backend's.
private func audioPayload() -> WireValue {
  [
    "audio_data": .string(mp3Bytes.base64EncodedString()),
    "chunk_index": 0, "master_chunk_index": 12, "total_frame_images": 3,
    "timestamp": "2025-01-31 10:11:12.345", "some_future_field": ["ignored": true],
    "animationFramesChunk": [
      [
        "animation_name": "idle_1_e_talking_1_s", "zone_top_left": [410, 520],
        "master_frame_play_at": 0, "mode": "talking",
        "sections": [
          [
            [
              "animation_name": "idle_1_e_talking_1_s", "matched_sprite_frame_number": 3,
              "sequence_index": 0, "section_index": 0, "frame_index": 0,
              "sheet_filename": "J1_X2_M0.webp", "sprite_index_folder": 0, "char": "vowel",
              "viseme": "AA",
            ]
          ],
          [
            [
              "overlay_id": "talking_1_s_talking_1_e/7/J1_X2_M2.webp",
              "animation_name": "talking_1_s_talking_1_e", "matched_sprite_frame_number": 7,
              "sequence_index": 1, "frame_index": 0, "sheet_filename": "J1_X2_M2.webp",
              "coordinates": [400, 500.5, 120, 80],
            ],
            // No animation_name of its own: the section's applies.
            ["matched_sprite_frame_number": 8, "sheet_filename": "J1_X2_M3.webp", "extra": nil],
          ],
        ],
      ]
    ],
    "first_frame_image": [
      "image_data": .string("data:image/webp;base64," + webpBytes.base64EncodedString()),
      "sheet_filename": "J1_X2_M0.webp",
    ],
  ]
}

@Suite("LIVA server events")
struct ServerEventTests {
  @Test("receive_audio decodes every field")
  func receiveAudio() throws {
    let event = try ServerEvent.decode(name: "receive_audio", payload: audioPayload())
    guard case .audioChunk(let chunk)? = event else {
      Issue.record("not an audio chunk: \(String(describing: event))")
      return
    }
    #expect(chunk.audio == mp3Bytes)
    #expect(chunk.chunkIndex == 0 && chunk.startsNewMessage)
    #expect(chunk.masterChunkIndex == 12)
    #expect(chunk.totalFrameImages == 3)
    #expect(chunk.timestamp == "2025-01-31 10:11:12.345")
    #expect(
      chunk.firstFrameImage
        == FirstFrameImage(
          image: EncodedImage(data: webpBytes, mimeType: "image/webp"),
          sheetFilename: "J1_X2_M0.webp"))
    #expect(chunk.animations.count == 1)
    let plan = chunk.animations[0]
    #expect(plan.animationName == anim("idle_1_e_talking_1_s"))
    #expect(plan.zoneTopLeft == SIMD2(410, 520))
    #expect(plan.masterFramePlayAt == 0)
    #expect(plan.mode == "talking")
    #expect(plan.sections.map(\.count) == [1, 2])

    let first = plan.sections[0][0]
    #expect(first.overlayId == "idle_1_e_talking_1_s/3/J1_X2_M0.webp")  // derived
    #expect(first.matchedSpriteFrameNumber == 3)
    #expect(first.sequenceIndex == 0 && first.sectionIndex == 0 && first.frameIndex == 0)
    #expect(first.spriteIndexFolder == 0)
    #expect(first.phonemeClass == "vowel" && first.viseme == "AA")
    #expect(first.coordinates == nil)
    #expect(first.placement == .at(x: 410, y: 520))
    #expect(first.image == nil)

    let second = plan.sections[1][0]
    #expect(second.overlayId == "talking_1_s_talking_1_e/7/J1_X2_M2.webp")
    #expect(second.animationName == anim("talking_1_s_talking_1_e"))  // per frame
    #expect(second.sectionIndex == 1)  // implied by position
    #expect(second.coordinates == PlacementRect(x: 400, y: 500.5, width: 120, height: 80))
    #expect(second.placement == second.coordinates)

    let third = plan.sections[1][1]
    #expect(third.animationName == anim("idle_1_e_talking_1_s"))
    #expect(third.overlayId == "idle_1_e_talking_1_s/8/J1_X2_M3.webp")
  }

  static let imageCases: [(String, WireValue, String?)] = [
    ("base64", .string(webpBytes.base64EncodedString()), nil),
    (
      "base64 without padding",
      .string(String(webpBytes.base64EncodedString().prefix { $0 != "=" })), nil
    ),
    (
      "data URL", .string("data:image/webp;base64," + webpBytes.base64EncodedString()), "image/webp"
    ),
    ("data URL without type", .string("data:;base64," + webpBytes.base64EncodedString()), nil),
    ("binary", .binary(webpBytes), nil),
  ]

  @Test("image_data as base64, data URL or binary", arguments: imageCases)
  func imageForms(_ label: String, _ imageData: WireValue, _ mime: String?) throws {
    let payload: WireValue = [
      "chunk_index": 2, "batch_index": 0, "batch_start_index": 0, "batch_size": 1,
      "total_batches": 1, "emission_timestamp": 1_738_000_000_123,
      "frames": [
        [
          "overlay_id": "talking_1_s_talking_1_e/7/J1_X2_M2.webp",
          "animation_name": "talking_1_s_talking_1_e", "matched_sprite_frame_number": 7,
          "image_data": imageData,
        ]
      ],
    ]
    guard
      case .frameImagesBatch(let batch)? = try ServerEvent.decode(
        name: "receive_frame_images_batch", payload: payload)
    else {
      Issue.record("not a batch")
      return
    }
    #expect(batch.frames.count == 1)
    #expect(batch.frames[0].image == EncodedImage(data: webpBytes, mimeType: mime), "\(label)")
    #expect(batch.frames[0].chunkIndex == 2)
    #expect(batch.chunkIndex == 2 && batch.batchIndex == 0 && batch.totalBatches == 1)
    #expect(batch.emissionTimestamp == 1_738_000_000_123)
  }

  @Test("image_mime overrides the data URL type")
  func imageMime() throws {
    let payload: WireValue = [
      "chunk_index": 0, "section_index": 1, "sequence_index": 4, "matched_sprite_frame_number": 0,
      "animation_name": "talking_1_s_talking_1_e", "sheet_filename": "a.png",
      "image_data": .binary(webpBytes), "image_mime": "image/png",
    ]
    let event = try ServerEvent.decode(name: "receive_frame_image", payload: payload)
    guard case .frameImage(let frame)? = event else {
      Issue.record("not a frame image")
      return
    }
    #expect(frame.image?.mimeType == "image/png")
    #expect(frame.chunkIndex == 0 && frame.sectionIndex == 1 && frame.sequenceIndex == 4)
  }

  @Test("the small events")
  func smallEvents() throws {
    #expect(
      try ServerEvent.decode(
        name: "chunk_images_ready", payload: ["chunk_index": 3, "total_images_sent": 120])
        == .chunkImagesReady(chunkIndex: 3, totalImagesSent: 120))
    #expect(try ServerEvent.decode(name: "audio_end", arguments: []) == .audioEnd)
    #expect(try ServerEvent.decode(name: "audio_end", payload: [:]) == .audioEnd)
    for eventName in ["play_base_animation", "play_animation"] {
      #expect(
        try ServerEvent.decode(name: eventName, payload: ["animation_name": "hi_1_s_hi_1_e"])
          == .playBaseAnimation(anim("hi_1_s_hi_1_e")))
    }
    #expect(
      try ServerEvent.decode(
        name: "animation_total_frames",
        payload: ["animation_type": "idle_1_s_idle_1_e", "total_frames": 216])
        == .animationTotalFrames(anim("idle_1_s_idle_1_e"), totalFrames: 216))
    #expect(
      try ServerEvent.decode(
        name: "animation_frames_complete", payload: ["animation_type": "idle_1_s_idle_1_e"])
        == .animationFramesComplete(anim("idle_1_s_idle_1_e")))
    #expect(try ServerEvent.decode(name: "some_app_event", payload: [:]) == nil)
  }

  @Test("receive_base_frame with {data} or a bare data URL")
  func baseFrame() throws {
    let url = WireValue.string("data:image/webp;base64," + webpBytes.base64EncodedString())
    let expected = ServerEvent.baseFrame(
      BaseFrame(
        animationName: anim("idle_1_s_idle_1_e"), frameIndex: 5,
        image: EncodedImage(data: webpBytes, mimeType: "image/webp")))
    for frameData: WireValue in [["data": url], url] {
      let payload: WireValue = [
        "animation_type": "idle_1_s_idle_1_e", "frame_index": 5, "frame_data": frameData,
      ]
      #expect(try ServerEvent.decode(name: "receive_base_frame", payload: payload) == expected)
    }
  }

  @Test("base_animations_manifest")
  func manifest() throws {
    let payload: WireValue = [
      "animations": [
        "idle_1_s_idle_1_e": ["frames": 216, "version": "v3"],
        "talking_1_s_talking_1_e": ["frames": 120, "version": 7],
        "hi_1_s_hi_1_e": ["frames": 90],
      ]
    ]
    #expect(
      try ServerEvent.decode(name: "base_animations_manifest", payload: payload)
        == .baseAnimationsManifest([
          anim("idle_1_s_idle_1_e"): BaseAnimationInfo(frameCount: 216, version: "v3"),
          anim("talking_1_s_talking_1_e"): BaseAnimationInfo(frameCount: 120, version: "7"),
          anim("hi_1_s_hi_1_e"): BaseAnimationInfo(frameCount: 90),
        ]))
  }

  @Test("animation_chunk_metadata")
  func chunkMetadata() throws {
    let payload: WireValue = [
      "chunk_index": 1, "total_frame_images": 2,
      "sections": [
        [
          "animation_name": "talking_1_s_talking_1_e",
          "frames": [
            ["matched_sprite_frame_number": 0, "sheet_filename": "a.webp"],
            [
              "matched_sprite_frame_number": 1, "sheet_filename": "b.webp",
              "animation_name": "talking_1_e_idle_1_s",
            ],
          ],
        ]
      ],
    ]
    guard
      case .animationChunkMetadata(let metadata)? = try ServerEvent.decode(
        name: "animation_chunk_metadata", payload: payload)
    else {
      Issue.record("not metadata")
      return
    }
    #expect(metadata.chunkIndex == 1 && metadata.totalFrameImages == 2)
    #expect(
      metadata.sections[0].frames.map(\.overlayId) == [
        "talking_1_s_talking_1_e/0/a.webp", "talking_1_e_idle_1_s/1/b.webp",
      ])
    #expect(metadata.sections[0].frames.map(\.sectionIndex) == [0, 0])
  }
}

struct RejectedEvent: CustomTestStringConvertible, Sendable {
  /// What the problem must cost, by the "Bad input" rule: the smallest unit that is wrong.
  /// A field read for information only, or one that has a fallback (`audio_data`: the audio
  /// only; `coordinates`: the section's `zone_top_left`; `overlay_id`: derived from
  /// `sheet_filename`), costs the field; a value a frame cannot be drawn without, the frame; a
  /// manifest animation, its entry; a value the event is nothing without (`chunk_index`,
  /// `frames`, a base frame's data, a name to play), or a size limit of the event itself, the
  /// event.
  var scope: LIVAProtocolError.Scope
  var event: String
  var payload: WireValue?
  var code: LIVAProtocolError.Code
  var path: String?
  var limits = LIVAEventLimits.default
  var testDescription: String { "\(event) → \(scope) \(code) at \(path ?? "-")" }

  init(
    _ scope: LIVAProtocolError.Scope, event: String, payload: WireValue?,
    code: LIVAProtocolError.Code, path: String?, limits: LIVAEventLimits = .default
  ) {
    self.scope = scope
    self.event = event
    self.payload = payload
    self.code = code
    self.path = path
    self.limits = limits
  }
}

private enum Step: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
  case key(String)
  case index(Int)
  init(stringLiteral value: String) { self = .key(value) }
  init(integerLiteral value: Int) { self = .index(value) }
}

private func replacing(_ value: WireValue, at path: [Step], with replacement: WireValue?)
  -> WireValue
{
  guard let head = path.first else { return replacement ?? .null }
  let rest = Array(path.dropFirst())
  switch (value, head) {
  case (.object(var members), .key(let key)):
    if rest.isEmpty, replacement == nil {
      members[key] = nil
    } else {
      members[key] = replacing(members[key] ?? .null, at: rest, with: replacement)
    }
    return .object(members)
  case (.array(var elements), .index(let index)):
    elements[index] = replacing(elements[index], at: rest, with: replacement)
    return .array(elements)
  default:
    return value
  }
}

private let sectionFrame: [Step] = ["animationFramesChunk", 0, "sections", 1, 0]

private func audio(_ path: [Step], _ replacement: WireValue?) -> WireValue {
  replacing(audioPayload(), at: path, with: replacement)
}

private func batch(frame: WireValue) -> WireValue {
  ["chunk_index": 0, "frames": [frame]]
}

private let goodFrame: WireValue = [
  "animation_name": "talking_1_s_talking_1_e", "matched_sprite_frame_number": 1,
  "sheet_filename": "a.webp", "image_data": .binary(webpBytes),
]

private func frame(_ key: String, _ value: WireValue?) -> WireValue {
  batch(frame: replacing(goodFrame, at: [.key(key)], with: value))
}

@Suite("LIVA event validation")
struct EventValidationTests {
  static let cases: [RejectedEvent] = [
    RejectedEvent(.event, event: "receive_audio", payload: nil, code: .missingField, path: nil),
    RejectedEvent(.event, event: "receive_audio", payload: [1, 2], code: .wrongType, path: nil),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(["audio_data"], nil), code: .missingField,
      path: "audio_data"),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(["audio_data"], .null), code: .missingField,
      path: "audio_data"),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(["audio_data"], 5), code: .wrongType,
      path: "audio_data"),
    RejectedEvent(
      .event,
      event: "receive_audio", payload: audio(["chunk_index"], "0x1"), code: .wrongType,
      path: "chunk_index"),
    RejectedEvent(
      .event,
      event: "receive_audio", payload: audio(["chunk_index"], -1), code: .outOfRange,
      path: "chunk_index"),
    RejectedEvent(
      .event,
      event: "receive_audio", payload: audio(["chunk_index"], 1.5), code: .wrongType,
      path: "chunk_index"),
    RejectedEvent(
      .event,
      event: "receive_audio", payload: audio(["chunk_index"], 1e12), code: .outOfRange,
      path: "chunk_index"),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(["total_frame_images"], -4), code: .outOfRange,
      path: "total_frame_images"),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(["timestamp"], "a\u{0}b"), code: .malformedValue,
      path: "timestamp"),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(["animationFramesChunk"], [:]), code: .wrongType,
      path: "animationFramesChunk"),
    RejectedEvent(
      .frame,
      event: "receive_audio", payload: audio(sectionFrame + ["animation_name"], "../../etc/passwd"),
      code: .invalidAnimationName, path: "animationFramesChunk[0].sections[1][0].animation_name"),
    RejectedEvent(
      .frame,
      event: "receive_audio", payload: audio(sectionFrame + ["matched_sprite_frame_number"], -3),
      code: .outOfRange, path: "animationFramesChunk[0].sections[1][0].matched_sprite_frame_number"),
    RejectedEvent(
      .frame,
      event: "receive_audio", payload: audio(sectionFrame + ["matched_sprite_frame_number"], nil),
      code: .missingField,
      path: "animationFramesChunk[0].sections[1][0].matched_sprite_frame_number"),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(sectionFrame + ["coordinates"], [1, 2, 3]),
      code: .malformedValue, path: "animationFramesChunk[0].sections[1][0].coordinates"),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(sectionFrame + ["coordinates"], [1, 2, -3, 4]),
      code: .outOfRange, path: "animationFramesChunk[0].sections[1][0].coordinates[2]"),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(sectionFrame + ["coordinates"], [1e9, 2, 3, 4]),
      code: .outOfRange, path: "animationFramesChunk[0].sections[1][0].coordinates[0]"),
    RejectedEvent(
      .field,
      event: "receive_audio",
      payload: audio(["animationFramesChunk", 0, "zone_top_left"], ["a", 1]),
      code: .wrongType, path: "animationFramesChunk[0].zone_top_left[0]"),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(["animationFramesChunk", 0, "sections", 0], "x"),
      code: .wrongType, path: "animationFramesChunk[0].sections[0]"),
    RejectedEvent(
      .field,
      event: "receive_audio",
      payload: audio(["animationFramesChunk", 0, "animation_name"], "Idle_1_s_idle_1_e"),
      code: .invalidAnimationName, path: "animationFramesChunk[0].animation_name"),
    RejectedEvent(
      .field,
      event: "receive_audio", payload: audio(["first_frame_image", "image_data"], "%%%"),
      code: .malformedValue, path: "first_frame_image.image_data"),
    RejectedEvent(
      .event,
      event: "receive_frame_images_batch", payload: ["chunk_index": 0], code: .missingField,
      path: "frames"),
    RejectedEvent(
      .frame,
      event: "receive_frame_images_batch", payload: frame("image_data", nil), code: .missingField,
      path: "frames[0].image_data"),
    RejectedEvent(
      .frame,
      event: "receive_frame_images_batch", payload: frame("image_data", 123), code: .wrongType,
      path: "frames[0].image_data"),
    RejectedEvent(
      .frame,
      event: "receive_frame_images_batch", payload: frame("image_data", "!!!!"),
      code: .malformedValue, path: "frames[0].image_data"),
    RejectedEvent(
      .frame,
      event: "receive_frame_images_batch", payload: frame("image_data", "data:image/png,abc"),
      code: .malformedValue, path: "frames[0].image_data"),
    RejectedEvent(
      .frame,
      event: "receive_frame_images_batch", payload: frame("image_data", "data:image/png;base64"),
      code: .malformedValue, path: "frames[0].image_data"),
    RejectedEvent(
      .frame,
      event: "receive_frame_images_batch", payload: frame("image_data", .binary(Data(count: 101))),
      code: .tooLarge, path: "frames[0].image_data", limits: LIVAEventLimits(maximumImageBytes: 100)
    ),
    RejectedEvent(
      .frame,
      event: "receive_frame_images_batch",
      payload: frame("image_data", .string(Data(count: 300).base64EncodedString())),
      code: .tooLarge, path: "frames[0].image_data", limits: LIVAEventLimits(maximumImageBytes: 100)
    ),
    RejectedEvent(
      .field,
      event: "receive_frame_images_batch", payload: frame("sheet_filename", "../x.webp"),
      code: .malformedValue, path: "frames[0].sheet_filename"),
    RejectedEvent(
      .frame,
      event: "receive_frame_images_batch", payload: frame("sheet_filename", nil),
      code: .missingField, path: "frames[0].overlay_id"),
    RejectedEvent(
      .field,
      event: "receive_frame_images_batch", payload: frame("overlay_id", ""), code: .malformedValue,
      path: "frames[0].overlay_id"),
    RejectedEvent(
      .field,
      event: "receive_frame_images_batch",
      payload: frame("overlay_id", .string(String(repeating: "x", count: 600))),
      code: .tooLarge, path: "frames[0].overlay_id"),
    RejectedEvent(
      .frame,
      event: "receive_frame_images_batch", payload: frame("animation_name", nil),
      code: .missingField, path: "frames[0].animation_name"),
    RejectedEvent(
      .field,
      event: "receive_frame_images_batch", payload: frame("sequence_index", 2_000_000),
      code: .outOfRange, path: "frames[0].sequence_index"),
    RejectedEvent(
      .event,
      event: "receive_frame_images_batch",
      payload: ["chunk_index": 0, "frames": .array(Array(repeating: goodFrame, count: 11))],
      code: .tooLarge, path: "frames[10]", limits: LIVAEventLimits(maximumFramesPerEvent: 10)),
    RejectedEvent(
      .event,
      event: "play_animation", payload: ["animation_name": "hi"], code: .invalidAnimationName,
      path: "animation_name"),
    RejectedEvent(
      .event,
      event: "play_base_animation", payload: ["animation_name": ["x"]], code: .wrongType,
      path: "animation_name"),
    RejectedEvent(
      .entry,
      event: "base_animations_manifest", payload: ["animations": ["Bad/Name": ["frames": 1]]],
      code: .invalidAnimationName, path: "animations.Bad/Name"),
    RejectedEvent(
      .entry,
      event: "base_animations_manifest", payload: ["animations": ["hi_1_s_hi_1_e": ["frames": -1]]],
      code: .outOfRange, path: "animations.hi_1_s_hi_1_e.frames"),
    RejectedEvent(
      .event,
      event: "base_animations_manifest",
      payload: ["animations": ["hi_1_s_hi_1_e": ["frames": 1], "hi_1_e_hi_1_s": ["frames": 1]]],
      code: .tooLarge, path: "animations", limits: LIVAEventLimits(maximumAnimations: 1)),
    RejectedEvent(
      .event,
      event: "animation_total_frames",
      payload: ["animation_type": "idle_1_s_idle_1_e", "total_frames": 1e7], code: .outOfRange,
      path: "total_frames"),
    RejectedEvent(
      .event,
      event: "receive_base_frame",
      payload: ["animation_type": "idle_1_s_idle_1_e", "frame_index": 0], code: .missingField,
      path: "frame_data"),
    RejectedEvent(
      .event,
      event: "receive_base_frame",
      payload: [
        "animation_type": "idle_1_s_idle_1_e", "frame_index": 0, "frame_data": ["data": 1],
      ],
      code: .wrongType, path: "frame_data.data"),
    RejectedEvent(
      .event,
      event: "animation_frames_complete", payload: [:], code: .missingField, path: "animation_type"),
  ]

  @Test(
    "hostile and malformed payloads cost the smallest unit, with a typed error naming event and field",
    arguments: cases)
  func rejected(_ testCase: RejectedEvent) {
    var issues: [LIVAProtocolError] = []
    let arguments = testCase.payload.map { [$0] } ?? []
    if testCase.scope == .event {
      #expect {
        _ = try ServerEvent.decode(
          name: testCase.event, arguments: arguments, limits: testCase.limits, issues: &issues)
      } throws: { error in
        guard let error = error as? LIVAProtocolError else { return false }
        return error.scope == .event && error.code == testCase.code
          && error.event == testCase.event && error.fieldPath == testCase.path
      }
      return
    }
    // Cheaper than the event: it decodes, and the problem is reported with that scope.
    #expect(throws: Never.self) {
      _ = try ServerEvent.decode(
        name: testCase.event, arguments: arguments, limits: testCase.limits, issues: &issues)
    }
    let issue = issues.first { $0.fieldPath == testCase.path }
    #expect(issue?.scope == testCase.scope, "\(issues)")
    #expect(issue?.code == testCase.code, "\(issues)")
    #expect(issue?.event == testCase.event)
  }
}

@Suite("LIVA client events")
struct ClientEventTests {
  @Test("encoders write the wire field names")
  func encoders() {
    #expect(
      ClientEvent.requestBaseAnimationsManifest(agentID: "7")
        == ClientEvent(name: "request_base_animations_manifest", payload: ["agentId": "7"]))
    #expect(
      ClientEvent.requestSpecificBaseAnimation(anim("hi_1_s_hi_1_e"), agentID: "7")
        == ClientEvent(
          name: "request_specific_base_animation",
          payload: ["animationType": "hi_1_s_hi_1_e", "agentId": "7"]))
    #expect(
      ClientEvent.userMessage("Hello", readyAnimations: [.idleForward, .idleBack])
        == ClientEvent(
          name: "user_message",
          payload: [
            "message": "Hello", "ready_animations": ["idle_1_s_idle_1_e", "idle_1_e_idle_1_s"],
          ]))
    #expect(
      ClientEvent.setSessionID("s1")
        == ClientEvent(name: "set_session_id", payload: ["session_id": "s1"]))
    let audio = ClientEvent.userFullAudio(
      audio: mp3Bytes, userID: "u", agentID: "a", appName: "app", userResolution: "512",
      messageHistory: [["role": "user", "content": "hi"]], timestamp: "2025-01-01 00:00:00.000")
    #expect(audio.name == "user_full_audio")
    #expect(
      audio.payload
        == [
          "user_id": "u", "agent_id": "a", "app_name": "app", "instance_id": "default",
          "audio_data": .string(mp3Bytes.base64EncodedString()), "userResolution": "512",
          "messageHistory": [["role": "user", "content": "hi"]],
          "timestamp": "2025-01-01 00:00:00.000",
        ])
    let binary = ClientEvent.userFullAudio(
      audio: mp3Bytes, encoding: .binary, userID: "u", agentID: "a", appName: "app",
      userResolution: "512", timestamp: "t")
    #expect(binary.payload["audio_data"] == .binary(mp3Bytes))
  }

  @Test("connection query and room")
  func query() {
    let query = LIVAConnectionQuery(userID: "u1", agentID: "a2", userResolution: "512")
    #expect(query.items.map(\.name) == ["user_id", "agent_id", "instance_id", "userResolution"])
    #expect(query.items.map(\.value) == ["u1", "a2", "default", "512"])
    #expect(query.room == "u1-a2-instance-default")
  }
}
