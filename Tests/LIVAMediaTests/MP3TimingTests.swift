import Foundation
import LIVATestSupport
import Testing

@testable import LIVAMedia

@Suite("MP3 timing")
struct MP3TimingTests {
  @Test(
    "lame-made fixtures give the encoded sample count within one sample",
    arguments: [
      ("mpeg1-44100-mono-10000.mp3", MP3Timing.Version.mpeg1, 44100, 10000),
      ("mpeg2-22050-mono-7001.mp3", .mpeg2, 22050, 7001),
      ("mpeg25-8000-mono-3333.mp3", .mpeg25, 8000, 3333),
      ("mpeg1-44100-vbr-12345.mp3", .mpeg1, 44100, 12345),
    ])
  func fixtures(name: String, version: MP3Timing.Version, rate: Int, samples: Int) throws {
    let timing = try MP3Timing(parsing: try TestSupport.fixture(name))
    #expect(timing.version == version)
    #expect(timing.sampleRate == rate)
    #expect(timing.channelCount == 1)
    #expect(timing.hasInfoFrame)
    #expect(timing.encoderDelay != nil)
    #expect(abs(timing.sampleCount - samples) <= 1)
    #expect(abs(timing.duration - Double(samples) / Double(rate)) <= 1 / Double(rate))
    #expect(timing.trailingBytes == 0)
  }

  /// Layer III frame lengths from the MP3 specification (ISO 11172-3, 13818-3), worked out by
  /// hand, not by the parser under test: `144 × bitrate / rate` bytes for MPEG-1 (1152 samples),
  /// `72 × bitrate / rate` for MPEG-2 and 2.5 (576 samples), rounded down, one more when padded.
  @Test(
    "synthesized CBR streams: frame count times samples per frame",
    arguments: [
      // 128 kbit/s, 44.1 kHz: 144 × 128000 / 44100 = 417.96 → 417 bytes, 418 padded.
      (
        MP3Synth.Format(version: .mpeg1, rateIndex: 0, bitrateIndex: 9, mono: false, bytes: 417),
        44100, 1152
      ),
      // 320 kbit/s, 48 kHz: 960.
      (
        MP3Synth.Format(version: .mpeg1, rateIndex: 1, bitrateIndex: 14, mono: true, bytes: 960),
        48000, 1152
      ),
      // 32 kbit/s, 32 kHz: 144.
      (
        MP3Synth.Format(version: .mpeg1, rateIndex: 2, bitrateIndex: 1, mono: false, bytes: 144),
        32000, 1152
      ),
      // 64 kbit/s, 22.05 kHz: 72 × 64000 / 22050 = 208.98 → 208.
      (
        MP3Synth.Format(version: .mpeg2, rateIndex: 0, bitrateIndex: 8, mono: true, bytes: 208),
        22050, 576
      ),
      // 160 kbit/s, 16 kHz: 720.
      (
        MP3Synth.Format(version: .mpeg2, rateIndex: 2, bitrateIndex: 14, mono: false, bytes: 720),
        16000, 576
      ),
      // 16 kbit/s, 8 kHz: 144.
      (
        MP3Synth.Format(version: .mpeg25, rateIndex: 2, bitrateIndex: 2, mono: true, bytes: 144),
        8000, 576
      ),
      // 40 kbit/s, 11.025 kHz: 72 × 40000 / 11025 = 261.2 → 261.
      (
        MP3Synth.Format(version: .mpeg25, rateIndex: 0, bitrateIndex: 5, mono: false, bytes: 261),
        11025, 576
      ),
    ])
  func synthesizedCBR(format: MP3Synth.Format, rate: Int, samplesPerFrame: Int) throws {
    let data = MP3Synth.stream(format, frames: 37)
    // Every third frame is padded (12 of 37).
    #expect(data.count == 37 * format.bytes + 12)
    let timing = try MP3Timing(parsing: data)
    #expect(timing.trailingBytes == 0)
    #expect(timing.sampleRate == rate)
    #expect(timing.samplesPerFrame == samplesPerFrame)
    #expect(timing.channelCount == (format.mono ? 1 : 2))
    #expect(timing.frameCount == 37)
    #expect(timing.sampleCount == 37 * samplesPerFrame)
    #expect(timing.encoderDelay == nil && !timing.hasInfoFrame)
  }

