/// A seeded fuzzer over the format stage, the runtime and the command decoder: PNG files,
/// `pNGb` chunks (re-CRC'd so they reach the inflater), PNGB payloads (wrapped back into a
/// valid PNG so they reach the header, table and executor checks; one in 16 of them is loaded
/// and run for two frames) and command buffers, each mutated (bit flips, byte sets,
/// interesting values in header fields, inserts, deletes) or truncated.
///
/// Everything it calls throws only ``PngineError`` (typed throws); a crash is the failure it
/// looks for. The same seed gives the same inputs.
public struct PngineFuzzer {
  /// Outcome counts.
  public struct Report: Sendable, CustomStringConvertible {
    /// Inputs tried.
    public var inputs = 0
    /// Inputs accepted all the way.
    public var accepted = 0
    /// Rejections by error code.
    public var rejections: [PngineError.Code: Int] = [:]

    /// `inputs 1000, accepted 12, crcMismatch 700, …`.
    public var description: String {
      let parts = rejections.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }
      return (["inputs \(inputs)", "accepted \(accepted)"] + parts).joined(separator: ", ")
    }
  }

  private var rng: SplitMix64
  private let pngs: [[UInt8]]
  private let payloads: [[UInt8]]
  private let commandBuffers: [[UInt8]]

  /// Makes a fuzzer.
  /// - Parameters:
  ///   - seed: the seed; the same seed gives the same inputs.
  ///   - pngs: valid PNGs with `pNGb` to start from.
  ///   - commandBuffers: valid command buffers (the oracle's) to start from.
  public init(seed: UInt64, pngs: [[UInt8]], commandBuffers: [[UInt8]]) {
    self.rng = SplitMix64(seed: seed)
    self.pngs = pngs
    self.payloads = pngs.compactMap { try? PNGFile.read($0).payloadBytes }
    self.commandBuffers = commandBuffers
  }

  /// Runs `count` inputs.
  public mutating func run(count: Int) -> Report {
    var report = Report()
    for _ in 0..<count { report.tally { () throws(PngineError) in try step() } }
    return report
  }

  private mutating func step() throws(PngineError) {
    switch rng.next(4) {
    case 0:
      // Raw PNG bytes: most die at a CRC.
      try Self.consumePNG(mutate(pngs[rng.next(pngs.count)]))
    case 1:
      // The pNGb chunk's compressed body, CRC fixed: reaches the inflater.
      let png = pngs[rng.next(pngs.count)]
      guard let chunk = try? PNGFile.read(png).chunks.first(where: { $0.type == "pNGb" }) else {
        return
      }
      let body = Array(png[(chunk.offset + 8)..<(chunk.offset + 8 + chunk.length)])
      try Self.consumePNG(Self.png(with: mutate(body, headerBias: 2)))
    case 2:
      // The inflated payload, stored uncompressed in a valid PNG: reaches the PNGB checks.
      let payload = payloads[rng.next(payloads.count)]
      let png = Self.png(with: [1, 0] + mutate(payload, headerBias: PNGBHeader.size))
      if rng.next(16) == 0 {
        // One in 16 goes all the way: the executor runs the mutated bytecode (init and two
        // frames, under the fuel budget), its buffers decoded and validated.
        let animation = PngineAnimation()
        try animation.load(png: png)
        _ = try animation.frame(time: 0, width: 64, height: 64)
        _ = try animation.frame(time: 1, width: 64, height: 64)
      } else {
        try Self.consumePNG(png)
      }
    default:
      let buffer = commandBuffers[rng.next(commandBuffers.count)]
      let mutated = mutate(buffer, headerBias: 8)
      let layout: CommandLayout = rng.next(2) == 0 ? .current : .legacy
      let decoded = try CommandBuffer(decoding: mutated, layout: layout)
      var validator = CommandValidator()
      try validator.validate(decoded)
    }
  }

  static func consumePNG(_ bytes: [UInt8]) throws(PngineError) {
    let file = try PNGFile.read(bytes)
    guard let payloadBytes = file.payloadBytes else {
      throw PngineError(.noPayload, "no pNGb")
    }
    let payload = try PNGBPayload(payloadBytes)
    _ = try payload.strings()
    _ = try payload.dataBlobs()
    _ = try payload.wgslModules()
    guard let exe = payload.executorBytes else {
      throw PngineError(.executorMissing, "no executor")
    }
    _ = try ExecutorInfo(Array(exe), maxMemoryPages: RuntimeLimits().maxMemoryPages)
  }

  /// A minimal valid PNG (IHDR, IDAT, `pNGb` holding `body`, IEND), every CRC right.
  public static func testPNG(with body: [UInt8]) -> [UInt8] { png(with: body) }

  static func png(with body: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    func chunk(_ type: String, _ data: [UInt8]) {
      let n = UInt32(data.count)
      out += [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
      let typed = Array(type.utf8) + data
      out += typed
      let crc = CRC32.checksum(typed[...])
      out += [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
    }
    chunk("IHDR", [0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0])
    chunk("IDAT", [0x78, 0x9C, 0x63, 0x60, 0x00, 0x02, 0x00, 0x00, 0x05, 0x00, 0x01])
    chunk("pNGb", body)
    chunk("IEND", [])
    return out
  }

  private mutating func mutate(_ input: [UInt8], headerBias: Int = 0) -> [UInt8] {
    var bytes = input
    let edits = 1 + rng.next(4)
    for _ in 0..<edits {
      guard !bytes.isEmpty else { break }
      // Half of the edits land in the first `headerBias` bytes, where the offsets live.
      let limit = headerBias > 0 && rng.next(2) == 0 ? min(headerBias, bytes.count) : bytes.count
      let i = rng.next(limit)
      switch rng.next(7) {
      case 0: bytes[i] ^= UInt8(1 << rng.next(8))
      case 1: bytes[i] = UInt8(truncatingIfNeeded: rng.next(256))
      case 2:
        let interesting: [UInt8] = [0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE]
        bytes[i] = interesting[rng.next(interesting.count)]
      case 3:
        // A u32 field set to an extreme.
        let values: [UInt32] = [0, 1, 0xFFFF_FFFF, 0x7FFF_FFFF, UInt32(bytes.count), 40]
        let v = values[rng.next(values.count)]
        for k in 0..<4 where i + k < bytes.count {
          bytes[i + k] = UInt8(v >> (8 * UInt32(k)) & 0xFF)
        }
      case 4: bytes.removeSubrange(rng.next(bytes.count)..<bytes.count)  // truncation
      case 5: bytes.insert(UInt8(truncatingIfNeeded: rng.next(256)), at: i)
      default: bytes.remove(at: i)
      }
    }
    return bytes
  }
}

extension PngineFuzzer.Report {
  /// Counts one input: accepted when `step` returns, else under its error's code.
  mutating func tally(_ step: () throws(PngineError) -> Void) {
    inputs += 1
    do throws(PngineError) {
      try step()
      accepted += 1
    } catch {
      rejections[error.code, default: 0] += 1
    }
  }
}

/// SplitMix64: a small, fast, seedable generator (the fuzzers' and the `pngine` tool's).
public struct SplitMix64: RandomNumberGenerator, Sendable {
  private var state: UInt64
  /// Starts at `seed`.
  public init(seed: UInt64) { state = seed }
  /// The next value.
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
  /// Uniform in `0..<bound` (bound > 0).
  public mutating func next(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
