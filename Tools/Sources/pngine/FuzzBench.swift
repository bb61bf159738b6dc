import ArgumentParser
import Foundation
import PngineKit

struct Fuzz: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Seeded fuzzing of the PNG reader, inflater, PNGB checks and command decoder.")
  @Argument(help: "A fixture folder with pngs/ and cmdbufs/.") var directory: String
  @Option(help: "Inputs to try.") var count: Int = 1_000_000
  @Option(help: "Seed.") var seed: UInt64 = 1

  func run() throws {
    let (pngs, buffers) = try loadCorpus(directory)
    var fuzzer = PngineFuzzer(seed: seed, pngs: pngs, commandBuffers: buffers)
    let clock = ContinuousClock()
    let start = clock.now
    let report = fuzzer.run(count: count)
    let elapsed = clock.now - start
    print("seed \(seed): \(report)")
    print("elapsed \(elapsed), \(Int(Double(count) / seconds(elapsed))) inputs/s")
  }
}

func seconds(_ d: Duration) -> Double {
  Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
}

/// The PNGs with a pNGb chunk and the oracle's command buffers of a fixture folder.
func loadCorpus(_ directory: String) throws -> ([[UInt8]], [[UInt8]]) {
  let fm = FileManager.default
  var pngs: [[UInt8]] = []
  for name in try fm.contentsOfDirectory(atPath: directory + "/pngs").sorted()
  where name.hasSuffix(".png") {
    let bytes = try readFile(directory + "/pngs/" + name)
    if (try? PNGFile.read(bytes).payloadBytes) != nil { pngs.append(bytes) }
  }
  var buffers: [[UInt8]] = []
  for name in try fm.contentsOfDirectory(atPath: directory + "/cmdbufs").sorted() {
    let text = String(decoding: try readFile(directory + "/cmdbufs/" + name), as: UTF8.self)
    for line in text.split(separator: "\n") where !line.hasPrefix("exports") {
      if let hex = line.split(separator: " ").last { buffers.append(bytes(hex: hex)) }
    }
  }
  return (pngs, buffers)
}

func bytes(hex: Substring) -> [UInt8] {
  var out: [UInt8] = []
  var i = hex.startIndex
  while i < hex.endIndex, hex.index(after: i) < hex.endIndex {
    let j = hex.index(i, offsetBy: 2)
    out.append(UInt8(hex[i..<j], radix: 16) ?? 0)
    i = j
  }
  return out
}

