import Foundation
import Testing

@testable import LIVAProtocol

private let webp = Data([0x52, 0x49, 0x46, 0x46, 0x10, 0, 0, 0, 0x57, 0x45, 0x42, 0x50])

/// A frame object with production's types (docs/Protocol.md, "Frame object"): no `overlay_id`,
/// `sprite_index_folder` an int.
private func productionFrame(_ matched: WireValue, sheet: String = "J1_X2_M0.webp") -> WireValue {
  [
    "animation_name": "talking_1_s_talking_1_e", "matched_sprite_frame_number": matched,
    "sequence_index": 0, "section_index": 0, "frame_index": 0, "sprite_index_folder": 0,
    "sheet_filename": .string(sheet), "coordinates": [400, 500, 120, 80], "char": "vowel",
    "viseme": "AA",
  ]
}

private func receiveAudio(frames: [WireValue], chunkIndex: WireValue = 0) -> WireValue {
  [
    "audio_data": .string(Data([0xFF, 0xFB, 0x90, 0x64]).base64EncodedString()),
    "chunk_index": chunkIndex, "master_chunk_index": 3, "total_frame_images": 4,
    "timestamp": "2025-01-31 10:11:12.345",
    "animationFramesChunk": [
      [
        "animation_name": "talking_1_s_talking_1_e", "zone_top_left": [10, 20],
        "master_frame_play_at": 0, "mode": "talking", "sections": [.array(frames)],
      ]
    ],
  ]
}

private func decode(_ name: String, _ payload: WireValue) throws -> (
  ServerEvent?, [LIVAProtocolError]
) {
  var issues: [LIVAProtocolError] = []
  let event = try ServerEvent.decode(name: name, arguments: [payload], issues: &issues)
  return (event, issues)
}