  @Test("Xing/Info + LAME tag: delay and padding are subtracted, the tag frame is not audio")
  func lameTag() throws {
    for format in [
      MP3Synth.Format(version: .mpeg1, rateIndex: 0, bitrateIndex: 9, mono: true, bytes: 417),
      MP3Synth.Format(version: .mpeg2, rateIndex: 0, bitrateIndex: 8, mono: false, bytes: 208),
    ] {
      let data = MP3Synth.stream(format, frames: 20, lameDelay: 576, lamePadding: 1234)
      let timing = try MP3Timing(parsing: data)
      #expect(timing.hasInfoFrame)
      #expect(timing.frameCount == 20)
      #expect(timing.encoderDelay == 576 && timing.encoderPadding == 1234)
      #expect(timing.sampleCount == 20 * timing.samplesPerFrame - 576 - 1234)
    }
  }

  @Test("ID3v2 at the start and ID3v1 at the end are skipped")
  func tags() throws {
    let format = MP3Synth.Format(
      version: .mpeg1, rateIndex: 0, bitrateIndex: 9, mono: false, bytes: 417)
    var data = Data("ID3".utf8) + Data([4, 0, 0, 0, 0, 1, 0])  // 128-byte body (syncsafe)
    data += Data(repeating: 0xFF, count: 128)  // sync-like bytes inside the tag are skipped
    data += MP3Synth.stream(format, frames: 5)
    data += Data("TAG".utf8) + Data(repeating: 0x20, count: 125)
    let timing = try MP3Timing(parsing: data)
    #expect(timing.frameCount == 5)
    #expect(timing.trailingBytes == 0)
  }

  @Test("a truncated last frame is not counted")
  func truncatedLastFrame() throws {
    let format = MP3Synth.Format(
      version: .mpeg1, rateIndex: 0, bitrateIndex: 9, mono: false, bytes: 417)
    let data = MP3Synth.stream(format, frames: 6)
    let timing = try MP3Timing(parsing: data.prefix(data.count - 100))
    #expect(timing.frameCount == 5)
    #expect(timing.trailingBytes > 0)
  }

  @Test(
    "one whole frame and the first bytes of the next: one frame and trailing bytes, whatever their count",
    arguments: 0...5)
  func wholeFrameThenPartOfTheNext(extra: Int) throws {
    let format = MP3Synth.Format(
      version: .mpeg1, rateIndex: 0, bitrateIndex: 9, mono: false, bytes: 417)
    let data = MP3Synth.stream(format, frames: 2)
    let timing = try MP3Timing(parsing: data.prefix(417 + extra))
    #expect(timing.frameCount == 1)
    #expect(timing.trailingBytes == extra)
  }

