import Foundation
import LIVATestSupport
import Testing

@testable import LIVAProtocol

private let image = WireValue.string(Data([1, 2, 3, 4, 5]).base64EncodedString())

private let frameObject: WireValue = [
  "overlay_id": "talking_1_s_talking_1_e/7/J1.webp", "animation_name": "talking_1_s_talking_1_e",
  "matched_sprite_frame_number": 7, "sequence_index": 0, "section_index": 0, "frame_index": 0,
  "sheet_filename": "J1.webp", "coordinates": [1, 2, 3, 4], "char": "vowel", "viseme": "A",
  "image_data": image, "image_mime": "image/webp", "chunk_index": 0,
]

/// Valid payloads of every server event, the seeds of the mutations.
private let seeds: [(String, WireValue)] = [
  (
    "receive_audio",
    [
      "audio_data": image, "chunk_index": 0, "master_chunk_index": 1, "total_frame_images": 1,
      "timestamp": "2025-01-01 00:00:00.000",
      "animationFramesChunk": [
        [
          "animation_name": "idle_1_e_talking_1_s", "zone_top_left": [1, 2],
          "master_frame_play_at": 0, "mode": "talking", "sections": [[frameObject, frameObject]],
        ]
      ],
      "first_frame_image": ["image_data": image, "sheet_filename": "J1.webp"],
    ]
  ),
  (
    "receive_frame_images_batch",
    [
      "frames": [frameObject, frameObject], "chunk_index": 0, "batch_index": 0,
      "batch_start_index": 0, "batch_size": 2, "total_batches": 1, "emission_timestamp": 1e12,
    ]
  ),
  ("chunk_images_ready", ["chunk_index": 0, "total_images_sent": 2]),
  ("play_animation", ["animation_name": "hi_1_s_hi_1_e"]),
  (
    "animation_chunk_metadata",
    [
      "chunk_index": 0, "total_frame_images": 1,
      "sections": [["animation_name": "talking_1_s_talking_1_e", "frames": [frameObject]]],
    ]
  ),
  ("receive_frame_image", frameObject),
  (
    "base_animations_manifest", ["animations": ["idle_1_s_idle_1_e": ["frames": 10, "version": 1]]]
  ),
  ("animation_total_frames", ["animation_type": "idle_1_s_idle_1_e", "total_frames": 10]),
  (
    "receive_base_frame",
    ["animation_type": "idle_1_s_idle_1_e", "frame_index": 1, "frame_data": ["data": image]]
  ),
  ("animation_frames_complete", ["animation_type": "idle_1_s_idle_1_e"]),
]

/// Values an attacker or a buggy server might send.
private let hostile: [WireValue] = [
  .null, true, 0, -1, 1.5, 1e300, -1e300, 9_007_199_254_740_993, "", "../../x", "a/b",
  "idle_1_s_idle_1_e", "data:image/webp;base64,AAAA", "data:,", "====", "\u{0}", [], [:],
  [1, 2], [1, 2, 3, 4], [-1, -2, -3, -4], .binary(Data()), .binary(Data(count: 64)),
  .string(String(repeating: "A", count: 2_000)),
]

private func mutate(_ value: WireValue, using generator: inout SplitMix64, depth: Int = 0)
  -> WireValue
{
  // At each level: replace this node, or descend into one child.
  if depth > 0, Int.random(in: 0..<4, using: &generator) == 0 {
    return hostile.randomElement(using: &generator)!
  }
  switch value {
  case .object(var members) where !members.isEmpty:
    let key = members.keys.sorted().randomElement(using: &generator)!
    switch Int.random(in: 0..<6, using: &generator) {
    case 0: members[key] = nil
    case 1: members[key] = hostile.randomElement(using: &generator)!
    default: members[key] = mutate(members[key]!, using: &generator, depth: depth + 1)
    }
    return .object(members)
  case .array(var elements) where !elements.isEmpty:
    let index = Int.random(in: 0..<elements.count, using: &generator)
    switch Int.random(in: 0..<5, using: &generator) {
    case 0: elements.remove(at: index)
    case 1: elements.append(contentsOf: repeatElement(elements[index], count: 30))
    default: elements[index] = mutate(elements[index], using: &generator, depth: depth + 1)
    }
    return .array(elements)
  default:
    return hostile.randomElement(using: &generator)!
  }
}

@Suite("Event decoding fuzzing")
struct EventsFuzzTests {
  @Test(
    "mutated payloads decode or fail with a typed error naming the event",
    arguments: [7] + RunSeed.seeds(2))
  func fuzz(seed: UInt64) {
    var generator = SplitMix64(seed: seed)
    let limits = LIVAEventLimits(maximumFramesPerEvent: 40, maximumImageBytes: 1_000)
    var decoded = 0
    var rejected = 0
    var rectangles = 0
    for _ in 0..<4_000 {
      let (name, seedPayload) = seeds.randomElement(using: &generator)!
      var payload = seedPayload
      for _ in 0..<Int.random(in: 1...3, using: &generator) {
        payload = mutate(payload, using: &generator)
      }
      do {
        guard let event = try ServerEvent.decode(name: name, payload: payload, limits: limits)
        else {
          Issue.record("known event \(name) decoded to nil")
          continue
        }
        decoded += 1
        rectangles += checkInvariants(event, limits: limits)
      } catch {
        rejected += 1
        #expect(error.event == name)
      }
    }
    #expect(decoded > 200)
    #expect(rejected > 200)
    // A frame may lose its coordinates to a mutation, but most keep them: their check ran.
    #expect(rectangles > 200)
  }

  /// Checks what every decoded event promises; returns how many frame rectangles it checked.
  private func checkInvariants(_ event: ServerEvent, limits: LIVAEventLimits) -> Int {
    var frames: [OverlayFrame] = []
    switch event {
    case .audioChunk(let chunk):
      #expect(chunk.chunkIndex >= 0 && chunk.audio.count <= limits.maximumAudioBytes)
      frames = chunk.animations.flatMap { $0.sections.flatMap { $0 } }
    case .frameImagesBatch(let batch): frames = batch.frames
    case .frameImage(let frame): frames = [frame]
    case .animationChunkMetadata(let metadata): frames = metadata.sections.flatMap(\.frames)
    default: break
    }
    #expect(frames.count <= limits.maximumFramesPerEvent)
    var rectangles = 0
    for frame in frames where !(frame.isRejected && frame.overlayId.isEmpty) {
      #expect((0...limits.maximumIndex).contains(frame.matchedSpriteFrameNumber))
      #expect(!frame.overlayId.isEmpty)
      #expect((frame.image?.data.count ?? 0) <= limits.maximumImageBytes)
      if let rect = frame.coordinates {
        #expect(rect.width >= 0 && rect.height >= 0)
        rectangles += 1
      }
    }
    return rectangles
  }
}
