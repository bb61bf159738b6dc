import Foundation
import Testing

@testable import LIVAMedia

/// The PCM an MP3 chunk may decode to is decided from its headers, before decoding.
@Suite("PCM budget: an MP3 chunk's decoded size bounded before decoding")
struct PCMBudgetTests {
  /// One MPEG-2 Layer III frame header at 8 kbit/s, 22,050 Hz, mono, no padding: 576 samples
  /// in 26 bytes, the densest seconds-per-byte a stream can have.
  static func lowBitRateStream(bytes: Int) -> Data {
    let header: [UInt8] = [0xFF, 0xF3, 0x10, 0xC0]  // MPEG-2, layer III, 8 kbit/s, 22.05 kHz
    let frameLength = 26  // 72 × 8000 / 22050, rounded down
    let frame = header + [UInt8](repeating: 0, count: frameLength - header.count)
    var data = Data()
    while data.count + frameLength <= bytes { data.append(contentsOf: frame) }
    return data
  }

  @Test("2 MiB of low-bit-rate MP3 (over 30 minutes) is refused before decoding, not 370 MB of PCM")
  func hostileChunkRefused() throws {
    let data = Self.lowBitRateStream(bytes: 2 << 20)
    let timing = try MP3Timing(parsing: data)
    #expect(timing.duration > 1_800, "\(timing.duration) s")
    #expect {
      _ = try PCMBudget().frames(for: data, at: 44_100)
    } throws: { ($0 as? LIVAMediaError)?.code == .limitExceeded }
  }

  @Test("a real chunk gets its length in frames at the output rate, with one MP3 frame of slack")
  func realChunk() throws {
    let data = try TestSupport.fixture("mpeg2-22050-mono-7001.mp3")
    let timing = try MP3Timing(parsing: data)
    let frames = try PCMBudget().frames(for: data, at: 44_100)
    let exact = Double(timing.frameCount * timing.samplesPerFrame) / 22_050 * 44_100
    #expect(frames >= Int(exact) && frames <= Int(exact) + timing.samplesPerFrame + 1)
    #expect(frames >= timing.sampleCount * 2)
  }

  @Test("no rate, no MP3: typed errors", arguments: [0, -1, .nan, .infinity, 1e12])
  func badRate(rate: Double) throws {
    let data = try TestSupport.fixture("mpeg2-22050-mono-7001.mp3")
    #expect(throws: LIVAMediaError.self) { _ = try PCMBudget().frames(for: data, at: rate) }
    #expect(throws: LIVAMediaError.self) {
      _ = try PCMBudget().frames(for: Data(count: 99), at: 44_100)
    }
  }
}