  @Test(
    "garbage is notMP3",
    arguments: [
      Data(), Data([0xFF]), Data([0xFF, 0xFB, 0x90, 0x00]), Data("hello, world".utf8),
      Data(repeating: 0xFF, count: 5000),
      // A Layer II header.
      Data([0xFF, 0xFD, 0x90, 0x00]) + Data(repeating: 0, count: 500),
    ])
  func garbage(data: Data) {
    #expect {
      try MP3Timing(parsing: data)
    } throws: { ($0 as? LIVAMediaError)?.code == .notMP3 }
  }

  @Test("random bytes and every prefix of a real file never crash")
  func fuzz() throws {
    var generator = SplitMix64(seed: RunSeed.seeds(1)[0] ^ 7)
    for length in [10, 500, 5000] {
      let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
      #expect(throws: LIVAMediaError.self) { try MP3Timing(parsing: Data(bytes)) }
    }
    let real = try TestSupport.fixture("mpeg2-22050-mono-7001.mp3")
    var parsed = 0
    var samples = 0
    for length in 0...real.count {
      do {
        let timing = try MP3Timing(parsing: real.prefix(length))
        // Each longer prefix holds the same complete frames or more: never fewer samples.
        #expect(timing.sampleCount >= samples && timing.sampleCount <= 7001, "\(length) bytes")
        samples = timing.sampleCount
        parsed += 1
      } catch {
        // Too short to hold one whole frame.
        #expect(error.code == .notMP3, "\(length) bytes: \(error)")
        #expect(parsed == 0, "\(length) bytes refused after a shorter prefix parsed")
      }
    }
    // The whole file, the longest prefix, is 7001 samples.
    #expect(samples == 7001)
    #expect(parsed > real.count / 2)
  }
}

/// Builds MP3 streams for header parsing: valid frame headers, zeroed side info and payload,
/// and optionally a first Info frame with a LAME extension. Lengths and side-info sizes are the
/// specification's, given by the tests: nothing here asks the parser under test.
enum MP3Synth {
  struct Format: Sendable, CustomTestStringConvertible {
    var version: MP3Timing.Version
    var rateIndex: Int
    var bitrateIndex: Int
    var mono: Bool
    /// The frame's length in bytes without padding, from the specification.
    var bytes: Int
    var testDescription: String { "\(version) rate#\(rateIndex) bitrate#\(bitrateIndex)" }

    /// Layer III side information after the 4-byte header: 32 bytes (17 mono) for MPEG-1,
    /// 17 (9 mono) for MPEG-2 and 2.5.
    var sideInfoBytes: Int {
      switch (version, mono) {
      case (.mpeg1, false): 32
      case (.mpeg1, true): 17
      case (_, false): 17
      case (_, true): 9
      }
    }
  }

  static func header(_ format: Format, padding: Bool) -> [UInt8] {
    let versionBits: UInt8 =
      switch format.version {
      case .mpeg1: 3
      case .mpeg2: 2
      case .mpeg25: 0
      }
    return [
      0xFF, 0xE0 | versionBits << 3 | 1 << 1 | 1,  // Layer III, no CRC
      UInt8(format.bitrateIndex) << 4 | UInt8(format.rateIndex) << 2 | (padding ? 2 : 0),
      format.mono ? 0xC0 : 0x00,
    ]
  }

  static func frame(_ format: Format, padding: Bool) -> [UInt8] {
    header(format, padding: padding)
      + [UInt8](repeating: 0, count: format.bytes + (padding ? 1 : 0) - 4)
  }

  static func stream(_ format: Format, frames: Int, lameDelay: Int? = nil, lamePadding: Int = 0)
    -> Data
  {
    var data = [UInt8]()
    if let lameDelay {
      var info = frame(format, padding: false)
      let sideInfo = format.sideInfoBytes
      var tag = Array("Info".utf8) + [0, 0, 0, 0x0F]
      tag += [0, 0, 0, UInt8(frames)] + [0, 0, 0x10, 0] + [UInt8](repeating: 0, count: 100)
      tag += [0, 0, 0, 50]
      var lame = Array("LAME3.100".utf8) + [UInt8](repeating: 0, count: 12)
      lame += [
        UInt8(lameDelay >> 4), UInt8((lameDelay & 0x0F) << 4 | lamePadding >> 8),
        UInt8(lamePadding & 0xFF),
      ]
      tag += lame
      info.replaceSubrange((4 + sideInfo)..<(4 + sideInfo + tag.count), with: tag)
      data += info
    }
    for index in 0..<frames {
      data += frame(format, padding: index % 3 == 1)
    }
    return Data(data)
  }
}
