/// A seeded, structure-aware fuzzer of command streams and their descriptors, run through the
/// checks every backend makes (``CommandChecker`` with its ``GPULimits``, the descriptor
/// decoders, ``ShaderSource``) by a ``RecordingBackend``: where a GPU backend's aborts would
/// come from.
///
/// Its corpus is real streams: each fixture's `init` and first frames as its own executor
/// wrote them, with their blobs. An input is one fixture's `init` then one of its frames,
/// either mutated: the command bytes (ids, sizes, usages, counts, opcodes; the buffer then
/// decoded again, its blobs kept by command index) or one blob (WGSL, descriptor JSON or TLV:
/// bits, bytes, digits made large, JSON tokens, multi-byte and invalid UTF-8). Everything it
/// calls throws only ``PngineError``; a crash is the failure it looks for. The same seed gives
/// the same inputs.
public struct StreamFuzzer {
  /// One recorded stream: the raw buffer, how it was laid out, and its blobs.
  public struct Stream: Sendable {
    /// The buffer's bytes, header included.
    public var bytes: [UInt8]
    /// Its layout.
    public var layout: CommandLayout
    /// Blobs by command index.
    public var blobs: [Int: Blob]

    /// Records a call's output.
    public init(_ output: FrameOutput, layout: CommandLayout) {
      bytes = output.result.bytes
      self.layout = layout
      blobs = output.blobs
    }
  }

  /// A fixture's `init` stream and some of its frame streams.
  public struct Entry: Sendable {
    /// The `init` stream.
    public var initStream: Stream
    /// Frame streams.
    public var frames: [Stream]

    /// Makes an entry.
    public init(initStream: Stream, frames: [Stream]) {
      self.initStream = initStream
      self.frames = frames
    }

    /// Runs `png`'s executor (init and frames at `times`) to record an entry.
    public static func record(png: [UInt8], times: [Float] = [0, 0.5]) throws(PngineError)
      -> Entry
    {
      let animation = PngineAnimation()
      let report = try animation.load(png: png)
      let layout = report.executor.layout
      var frames: [Stream] = []
      for t in times {
        frames.append(Stream(try animation.frame(time: t, width: 64, height: 64), layout: layout))
      }
      return Entry(initStream: Stream(report.initOutput, layout: layout), frames: frames)
    }
  }

  private var rng: SplitMix64
  private let corpus: [Entry]

  /// Makes a fuzzer over `corpus` (non-empty).
  public init(seed: UInt64, corpus: [Entry]) {
    rng = SplitMix64(seed: seed)
    self.corpus = corpus
  }

  /// Runs `count` inputs.
  public mutating func run(count: Int) -> PngineFuzzer.Report {
    var report = PngineFuzzer.Report()
    guard !corpus.isEmpty else { return report }
    for _ in 0..<count { report.tally { () throws(PngineError) in try step() } }
    return report
  }

  private mutating func step() throws(PngineError) {
    let entry = corpus[rng.next(corpus.count)]
    guard !entry.frames.isEmpty else { return }
    var initStream = entry.initStream
    var frame = entry.frames[rng.next(entry.frames.count)]
    if rng.next(2) == 0 {
      mutate(&initStream)
    } else {
      mutate(&frame)
    }
    let backend = RecordingBackend()
    let inputs = FrameInputs(time: 0.5, width: 64, height: 64)
    for stream in [initStream, frame] {
      let buffer = try CommandBuffer(decoding: stream.bytes, layout: stream.layout, call: "fuzz")
      try backend.execute(buffer.commands, blobs: stream.blobs, call: "fuzz", inputs: inputs)
    }
  }

  private mutating func mutate(_ stream: inout Stream) {
    let edits = 1 + rng.next(3)
    for _ in 0..<edits {
      if rng.next(2) == 0, let key = stream.blobs.keys.sorted().randomElement(using: &rng),
        case .bytes(var bytes)? = stream.blobs[key], !bytes.isEmpty
      {
        mutateBlob(&bytes)
        stream.blobs[key] = .bytes(bytes)
      } else if stream.bytes.count > 8 {
        // A command's bytes, past the 8-byte header (left intact so the buffer decodes).
        let i = 8 + rng.next(stream.bytes.count - 8)
        switch rng.next(4) {
        case 0: stream.bytes[i] ^= UInt8(1 << rng.next(8))
        case 1: stream.bytes[i] = UInt8(truncatingIfNeeded: rng.next(256))
        case 2: stream.bytes[i] = [0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE, 0x10][rng.next(7)]
        default:
          // A u16 or u32 field set to an extreme (an id, a size, a usage, a count).
          let value: UInt32 = [0, 1, 0xFFFF, 0xFFFE, 0xFFFF_FFFF, 0x8000_0000, 0x3FF][rng.next(7)]
          for k in 0..<(rng.next(2) == 0 ? 2 : 4) where i + k < stream.bytes.count {
            stream.bytes[i + k] = UInt8(value >> (8 * UInt32(k)) & 0xFF)
          }
        }
      }
    }
  }

  private mutating func mutateBlob(_ bytes: inout [UInt8]) {
    let i = rng.next(bytes.count)
    switch rng.next(7) {
    case 0: bytes[i] ^= UInt8(1 << rng.next(8))
    case 1: bytes[i] = UInt8(truncatingIfNeeded: rng.next(256))
    case 2:
      // Digits made large: a size, a binding, a visibility or usage in JSON.
      var k = i
      while k < bytes.count, (0x30...0x39).contains(bytes[k]) {
        bytes[k] = 0x39
        k += 1
      }
      if k == i { bytes.insert(contentsOf: Array("99999".utf8), at: i) }
    case 3: bytes.replaceSubrange(i..<i, with: [0xC3, 0xA9])  // é
    case 4: bytes[i] = [0x80, 0xC0, 0xFF, 0x00][rng.next(4)]
    case 5:
      let tokens = ["{", "}", "[", "]", "\"", ",", ":", "null", "-1", "1e99", "(", "(((("]
      bytes.replaceSubrange(i..<i, with: Array(tokens[rng.next(tokens.count)].utf8))
    default: bytes.removeSubrange(i..<min(bytes.count, i + 1 + rng.next(8)))
    }
  }
}
