import LIVATestSupport
import Testing

@testable import SocketIO

/// A seeded mutation fuzzer for the packet decoder: mutates valid packets (byte flips,
/// insertions of grammar tokens, deletions, duplications, truncations) and checks that every
/// input either decodes or throws a ``SocketIOError``, that nothing crashes or hangs (the
/// budget is a fixed number of inputs), and that whatever decodes re-encodes to an equal packet.
@Suite("Codec fuzzing")
struct CodecFuzzTests {
  static let corpus: [String] = [
    "0", "0{\"token\":\"abc\"}", "0/admin,{\"sid\":\"x\"}", "0/a?b=c,{}", "1", "1/admin,",
    "2[\"hello\",1,\"a-b\"]", "2/admin,12[\"x\",{\"y\":[1,2.5,true,null]}]", "3456[]",
    "3/n,7[\"ok\",{\"n\":-1e3}]", "4{\"message\":\"no\"}",
    "51-[\"img\",{\"_placeholder\":true,\"num\":0}]",
    "62-/m,9[{\"a\":[{\"num\":1,\"_placeholder\":true}]},{\"_placeholder\":true,\"num\":0}]",
    "2[\"esc\",\"\\u00e9\\ud83d\\ude00\\n\\\"\"]",
    "2[\"receive_audio\",{\"chunk_index\":0,\"animationFramesChunk\":[{\"sections\":[[{\"frame_index\":1}]]}]}]",
  ]

  static let tokens: [String] = [
    "[", "]", "{", "}", "\"", ",", ":", "-", "/", "?", "\\", "\\u", "\\ud800", "0", "9",
    "99999999999", "_placeholder", "true", "num", "null", "1e999", "-0", ".", "e", " ", "é",
  ]

  static func mutate(_ input: [UInt8], using generator: inout SplitMix64) -> [UInt8] {
    var bytes = input
    let rounds = Int.random(in: 1...4, using: &generator)
    for _ in 0..<rounds {
      let position = bytes.isEmpty ? 0 : Int.random(in: 0...bytes.count, using: &generator)
      switch Int.random(in: 0..<6, using: &generator) {
      case 0 where position < bytes.count:
        bytes[position] = UInt8.random(in: 0...255, using: &generator)
      case 1:
        let token = tokens.randomElement(using: &generator)!
        bytes.insert(contentsOf: Array(token.utf8), at: position)
      case 2 where position < bytes.count:
        let length = Int.random(in: 1...min(8, bytes.count - position), using: &generator)
        bytes.removeSubrange(position..<(position + length))
      case 3 where position < bytes.count:
        let length = Int.random(in: 1...min(16, bytes.count - position), using: &generator)
        let copy = Array(bytes[position..<(position + length)])
        let times = Int.random(in: 1...40, using: &generator)
        for _ in 0..<times { bytes.insert(contentsOf: copy, at: position) }
      case 4:
        bytes = Array(bytes.prefix(position))
      default:
        bytes.insert(UInt8(ascii: "0") + UInt8.random(in: 0...9, using: &generator), at: position)
      }
    }
    return bytes
  }

  @Test(
    "mutated packets never crash and what decodes round-trips", arguments: [1] + RunSeed.seeds(3))
  func fuzzDecoder(seed: UInt64) throws {
    var generator = SplitMix64(seed: seed)
    let limits = SocketIOLimits(
      maximumAttachments: 8, maximumPayloadBytes: 64 << 10, maximumNestingDepth: 32)
    var decoded = 0
    var rejected = 0
    for _ in 0..<5_000 {
      let seedText = Self.corpus.randomElement(using: &generator)!
      let text = String(
        decoding: Self.mutate(Array(seedText.utf8), using: &generator), as: UTF8.self)
      var decoder = SocketIOPacketDecoder(limits: limits)
      do {
        var packet = try decoder.decode(text: text)
        var fed = 0
        while packet == nil, decoder.isAwaitingAttachments, fed < 10 {
          let attachment = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
            UInt8.random(in: 0...255, using: &generator)
          }
          packet = try decoder.decode(attachment: attachment)
          fed += 1
        }
        guard let packet else { continue }
        decoded += 1
        // What decodes must re-encode to a packet that decodes to the same value.
        let (encoded, attachments) = packet.encode()
        var again = SocketIOPacketDecoder(limits: SocketIOLimits(maximumPayloadBytes: 1 << 20))
        var result = try again.decode(text: encoded)
        for attachment in attachments { result = try again.decode(attachment: attachment) }
        #expect(
          result == packet, "round trip of \(text.debugDescription) via \(encoded.debugDescription)"
        )
      } catch {
        rejected += 1
      }
    }
    // The mutator must exercise both paths, or the harness proves nothing.
    #expect(decoded > 100)
    #expect(rejected > 100)
  }

  @Test("mutated Engine.IO frames never crash")
  func fuzzEngineIO() {
    var generator = SplitMix64(seed: RunSeed.seeds(1)[0] ^ 99)
    let seeds = [
      "0{\"sid\":\"a\",\"upgrades\":[],\"pingInterval\":25000,\"pingTimeout\":20000,\"maxPayload\":1000000}",
      "2", "3probe", "42[\"x\"]", "6",
    ]
    var opened = 0
    for _ in 0..<3_000 {
      let seedText = seeds.randomElement(using: &generator)!
      let text = String(
        decoding: Self.mutate(Array(seedText.utf8), using: &generator), as: UTF8.self)
      guard let packet = try? EngineIOPacket(frame: .text(text)) else { continue }
      if case .open = packet { opened += 1 }
      // What decodes, encodes to a frame that decodes to the same packet.
      #expect((try? EngineIOPacket(frame: packet.frame)) == packet, "\(text)")
    }
    #expect(opened > 0)
  }
}
