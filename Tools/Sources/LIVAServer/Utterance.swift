import Foundation
import LIVAMedia

/// Speech ready to stream: its audio as chunk MP3s of whole frames, and its viseme timing.
///
/// On disk (as `make_utterance.py` writes it) an utterance is a directory holding
/// `timing.json` and the chunk files it names:
/// ```json
/// {"format": 1, "id": "hello", "text": "Hello! ...", "voice": "en-us",
///  "sample_rate": 44100, "fps": 30, "total_samples": 133770, "speech_seconds": 3.02,
///  "visemes": [{"start": 0.0, "viseme": "X"}, {"start": 0.011, "viseme": "C"}, ...],
///  "phonemes": [{"start": 0.011, "phoneme": "h"}, ...],
///  "chunks": [{"file": "chunk_000.mp3", "start_frame": 0, "frames": 46, "samples": 67620}, ...]}
/// ```
/// Chunk `k` holds exactly `frames × sample_rate / fps` samples, so its overlay frame `j`
/// belongs at `j / fps` seconds into its own audio, and at `(start_frame + j) / fps` seconds
/// into the utterance.
public struct Utterance: Hashable, Sendable {
  /// A viseme that starts at a time and lasts until the next cue.
  public struct Cue: Hashable, Sendable, Codable {
    /// Seconds from the start of the utterance.
    public var start: Double
    /// The mouth shape from then on.
    public var viseme: Viseme

    /// Creates a cue.
    public init(start: Double, viseme: Viseme) {
      self.start = start
      self.viseme = viseme
    }
  }

  /// One chunk of the audio: whole frames, one MP3.
  public struct Chunk: Hashable, Sendable {
    /// The MP3 bytes.
    public var audio: Data
    /// The utterance frame this chunk starts at.
    public var startFrame: Int
    /// How many frames (at the utterance's fps) the chunk lasts.
    public var frameCount: Int

    /// Creates a chunk.
    public init(audio: Data, startFrame: Int, frameCount: Int) {
      self.audio = audio
      self.startFrame = startFrame
      self.frameCount = frameCount
    }
  }

  /// A short identifier, e.g. `hello` (`synthesized` for run-time speech).
  public var id: String
  /// What is said.
  public var text: String
  /// Audio samples per second (44,100).
  public var sampleRate: Int
  /// Frames per second of the lip-sync (30).
  public var fps: Int
  /// The audio's length in samples: a whole number of frames.
  public var totalSamples: Int
  /// The viseme timeline, sorted by start, the first at 0.
  public var cues: [Cue]
  /// The audio chunks, contiguous and in order.
  public var chunks: [Chunk]

  /// Creates an utterance, checking that it is consistent: positive rates with `fps`
  /// dividing `sampleRate`, a whole number of frames, cues sorted from 0, chunks contiguous
  /// from frame 0 covering every frame, and no empty audio.
  public init(
    id: String, text: String, sampleRate: Int = 44_100, fps: Int = 30, totalSamples: Int,
    cues: [Cue], chunks: [Chunk]
  ) throws(LIVAServerError) {
    func fail(_ message: String) -> LIVAServerError {
      LIVAServerError(.invalidUtterance, message, location: "utterance \(id)")
    }
    guard sampleRate > 0, fps > 0, sampleRate % fps == 0 else {
      throw fail("\(fps) fps does not divide \(sampleRate) Hz")
    }
    let samplesPerFrame = sampleRate / fps
    guard totalSamples > 0, totalSamples % samplesPerFrame == 0 else {
      throw fail("\(totalSamples) samples are not a whole number of frames")
    }
    guard let first = cues.first, first.start == 0,
      zip(cues, cues.dropFirst()).allSatisfy({ $0.start <= $1.start }),
      cues.allSatisfy({ $0.start.isFinite })
    else {
      throw fail("the viseme cues must be sorted and start at 0")
    }
    var nextFrame = 0
    for (index, chunk) in chunks.enumerated() {
      guard chunk.startFrame == nextFrame, chunk.frameCount > 0, !chunk.audio.isEmpty else {
        throw fail("chunk \(index) does not continue at frame \(nextFrame) with audio")
      }
      nextFrame += chunk.frameCount
    }
    guard nextFrame * samplesPerFrame == totalSamples else {
      throw fail(
        "the chunks cover \(nextFrame) frames, the audio \(totalSamples / samplesPerFrame)")
    }
    self.id = id
    self.text = text
    self.sampleRate = sampleRate
    self.fps = fps
    self.totalSamples = totalSamples
    self.cues = cues
    self.chunks = chunks
  }

  /// The number of frames (at ``fps``).
  public var frameCount: Int { totalSamples / (sampleRate / fps) }

  /// The length in seconds.
  public var duration: Double { Double(totalSamples) / Double(sampleRate) }

  /// The viseme active at a time: the last cue that starts at or before it (X before 0).
  public func viseme(at seconds: Double) -> Viseme {
    // Binary search for the last cue with start <= seconds (with a hair of tolerance so
    // that a cue starting exactly on a frame time counts for that frame).
    var low = 0
    var high = cues.count
    while low < high {
      let middle = (low + high) / 2
      if cues[middle].start <= seconds + 1e-9 { low = middle + 1 } else { high = middle }
    }
    return low == 0 ? .x : cues[low - 1].viseme
  }

  /// The viseme of frame `frame`: the one active at `frame / fps` seconds.
  public func viseme(atFrame frame: Int) -> Viseme {
    viseme(at: Double(frame) / Double(fps))
  }

