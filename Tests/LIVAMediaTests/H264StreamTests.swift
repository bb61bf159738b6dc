import Foundation
import LIVATestSupport
import Testing

@testable import LIVAMedia

/// H.264's two framings (Annex B, length-prefixed) and the conversion the Apple codec relies
/// on: hand-made streams with known units, every packet x264 writes converted and decoded back
/// to the same pictures, and random bytes that never crash it.
@Suite("H.264 stream framing")
struct H264StreamTests {
  func units(_ bytes: [UInt8]) -> [[UInt8]] {
    bytes.withUnsafeBytes { raw in H264Stream.annexBUnits(raw).map { Array(bytes[$0]) } }
  }

  @Test("Annex B units: three- and four-byte start codes, leading bytes and trailing zeros dropped")
  func annexBUnits() {
    let stream: [UInt8] = [
      0xAA, 0x00,  // before the first start code: not a unit
      0, 0, 0, 1, 0x67, 0x42, 0x00, 0x1F,  // SPS (a zero inside, no start code)
      0, 0, 1, 0x68, 0xCE,  // PPS after a three-byte start code
      0, 0, 0, 1, 0x09, 0xF0,  // access unit delimiter
      // IDR (an emulation prevention byte inside), then trailing zeros
      0, 0, 0, 1, 0x65, 0x88, 0x84, 0x00, 0x00, 0x03, 0x01, 0x21, 0x00, 0x00,
    ]
    #expect(
      units(stream) == [
        [0x67, 0x42, 0x00, 0x1F], [0x68, 0xCE], [0x09, 0xF0],
        [0x65, 0x88, 0x84, 0x00, 0x00, 0x03, 0x01, 0x21],
      ])
    #expect(units([]).isEmpty)
    #expect(units([0, 0, 1]).isEmpty)
    #expect(units([1, 2, 3, 0, 0]).isEmpty)
    #expect(units([0, 0, 1, 0x41, 0, 0, 1]) == [[0x41]])
  }

  @Test("taken apart: parameter sets aside, delimiters dropped, the rest after 4-byte lengths")
  func lengthPrefixed() throws {
    let stream: [UInt8] = [
      0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x67, 0x42, 0, 0, 1, 0x68, 0xCE,
      0, 0, 1, 0x06, 0x05, 0x01, 0, 0, 0, 1, 0x65, 0x88, 0x84,
    ]
    let packet = try stream.withUnsafeBytes { try H264Stream.lengthPrefixed(annexB: $0) }
    #expect(packet.sequenceParameterSets == [Data([0x67, 0x42])])
    #expect(packet.pictureParameterSets == [Data([0x68, 0xCE])])
    #expect(packet.sample == Data([0, 0, 0, 3, 0x06, 0x05, 0x01, 0, 0, 0, 3, 0x65, 0x88, 0x84]))
    #expect(packet.isKey)
    let predicted = try [UInt8]([0, 0, 1, 0x41, 0x9A]).withUnsafeBytes {
      try H264Stream.lengthPrefixed(annexB: $0)
    }
    #expect(!predicted.isKey && predicted.sample == Data([0, 0, 0, 2, 0x41, 0x9A]))
    #expect(throws: LIVAMediaError.self) {
      try [UInt8]([7, 7, 7]).withUnsafeBytes { try H264Stream.lengthPrefixed(annexB: $0) }
    }
  }

  @Test("back to Annex B from 1-, 2- and 4-byte lengths; lengths past the end are refused")
  func annexBFromLengths() throws {
    let sets = [Data([0x67, 0x42]), Data([0x68, 0xCE])]
    let expected = Data([0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x68, 0xCE, 0, 0, 0, 1, 0x65, 0x88])
    for (size, sample) in [
      (1, [2, 0x65, 0x88]), (2, [0, 2, 0x65, 0x88]), (4, [0, 0, 0, 2, 0x65, 0x88]),
    ] as [(Int, [UInt8])] {
      let packet = try sample.withUnsafeBytes {
        try H264Stream.annexB(lengthPrefixed: $0, lengthSize: size, parameterSets: sets)
      }
      #expect(packet == expected, "\(size)-byte lengths")
    }
    for (size, sample) in [
      (4, [0, 0, 0, 3, 0x65, 0x88]), (4, [0, 0, 0]), (2, [0, 0, 0x65]), (3, [0, 0, 1, 0x65]),
    ] as [(Int, [UInt8])] {
      #expect(throws: LIVAMediaError.self, "\(sample) with \(size)-byte lengths") {
        try sample.withUnsafeBytes { try H264Stream.annexB(lengthPrefixed: $0, lengthSize: size) }
      }
    }
  }

  @Test(
    "every packet x264 writes, taken apart and put back, decodes to the same pictures",
    .enabled(if: PlaybackFormTests.codecAvailable || PlaybackFormTests.codecRequired))
  func roundTripThroughTheDecoder() throws {
    try requireTool(PlaybackFormTests.codecAvailable, "the FFmpeg of scripts/setup-video.sh")
    let frames = (0..<9).map { PlaybackFormTests.frame($0) }
    let form = try PlaybackFormTests().encode(frames, keyInterval: 4)
    var rebuilt: [(packet: Data, isKey: Bool)] = []
    for index in 0..<form.frameCount {
      let packet = try form.bytes.withUnsafeBytes { bytes in
        try H264Stream.lengthPrefixed(
          annexB: UnsafeRawBufferPointer(rebasing: bytes[form.packets[index]]))
      }
      #expect(packet.isKey == form.keys[index], "frame \(index)")
      // Key frames carry their parameter sets, as the Apple encoder's packets will.
      #expect(packet.isKey == !packet.sequenceParameterSets.isEmpty, "frame \(index)")
      let back = try packet.sample.withUnsafeBytes {
        try H264Stream.annexB(
          lengthPrefixed: $0, lengthSize: 4,
          parameterSets: packet.sequenceParameterSets + packet.pictureParameterSets)
      }
      rebuilt.append((back, packet.isKey))
    }
    let again = try PlaybackForm(
      width: form.width, height: form.height, keyInterval: form.keyInterval, packets: rebuilt)
    let order = [0, 1, 2, 3, 4, 8, 5, 6, 7]
    let original = try PlaybackFormTests().decode(form, order)
    #expect(try PlaybackFormTests().decode(again, order) == original)
    #expect(PlaybackForm.fidelity(of: original[5], to: frames[8]) > 30)
  }

  @Test("random bytes: units stay inside the input and tile it; never a crash")
  func randomBytes() {
    var random = SplitMix64(seed: RunSeed.value)
    for _ in 0..<3_000 {
      let count = Int.random(in: 0...64, using: &random)
      // Zeros and ones often, so that start codes and short lengths come up.
      let bytes = (0..<count).map { _ in
        UInt8.random(in: 0...3, using: &random) == 0
          ? UInt8.random(in: 0...255, using: &random) : UInt8.random(in: 0...1, using: &random)
      }
      bytes.withUnsafeBytes { raw in
        let found = H264Stream.annexBUnits(raw)
        #expect(found.allSatisfy { !$0.isEmpty && $0.upperBound <= count })
        #expect(zip(found, found.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound })
        _ = try? H264Stream.lengthPrefixed(annexB: raw)
        for size in [1, 2, 4] {
          guard let tiles = try? H264Stream.lengthPrefixedUnits(raw, lengthSize: size) else {
            continue
          }
          var offset = 0
          for tile in tiles {
            #expect(tile.lowerBound == offset + size && !tile.isEmpty)
            offset = tile.upperBound
          }
          #expect(offset == count)
        }
      }
    }
  }
}
