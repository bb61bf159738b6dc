import Foundation
import LIVATestSupport
import Testing

@testable import LIVAProtocol

@Suite("Base64 decoding")
struct Base64Tests {
  static let cases: [(String, [UInt8]?)] = [
    ("", []),
    ("TQ==", [0x4D]),
    ("TQ", [0x4D]),
    ("TWE=", [0x4D, 0x61]),
    ("TWE", [0x4D, 0x61]),
    ("TWFu", [0x4D, 0x61, 0x6E]),
    ("TWFuTQ==", [0x4D, 0x61, 0x6E, 0x4D]),
    ("+/+/", [0xFB, 0xFF, 0xBF]),
    ("AAAA", [0, 0, 0]),
    // Not base64:
    ("T", nil),  // one character cannot hold a byte
    ("TWFuT", nil),
    ("=", nil),
    ("==", nil),
    ("TQ=", [0x4D]),  // padding is ignored, as Foundation ignores it
    ("TWFu==", [0x4D, 0x61, 0x6E]),
    ("TQ===", nil),
    ("T=Q=", nil),  // `=` inside
    ("TW=u", nil),
    ("TW u", nil),  // whitespace
    ("TWFu\n", nil),
    ("-_-_", nil),  // URL-safe alphabet
    ("TWF\u{00E9}", nil),  // a non-ASCII character
    ("TWFu\0AAA", nil),
  ]

  @Test("known inputs", arguments: cases)
  func known(_ text: String, _ expected: [UInt8]?) {
    #expect(Base64.decode(text[...].utf8).map { [UInt8]($0) } == expected)
  }

  @Test("agrees with Foundation's encoder on every length, padded or not")
  func roundTrip() {
    var generator = SplitMix64(seed: RunSeed.seeds(1)[0] ^ 64)
    for length in 0..<600 {
      let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
      let encoded = Data(bytes).base64EncodedString()
      #expect(Base64.decode(encoded[...].utf8) == Data(bytes), "length \(length)")
      let unpadded = String(encoded.prefix { $0 != "=" })
      #expect(Base64.decode(unpadded[...].utf8) == Data(bytes), "length \(length), no padding")
    }
  }

  @Test("agrees with Foundation's decoder on mutated input")
  func mutations() {
    var generator = SplitMix64(seed: RunSeed.seeds(1)[0] ^ 65)
    let alphabet = Array(
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \n-_".utf8)
    var compared = 0
    for round in 0..<3_000 {
      let length = Int.random(in: 0..<40, using: &generator)
      var encoded = Array(
        Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
          .base64EncodedString().utf8)
      for _ in 0..<Int.random(in: 0...2, using: &generator) where !encoded.isEmpty {
        let at = Int.random(in: 0..<encoded.count, using: &generator)
        switch Int.random(in: 0..<3, using: &generator) {
        case 0: encoded[at] = alphabet.randomElement(using: &generator)!
        case 1: encoded.remove(at: at)
        default: encoded.insert(alphabet.randomElement(using: &generator)!, at: at)
        }
      }
      let ours = Base64.decode(encoded)
      let foundation = Data(base64Encoded: Data(encoded))
      // Where Foundation accepts padded text with `=` only at the end, we must agree byte
      // for byte (it also accepts text after an inner `=`, which we refuse).
      let body = encoded.prefix { $0 != UInt8(ascii: "=") }
      let paddedAtEnd = encoded[body.count...].allSatisfy { $0 == UInt8(ascii: "=") }
      if let foundation, paddedAtEnd, encoded.count - body.count <= 2 {
        #expect(ours == foundation, "round \(round): \(encoded)")
        compared += 1
      }
      // When we accept, the input must be alphabet characters with only trailing `=`.
      if ours != nil {
        #expect(body.allSatisfy { alphabet[0..<64].contains($0) }, "round \(round)")
        #expect(encoded.count - body.count <= 2, "round \(round)")
      }
    }
    // Unmutated rounds alone are a third: the byte-for-byte comparison ran that often at least.
    #expect(compared > 900, "\(compared) rounds compared with Foundation")
  }
}
