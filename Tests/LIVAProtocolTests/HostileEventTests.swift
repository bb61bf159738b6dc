import Foundation
import LIVATestSupport
import Testing

@testable import LIVAProtocol

/// Events built to cost as much as they can: every element counts against the per-event
/// limits whatever its type, and a flood of bad elements costs a bounded number of issues.
@Suite("Hostile events: caps count every element, issues stay bounded", .serialized)
struct HostileEventTests {
  private func decode(_ name: String, _ payload: WireValue) throws(LIVAProtocolError) -> (
    ServerEvent?, [LIVAProtocolError]
  ) {
    var issues: [LIVAProtocolError] = []
    let event = try ServerEvent.decode(name: name, arguments: [payload], issues: &issues)
    return (event, issues)
  }

  private func batch(_ frames: [WireValue]) -> WireValue {
    ["chunk_index": 0, "frames": .array(frames)]
  }

  private func plan(sections: [WireValue]) -> WireValue {
    [
      "chunk_index": 0, "audio_data": "",
      "animationFramesChunk": [["animation_name": "talking_1", "sections": .array(sections)]],
    ]
  }

  @Test(
    "a batch of 3 M numbers where frames belong is rejected whole, holding nothing (was 938 MB)")
  func nonObjectFramesFlood() throws {
    let frames = WireValue.array(Array(repeating: .number(1), count: 3_000_000))
    let (result, growth) = Heap.growth(attempts: 8, budget: 8 << 20) {
      () -> Result<Int, LIVAProtocolError> in
      do throws(LIVAProtocolError) {
        return .success(try decode("receive_frame_images_batch", batch(frames.arrayValue!)).1.count)
      } catch {
        return .failure(error)
      }
    }
    guard case .failure(let error) = result else {
      Issue.record("decoded with \(result) issues")
      return
    }
    #expect(error.code == .tooLarge)
    #expect(error.fieldPath == "frames[10000]")
    if let growth {
      #expect(growth < 8 << 20, "\(growth) bytes held")
    } else {
      #expect(!Heap.measures, "no heap figure where the C library gives one")
    }
  }

  @Test(
    "every element where a frame belongs counts, whatever its type",
    arguments: [WireValue.number(1), .null, .string("x"), .array([]), [:]])
  func everyElementCounts(element: WireValue) throws {
    let limits = LIVAEventLimits.default.maximumFramesPerEvent
    #expect(throws: Never.self) {
      _ = try decode("receive_frame_images_batch", batch(Array(repeating: element, count: limits)))
    }
    #expect {
      _ = try decode(
        "receive_frame_images_batch", batch(Array(repeating: element, count: limits + 1)))
    } throws: { ($0 as? LIVAProtocolError)?.code == .tooLarge }
    // In a chunk's plan too, and sections count as well.
    #expect {
      _ = try decode(
        "receive_audio", plan(sections: [.array(Array(repeating: element, count: limits + 1))]))
    } throws: { ($0 as? LIVAProtocolError)?.code == .tooLarge }
    #expect {
      _ = try decode("receive_audio", plan(sections: Array(repeating: element, count: limits + 1)))
    } throws: { ($0 as? LIVAProtocolError)?.code == .tooLarge }
  }

  @Test("9,000 bad frames in one batch: 32 issues and one that counts the other 8,968")
  func issuesAreBounded() throws {
    let (event, issues) = try decode(
      "receive_frame_images_batch", batch(Array(repeating: .number(1), count: 9_000)))
    guard case .frameImagesBatch(let decoded)? = event else {
      Issue.record("not a batch: \(String(describing: event))")
      return
    }
    #expect(decoded.frames.isEmpty)
    #expect(issues.count == 33)
    #expect(issues.last?.message.hasPrefix("8968 more problems in this event") == true)
    #expect(issues.last?.scope == .frame)
    #expect(issues.last?.fieldPath == "frames[8999]")
  }
}