@Suite("Tolerant decoding: the smallest unit rejected")
struct TolerantDecodingTests {
  @Test("production's types decode with no issue: int sprite_index_folder, derived overlay_id")
  func productionTypes() throws {
    let (event, issues) = try decode(
      "receive_audio", receiveAudio(frames: [productionFrame(7), productionFrame(8)]))
    #expect(issues.isEmpty, "\(issues)")
    guard case .audioChunk(let chunk)? = event else {
      Issue.record("\(String(describing: event))")
      return
    }
    let frames = chunk.animations[0].sections[0]
    #expect(
      frames.map(\.overlayId) == [
        "talking_1_s_talking_1_e/7/J1_X2_M0.webp", "talking_1_s_talking_1_e/8/J1_X2_M0.webp",
      ])
    #expect(frames[0].spriteIndexFolder == 0)
  }

  @Test(
    "an informational integer as text is read as decimal only: hex, infinity or padded text is a field issue and absent"
  )
  func informationalIntegerText() throws {
    for (text, expected) in [("12", 12), ("0x10", nil), ("inf", nil), (" 7", nil), ("1e1", 10)] {
      guard case .object(var fields) = receiveAudio(frames: [productionFrame(7)]) else {
        Issue.record("receive_audio's payload is not an object")
        return
      }
      fields["master_chunk_index"] = .string(text)
      let payload = WireValue.object(fields)
      let (event, issues) = try decode("receive_audio", payload)
      guard case .audioChunk(let chunk)? = event else {
        Issue.record("\(text): \(String(describing: event))")
        continue
      }
      #expect(chunk.masterChunkIndex == expected, "\(text)")
      #expect(issues.map(\.fieldPath) == (expected == nil ? ["master_chunk_index"] : []), "\(text)")
    }
  }

  @Test("informational fields read tolerantly: numbers ⇄ strings, 7.0, null and booleans as absent")
  func informationalFields() throws {
    let frame: WireValue = [
      "animation_name": "talking_1_s_talking_1_e", "matched_sprite_frame_number": 7.0,
      "sequence_index": "4", "frame_index": 7.0, "section_index": true,
      "sprite_index_folder": "folder-a", "sheet_filename": "J1_X2_M0.webp", "char": 1,
      "viseme": nil, "coordinates": false, "unknown": ["x": 1],
    ]
    let (event, issues) = try decode("receive_audio", receiveAudio(frames: [frame]))
    guard case .audioChunk(let chunk)? = event else {
      Issue.record("\(String(describing: event))")
      return
    }
    let decoded = chunk.animations[0].sections[0][0]
    #expect(!decoded.isRejected)
    #expect(decoded.matchedSpriteFrameNumber == 7)
    #expect(decoded.sequenceIndex == 4 && decoded.frameIndex == 7)
    #expect(decoded.sectionIndex == 0)  // `true` is absent: the position applies
    #expect(decoded.phonemeClass == "1" && decoded.viseme == nil && decoded.coordinates == nil)
    #expect(decoded.spriteIndexFolder == nil)
    // Only the value that could not be read at all is reported, as a field.
    #expect(issues.count == 1)
    #expect(issues.first?.scope == .field)
    #expect(
      issues.first?.fieldPath == "animationFramesChunk[0].sections[0][0].sprite_index_folder")
  }

  @Test("a bad frame costs its slot's mouth only: the chunk, its audio and the other frames stay")
  func badFramesInPlan() throws {
    let frames = [
      productionFrame(1), productionFrame(-3),
      ["animation_name": "talking_1_s_talking_1_e", "sheet_filename": "a.webp"],
      productionFrame(4, sheet: "a/../b"), productionFrame(5),
    ]
    let (event, issues) = try decode("receive_audio", receiveAudio(frames: frames))
    guard case .audioChunk(let chunk)? = event else {
      Issue.record("\(String(describing: event))")
      return
    }
    #expect(!chunk.audio.isEmpty)
    let decoded = chunk.animations[0].sections[0]
    #expect(decoded.count == 5)  // every slot keeps its time
    #expect(decoded.map(\.isRejected) == [false, true, true, true, false])
    #expect(decoded[1].matchedSpriteFrameNumber == -1 && decoded[1].overlayId.isEmpty)
    // The bad sheet name is dropped as a field, which leaves frame 3 without a key.
    #expect(issues.map(\.scope) == [.frame, .frame, .field, .frame], "\(issues)")
    let codes = issues.filter { $0.scope == .frame }.map(\.code)
    #expect(codes == [.outOfRange, .missingField, .missingField], "\(issues)")
  }

  @Test(
    "a batch: a bad image keeps its frame (so the player knows), a frame without a key is dropped")
  func badFramesInBatch() throws {
    let good = productionFrame(1).withImage(.string(webp.base64EncodedString()))
    let corrupt = productionFrame(2).withImage(.string("not base64 ***"))
    let keyless: WireValue = ["matched_sprite_frame_number": 3, "image_data": .binary(webp)]
    let payload: WireValue = [
      "chunk_index": 0, "batch_index": "0", "frames": [good, corrupt, keyless],
      "emission_timestamp": "1738000000000",
    ]
    let (event, issues) = try decode("receive_frame_images_batch", payload)
    guard case .frameImagesBatch(let batch)? = event else {
      Issue.record("\(String(describing: event))")
      return
    }
    #expect(batch.frames.count == 2)
    #expect(batch.frames[0].image?.data == webp && !batch.frames[0].isRejected)
    #expect(batch.frames[1].image == nil && batch.frames[1].isRejected)
    #expect(batch.frames[1].overlayId == "talking_1_s_talking_1_e/2/J1_X2_M0.webp")
    #expect(batch.batchIndex == 0 && batch.emissionTimestamp == 1_738_000_000_000)
    #expect(issues.map(\.scope) == [.frame, .frame])
    #expect(issues.map(\.fieldPath) == ["frames[1].image_data", "frames[2].animation_name"])
  }

  @Test("what playback needs is strict: a bad chunk_index costs the event")
  func strictEventFields() {
    #expect(throws: LIVAProtocolError.self) {
      try decode("receive_audio", receiveAudio(frames: [productionFrame(1)], chunkIndex: "zero"))
    }
    do {
      _ = try decode("receive_audio", receiveAudio(frames: [], chunkIndex: -1))
      Issue.record("decoded a negative chunk index")
    } catch let error as LIVAProtocolError {
      #expect(error.scope == .event && error.fieldPath == "chunk_index")
    } catch {
      Issue.record("\(error)")
    }
  }

  @Test(
    "numbers where strings are expected and numeric text where numbers are: read, not rejected")
  func numbersAndText() throws {
    // A frame an encoder wrote with the other JSON type for each value: the sheet name and the
    // id as numbers, the base frame and the rectangle as text, the media type as a number.
    var frame: WireValue = [
      "animation_name": "talking_1_s_talking_1_e", "matched_sprite_frame_number": "7",
      "sheet_filename": 12, "coordinates": ["400", "500", "120.5", "80"],
      "image_data": .string(webp.base64EncodedString()), "image_mime": 7,
    ]
    let payload: WireValue = ["chunk_index": "0", "batch_index": 0, "frames": [frame]]
    let (event, issues) = try decode("receive_frame_images_batch", payload)
    guard case .frameImagesBatch(let batch)? = event else {
      Issue.record("\(String(describing: event))")
      return
    }
    #expect(batch.chunkIndex == 0)
    let decoded = try #require(batch.frames.first)
    #expect(!decoded.isRejected, "\(issues)")
    #expect(decoded.matchedSpriteFrameNumber == 7)
    #expect(decoded.sheetFilename == "12")
    #expect(decoded.overlayId == "talking_1_s_talking_1_e/7/12")
    #expect(decoded.coordinates == PlacementRect(x: 400, y: 500, width: 120.5, height: 80))
    // The image is kept; a media type that is no text is ignored (the bytes say what they are).
    #expect(decoded.image?.data == webp && decoded.image?.mimeType == nil)
    #expect(issues.map(\.scope) == [.field], "\(issues)")
    #expect(issues.first?.fieldPath == "frames[0].image_mime")
    // An id sent as a number is the same key as its text.
    if case .object(var members) = frame {
      members["overlay_id"] = 42
      frame = .object(members)
    }
    let (again, _) = try decode(
      "receive_frame_images_batch", ["chunk_index": 0, "frames": [frame]])
    guard case .frameImagesBatch(let second)? = again else {
      Issue.record("\(String(describing: again))")
      return
    }
    #expect(second.frames.first?.overlayId == "42")
    // Text that is no number is still wrong where a number is needed.
    #expect(throws: LIVAProtocolError.self) {
      try decode("receive_frame_images_batch", ["chunk_index": "0x1", "frames": []])
    }
  }

  @Test("bad audio costs the audio, not the plan")
  func badAudio() throws {
    var payload = receiveAudio(frames: [productionFrame(1)])
    if case .object(var members) = payload {
      members["audio_data"] = "%%%"
      payload = .object(members)
    }
    let (event, issues) = try decode("receive_audio", payload)
    guard case .audioChunk(let chunk)? = event else {
      Issue.record("\(String(describing: event))")
      return
    }
    #expect(chunk.audio.isEmpty && chunk.animations[0].sections[0].count == 1)
    #expect(issues.map(\.scope) == [.field] && issues.first?.fieldPath == "audio_data")
  }

  @Test("the encoder writes production's shapes and decodes back to the same values")
  func roundTrip() throws {
    let name = try AnimationName(parsing: "talking_1_s_talking_1_e")
    var frame = OverlayFrame(
      overlayId: OverlayFrame.derivedOverlayId(
        animationName: name, matchedSpriteFrameNumber: 7, sheetFilename: "J1_X2_M2.webp"),
      animationName: name, matchedSpriteFrameNumber: 7, sequenceIndex: 0, sectionIndex: 0,
      frameIndex: 0, sheetFilename: "J1_X2_M2.webp", spriteIndexFolder: 0,
      coordinates: PlacementRect(x: 1, y: 2, width: 3, height: 4), phonemeClass: "vowel",
      viseme: "AA")
    let chunk = AudioChunk(
      audio: Data([1, 2, 3]), chunkIndex: 2, masterChunkIndex: 9, totalFrameImages: 1,
      timestamp: "2025-01-31 10:11:12.345",
      animations: [
        ChunkAnimation(
          animationName: name, sections: [[frame]], zoneTopLeft: SIMD2(5, 6),
          masterFramePlayAt: 60, mode: "talking")
      ])
    for encoding in BinaryEncoding.allCases {
      let event = OutgoingEvent.receiveAudio(chunk, encoding: encoding)
      let wireFrame = event.payload["animationFramesChunk"].flatMap {
        if case .array(let items) = $0 { items.first?["sections"] } else { nil }
      }
      guard case .array(let sections)? = wireFrame, case .array(let frames)? = sections.first,
        case .object(let members)? = frames.first
      else {
        Issue.record("no frame object in \(event.payload)")
        return
      }
      #expect(members["overlay_id"] == nil)
      #expect(members["sprite_index_folder"] == .number(0))
      let (decoded, issues) = try decode(event.name, event.payload)
      #expect(issues.isEmpty)
      var expected = chunk
      frame.zoneTopLeft = SIMD2(5, 6)
      expected.animations[0].sections = [[frame]]
      #expect(decoded == .audioChunk(expected))
    }
  }
}

extension WireValue {
  fileprivate func withImage(_ data: WireValue) -> WireValue {
    guard case .object(var members) = self else { return self }
    members["image_data"] = data
    return .object(members)
  }
}