struct Bench: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract:
      "Time load-to-first-command-buffer and steady frame() (prints one JSON line; see scripts/bench)."
  )
  @Argument(help: "A PNG.") var file: String
  @Option(help: "Timed frames.") var frames: Int = 20000
  @Option(help: "Timed loads.") var loads: Int = 30
  @Flag(help: "Time only the first load of this process (nothing translated, no idle executor).")
  var coldOnly = false

  func run() throws {
    let bytes = try readFile(file)
    let clock = ContinuousClock()
    let name = (file as NSString).lastPathComponent
    if coldOnly {
      let t0 = clock.now
      try PngineAnimation().load(png: bytes)
      let ms = seconds(clock.now - t0) * 1e3
      print(#"{"file":"\#(name)","runtime":"swift-wasmkit","coldLoadMs":\#(ms)}"#)
      return
    }
    // Loads as an app makes them: each a new animation, its executor back in the shared
    // pool when it unloads (timed apart: that is where the reset happens).
    var loadTimes: [Double] = []
    var unloadTimes: [Double] = []
    for _ in 0..<(loads + 3) {
      let animation = PngineAnimation()
      let t0 = clock.now
      let report = try animation.load(png: bytes)
      let t1 = clock.now
      animation.unload()
      let t2 = clock.now
      _ = report
      loadTimes.append(seconds(t1 - t0) * 1e3)
      unloadTimes.append(seconds(t2 - t1) * 1e3)
    }
    loadTimes.removeFirst(3)
    unloadTimes.removeFirst(3)
    // The same without the pool: every load instantiates and translates.
    var unpooledTimes: [Double] = []
    for _ in 0..<(loads + 3) {
      let animation = PngineAnimation(configuration: PngineConfiguration(executorPool: nil))
      let t0 = clock.now
      try animation.load(png: bytes)
      unpooledTimes.append(seconds(clock.now - t0) * 1e3)
    }
    unpooledTimes.removeFirst(3)
    if ProcessInfo.processInfo.environment["PNGINE_BENCH_STAGES"] != nil {
      var stages: [String: [Double]] = [:]
      for _ in 0..<loads {
        var t = clock.now
        func lap(_ name: String) {
          let n = clock.now
          stages[name, default: []].append(seconds(n - t) * 1e3)
          t = n
        }
        let file = try PNGFile.read(bytes)
        lap("png+inflate")
        let payload = try PNGBPayload(file.payloadBytes!)
        lap("pngb")
        _ = try ExecutorInfo(Array(payload.executorBytes!), maxMemoryPages: 1024)
        lap("executorInfo")
        try PngineAnimation().load(payload: payload)
        lap("load(payload:)")
      }
      for (k, v) in stages.sorted(by: { $0.key < $1.key }) {
        print("stage \(k): \(v.sorted()[v.count / 2]) ms")
      }
    }
    let animation = PngineAnimation()
    try animation.load(png: bytes)
    var raw: [Double] = []
    var full: [Double] = []
    raw.reserveCapacity(frames)
    full.reserveCapacity(frames)
    for i in 0..<(frames + 1000) {
      let time = Float(i) / 60
      let t0 = clock.now
      _ = try animation.frameRaw(time: time, width: 512, height: 512)
      let t1 = clock.now
      _ = try animation.frame(time: time, width: 512, height: 512)
      let t2 = clock.now
      if i >= 1000 {
        raw.append(seconds(t1 - t0) * 1e6)
        full.append(seconds(t2 - t1) * 1e6)
      }
    }
    func pct(_ v: [Double], _ p: Double) -> Double {
      let s = v.sorted()
      return s[min(s.count - 1, Int(Double(s.count) * p))]
    }
    print(
      """
      {"file":"\(name)","runtime":"swift-wasmkit","loadP50Ms":\(pct(loadTimes, 0.5)),\
      "unloadP50Ms":\(pct(unloadTimes, 0.5)),"loadUnpooledP50Ms":\(pct(unpooledTimes, 0.5)),\
      "frameP50Us":\(pct(raw, 0.5)),"frameP99Us":\(pct(raw, 0.99)),\
      "frameDecodedP50Us":\(pct(full, 0.5)),"frameDecodedP99Us":\(pct(full, 0.99))}
      """)
  }
}

struct FuzzStreams: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "fuzz-streams",
    abstract:
      "Seeded, structure-aware fuzzing of command streams and descriptors through the checks every backend makes."
  )
  @Argument(help: "A fixture folder with pngs/.") var directory: String
  @Option(help: "Inputs to try.") var count: Int = 1_000_000
  @Option(help: "Seed.") var seed: UInt64 = 1

  func run() throws {
    let (pngs, _) = try loadCorpus(directory)
    let corpus = pngs.compactMap { try? StreamFuzzer.Entry.record(png: $0) }
    guard !corpus.isEmpty else { throw ValidationError("no fixture of \(directory) runs") }
    var fuzzer = StreamFuzzer(seed: seed, corpus: corpus)
    let clock = ContinuousClock()
    let start = clock.now
    let report = fuzzer.run(count: count)
    let elapsed = clock.now - start
    print("seed \(seed), \(corpus.count) fixtures: \(report)")
    print("elapsed \(elapsed), \(Int(Double(count) / seconds(elapsed))) inputs/s")
  }
}