  // MARK: - Files

  private struct TimingFile: Codable {
    struct ChunkEntry: Codable {
      var file: String
      var startFrame: Int
      var frames: Int
      var samples: Int
      enum CodingKeys: String, CodingKey {
        case file, frames, samples
        case startFrame = "start_frame"
      }
    }
    var format: Int
    var id: String
    var text: String
    var sampleRate: Int
    var fps: Int
    var totalSamples: Int
    var visemes: [Cue]
    var chunks: [ChunkEntry]
    enum CodingKeys: String, CodingKey {
      case format, id, text, fps, visemes, chunks
      case sampleRate = "sample_rate"
      case totalSamples = "total_samples"
    }
  }

  /// Loads an utterance directory (`timing.json` and its chunk MP3s), checking that it is
  /// consistent and that every chunk is MP3 at the utterance's sample rate.
  public init(loadingFrom directory: URL) throws(LIVAServerError) {
    let timingURL = directory.appendingPathComponent("timing.json")
    let timing: TimingFile
    do {
      timing = try JSONDecoder().decode(TimingFile.self, from: Data(contentsOf: timingURL))
    } catch {
      throw LIVAServerError(
        .invalidUtterance, "unreadable timing: \(error)", location: timingURL.path)
    }
    guard timing.format == 1 else {
      throw LIVAServerError(
        .invalidUtterance, "unknown timing format \(timing.format)", location: timingURL.path)
    }
    let samplesPerFrame = timing.fps > 0 ? timing.sampleRate / timing.fps : 0
    var chunks: [Chunk] = []
    for entry in timing.chunks {
      // Chunk names come from the file: accept plain file names only.
      guard !entry.file.isEmpty, !entry.file.contains("/"), !entry.file.hasPrefix("."),
        entry.samples == entry.frames * samplesPerFrame
      else {
        throw LIVAServerError(
          .invalidUtterance, "bad chunk entry \(entry.file)", location: timingURL.path)
      }
      let url = directory.appendingPathComponent(entry.file)
      let audio = try AvatarPack.read(url)
      do {
        let mp3 = try MP3Timing(parsing: audio)
        guard mp3.sampleRate == timing.sampleRate else {
          throw LIVAServerError(
            .invalidUtterance, "\(mp3.sampleRate) Hz, expected \(timing.sampleRate)",
            location: url.path)
        }
      } catch let error as LIVAServerError {
        throw error
      } catch {
        throw LIVAServerError(.invalidUtterance, "not MP3: \(error)", location: url.path)
      }
      chunks.append(Chunk(audio: audio, startFrame: entry.startFrame, frameCount: entry.frames))
    }
    try self.init(
      id: timing.id, text: timing.text, sampleRate: timing.sampleRate, fps: timing.fps,
      totalSamples: timing.totalSamples, cues: timing.visemes, chunks: chunks)
  }
}

/// A set of utterances, e.g. the pre-made ones LIVAServer ships.
public struct UtteranceLibrary: Sendable {
  /// The utterances, sorted by id.
  public let utterances: [Utterance]

  /// Wraps utterances (sorted by id).
  public init(utterances: [Utterance]) {
    self.utterances = utterances.sorted { $0.id < $1.id }
  }

  /// Loads every subdirectory of `directory` that holds a `timing.json`.
  public init(loadingFrom directory: URL) throws(LIVAServerError) {
    let names: [String]
    do {
      names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
    } catch {
      throw LIVAServerError(
        .ioFailure, "cannot list utterances: \(error.localizedDescription)",
        location: directory.path)
    }
    var loaded: [Utterance] = []
    for name in names.sorted() where !name.hasPrefix(".") {
      let sub = directory.appendingPathComponent(name)
      guard FileManager.default.fileExists(atPath: sub.appendingPathComponent("timing.json").path)
      else { continue }
      loaded.append(try Utterance(loadingFrom: sub))
    }
    self.init(utterances: loaded)
  }

  /// The pre-made utterances shipped with LIVAServer (made by `scripts/make-utterances.sh`).
  public static func bundled() throws(LIVAServerError) -> UtteranceLibrary {
    guard let url = Bundle.module.url(forResource: "utterances", withExtension: nil) else {
      throw LIVAServerError(.ioFailure, "the bundled utterances are missing")
    }
    return try UtteranceLibrary(loadingFrom: url)
  }

  /// The utterance with an id, if any.
  public func utterance(id: String) -> Utterance? { utterances.first { $0.id == id } }

  /// The utterance whose text best matches `text`: the highest share of common words
  /// (Jaccard index over lowercased words), ties broken by the closest length in
  /// characters, then by id. Nil only when the library is empty.
  public func bestMatch(for text: String) -> Utterance? {
    let words = Self.words(text)
    func score(_ utterance: Utterance) -> (Double, Int, String) {
      let other = Self.words(utterance.text)
      let union = words.union(other).count
      let jaccard = union == 0 ? 0 : Double(words.intersection(other).count) / Double(union)
      return (jaccard, -abs(utterance.text.count - text.count), utterance.id)
    }
    return utterances.max { a, b in
      let (sa, sb) = (score(a), score(b))
      if sa.0 != sb.0 { return sa.0 < sb.0 }
      if sa.1 != sb.1 { return sa.1 < sb.1 }
      return sa.2 > sb.2
    }
  }

  static func words(_ text: String) -> Set<String> {
    Set(
      text.lowercased().split { !($0.isLetter || $0.isNumber || $0 == "'") }.map(String.init))
  }
}
