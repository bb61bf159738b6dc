import Foundation
import LIVATestSupport
import Testing

@testable import SocketIO

/// Packets built to make the decoder hold as much as they can, each measured against the
/// budget `SocketIOLimits` states. Serialized: the heap is measured, so neighbours allocating
/// at the same time must stay few.
@Suite("Hostile packets: memory stays within the budget whatever the bytes", .serialized)
struct HostilePacketMemoryTests {
  static let mebibyte = 1 << 20

  private func decode(_ text: String, _ attachments: [[UInt8]] = []) throws(SocketIOError)
    -> SocketIOPacket?
  {
    var decoder = SocketIOPacketDecoder()
    var packet = try decoder.decode(text: text)
    for attachment in attachments { packet = try decoder.decode(attachment: attachment) }
    return packet
  }

  @Test("2,000 placeholders of one 2 MiB attachment hold it once (was 4.1 GB)")
  func placeholdersShareTheirAttachment() throws {
    let placeholders = Array(repeating: #"{"_placeholder":true,"num":0}"#, count: 2000)
    let text = #"51-["audio",["# + placeholders.joined(separator: ",") + "]]"
    let attachment = [UInt8](repeating: 7, count: 2 * Self.mebibyte)
    let (packet, growth) = try Heap.growth(attempts: 8, budget: 16 * Self.mebibyte) {
      try decode(text, [attachment])
    }
    let values = try #require(packet?.payload?[1]?.arrayValue)
    #expect(values.count == 2000)
    let addresses = Set(
      values.map { value in
        value.binaryValue?.withUnsafeBytes { Int(bitPattern: $0.baseAddress) } ?? 0
      })
    #expect(addresses.count == 1, "each placeholder copied the attachment")
    #expect(values.last?.binaryValue?.count == 2 * Self.mebibyte)
    if let growth {
      #expect(growth < 16 * Self.mebibyte, "\(growth) bytes held")
    } else {
      #expect(!Heap.measures, "no heap figure where the C library gives one")
    }
  }

  @Test("15 MB of empty objects is refused as too large, and holds nothing (was 3.6 GB)")
  func emptyObjectsFlood() throws {
    let count = 5_000_000
    let text = #"2["e",["# + Array(repeating: "{}", count: count).joined(separator: ",") + "]]"
    let (code, growth) = Heap.growth(attempts: 8, budget: 4 * Self.mebibyte) {
      () -> SocketIOError.Code? in
      do {
        _ = try decode(text)
        return nil
      } catch let error as SocketIOError {
        return error.code
      } catch {
        return nil
      }
    }
    #expect(code == .payloadTooLarge)
    if let growth {
      #expect(growth < 4 * Self.mebibyte, "\(growth) bytes held")
    } else {
      #expect(!Heap.measures, "no heap figure where the C library gives one")
    }
  }

  /// The worst documents the value limit still admits: every value a container, empty and
  /// with one member. What they hold bounds what any refused document held before it was
  /// refused.
  @Test(
    "the most values a packet may hold, in the costliest shapes: under 64 MiB decoded",
    arguments: [#"{}"#, #"[]"#, #"{"a":0}"#, #"[0]"#, #""""#])
  func worstAdmittedShapes(element: String) throws {
    let valuesEach = element.count > 2 ? 2 : 1  // a container and its one member
    let count = (SocketIOLimits.default.maximumValues - 3) / valuesEach
    let text = #"2["e",["# + Array(repeating: element, count: count).joined(separator: ",") + "]]"
    #expect(text.utf8.count <= SocketIOLimits.default.maximumPayloadBytes)
    let (packet, growth) = try Heap.growth(attempts: 8, budget: 64 * Self.mebibyte) {
      try decode(text)
    }
    #expect(packet?.payload?[1]?.arrayValue?.count == count)
    if let growth {
      #expect(growth < 64 * Self.mebibyte, "\(growth) bytes held")
    } else {
      #expect(!Heap.measures, "no heap figure where the C library gives one")
    }
    // One value more is refused.
    let over =
      #"2["e",["# + Array(repeating: element, count: count + 1).joined(separator: ",")
      + "]]"
    #expect(throws: SocketIOError.self) { try decode(over) }
  }
}
