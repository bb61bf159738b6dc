import Foundation
import LIVAMedia
import Testing

@testable import LIVAServer

@Suite("Utterances and speech synthesis")
struct UtteranceTests {
  @Test("the bundled utterances: 3–4 sentences of 2–4 s, small, consistent")
  func bundled() throws {
    let library = try UtteranceLibrary.bundled()
    #expect((3...4).contains(library.utterances.count))
    var bytes = 0
    for utterance in library.utterances {
      #expect((2.0...4.0).contains(utterance.duration), "\(utterance.id)")
      #expect(utterance.sampleRate == 44_100 && utterance.fps == 30)
      #expect(utterance.chunks.count >= 2, "\(utterance.id) should stream in several chunks")
      #expect(utterance.cues.last?.viseme == .x, "speech ends at rest")
      #expect(Set(utterance.cues.map(\.viseme)).count >= 5, "\(utterance.id) moves its mouth")
      for chunk in utterance.chunks {
        bytes += chunk.audio.count
        let mp3 = try MP3Timing(parsing: chunk.audio)
        #expect(mp3.sampleRate == 44_100 && mp3.channelCount == 1)
        // Whole frames: the chunk's audio is exactly its frames' worth of samples.
        #expect(mp3.sampleCount == chunk.frameCount * 1470, "\(utterance.id) chunk")
        #expect((0.5...2.0).contains(Double(chunk.frameCount) / 30))
      }
    }
    #expect(bytes < 400_000)
  }

  @Test("viseme lookup follows the cues, frame k at k/30 s")
  func lookup() throws {
    let cues: [Utterance.Cue] = [
      .init(start: 0, viseme: .x), .init(start: 0.1, viseme: .a), .init(start: 0.2, viseme: .d),
      .init(start: 0.5, viseme: .x),
    ]
    let utterance = try Utterance(
      id: "t", text: "t", totalSamples: 30 * 1470, cues: cues,
      chunks: [.init(audio: Data([1]), startFrame: 0, frameCount: 30)])
    let expected: [(Int, Viseme)] = [
      (0, .x), (2, .x), (3, .a), (5, .a), (6, .d), (14, .d), (15, .x),
    ]
    for (frame, viseme) in expected {
      #expect(utterance.viseme(atFrame: frame) == viseme, "frame \(frame)")
    }
    #expect(utterance.viseme(at: -1) == .x)
    #expect(utterance.frameCount == 30)
  }

  @Test(
    "inconsistent utterances are refused",
    arguments: [
      ([Utterance.Cue(start: 0.1, viseme: .a)], [(0, 30)], 30 * 1470),
      ([Utterance.Cue(start: 0, viseme: .a)], [(0, 10), (11, 20)], 30 * 1470),
      ([Utterance.Cue(start: 0, viseme: .a)], [(0, 10), (10, 10)], 30 * 1470),
      ([Utterance.Cue(start: 0, viseme: .a)], [(0, 30)], 30 * 1470 + 5),
    ])
  func inconsistent(cues: [Utterance.Cue], chunks: [(Int, Int)], samples: Int) {
    #expect(throws: LIVAServerError.self) {
      try Utterance(
        id: "bad", text: "", totalSamples: samples, cues: cues,
        chunks: chunks.map { .init(audio: Data([1]), startFrame: $0.0, frameCount: $0.1) })
    }
  }

  @Test("the best pre-made match shares the most words")
  func bestMatch() throws {
    let library = try UtteranceLibrary.bundled()
    for utterance in library.utterances {
      #expect(library.bestMatch(for: utterance.text)?.id == utterance.id)
    }
    #expect(library.bestMatch(for: "Hello, LIVA!")?.id == "hello")
    #expect(library.bestMatch(for: "goodbye and thanks")?.id == "goodbye")
    // No common word: the closest length, then the first id. "zzz qqq" has 7 characters; the
    // texts of goodbye and lip-sync have 40, lovely-day's 41, hello's 50: goodbye.
    #expect(library.bestMatch(for: "zzz qqq")?.id == "goodbye")
    #expect(UtteranceLibrary(utterances: []).bestMatch(for: "hi") == nil)
  }

  @Test("without synthesis, speak falls back to a pre-made utterance and says why")
  func fallback() async throws {
    let library = try UtteranceLibrary.bundled()
    let off = SpeechSynthesizer(configuration: .init(allowsSynthesis: false), library: library)
    #expect(!off.canSynthesize)
    let speech = try await off.speak("It is a lovely day, isn't it?")
    #expect(speech.source == .premade(id: "lovely-day"))
    #expect(speech.fallbackReason != nil)
    let noTools = SpeechSynthesizer(
      configuration: .init(searchPath: "/nonexistent"), library: library)
    #expect(!noTools.canSynthesize)
    await #expect(throws: LIVAServerError.self) { try await noTools.synthesize("hello") }
    let empty = SpeechSynthesizer(
      configuration: .init(allowsSynthesis: false), library: UtteranceLibrary(utterances: []))
    await #expect(throws: LIVAServerError.self) { try await empty.speak("hello") }
  }

  static let canSynthesize = SpeechSynthesizer(library: UtteranceLibrary(utterances: []))
    .canSynthesize
  /// LIVA_REQUIRE_ALL_TOOLS=1 (CI sets it for scripts/test): a missing tool fails, never skips.
  static let requireAllTools = ProcessInfo.processInfo.environment["LIVA_REQUIRE_ALL_TOOLS"] == "1"

  @Test(
    "run-time synthesis matches the committed utterances (espeak-ng, lame, python3)",
    .enabled(
      if: canSynthesize || requireAllTools,
      "espeak-ng, lame or python3 missing (scripts/setup-speech.sh)"
    ))
  func synthesis() async throws {
    try #require(
      Self.canSynthesize,
      "espeak-ng, lame or python3 is missing, and LIVA_REQUIRE_ALL_TOOLS=1 forbids a skip: run scripts/setup-speech.sh"
    )
    let library = try UtteranceLibrary.bundled()
    let synthesizer = SpeechSynthesizer(library: library)
    let premade = try #require(library.utterance(id: "lovely-day"))
    let speech = try await synthesizer.speak(premade.text)
    #expect(speech.source == .synthesized)
    let made = speech.utterance
    #expect(made.totalSamples == premade.totalSamples)
    #expect(made.cues == premade.cues, "the helper and the committed output agree")
    #expect(made.chunks.map(\.frameCount) == premade.chunks.map(\.frameCount))
    await #expect(throws: LIVAServerError.self) { try await synthesizer.synthesize("   ") }
  }
}
