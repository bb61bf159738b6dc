import ArgumentParser
import Foundation
import Locking
import PngineKit

#if canImport(PngineWebGPU)
  import PngineWebGPU

  /// Mutated PNGs rendered on the GPU (wgpu-native), each input in a child process that the
  /// parent watches: a child killed by a signal is an abort (what the hosting app would have
  /// suffered), recorded with the input's index and rendering goes on from the next input.
  ///
  /// The mutations keep the PNG well formed and aim where wgpu-native's aborts were: the
  /// payload's data blobs (WGSL text, descriptor JSON and TLV), its string table and the rest
  /// of the payload after the executor, with bit flips, byte sets, digits changed (sizes and
  /// flags in JSON), multi-byte UTF-8 and invalid UTF-8 written into text. The same seed gives
  /// the same inputs.
  struct FuzzGPU: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "fuzz-gpu",
      abstract:
        "Render mutated PNGs on the GPU, each batch in a child process; count aborts (a child killed by a signal)."
    )
    @Argument(help: "A folder of PNGine PNGs (the corpus), or a fixture folder with pngs/.")
    var corpus: String
    @Option(help: "Inputs to try.") var count: Int = 1000
    @Option(help: "Frames rendered per input (a failing frame does not stop the next).")
    var frames: Int = 4
    @Option(help: "Seed.") var seed: UInt64 = 1
    @Option(help: "Canvas size WxH.") var size: String = "64x64"
    @Option(help: "First input index (children start where a crash left off).") var start: Int = 0
    @Flag(help: "Run the inputs in this process (what the parent's children do).") var child =
      false
    @Option(help: "Write each crashing input's PNG into this folder.") var crashes: String?
    @Option(
      help:
        "Leave out corpus files whose name contains this (e.g. a full-screen shader that takes seconds a frame on a CPU driver)."
    ) var exclude: [String] = []
    @Option(help: "Only write the inputs' PNGs into this folder (to render them elsewhere).")
    var dump: String?
    @Flag(
      help:
        "Generate hostile executors (modules written by the fuzzer that replay the corpus's scenes mutated, or misbehave) instead of mutating the corpus's PNGs."
    ) var executors = false
    @Option(
      help:
        "Fail unless at least this fraction of the frames asked were rendered (a loader that refuses every input must not pass)."
    )
    var minimumRendered: Double = 0
    @Option(help: "Seconds one input may take before its child is killed and it counts as a hang.")
    var timeout: Double = 60

    /// Input `index` of this run: a mutated corpus PNG, or a generated executor's PNG.
    func inputs(_ pngs: [[UInt8]]) -> @Sendable (Int) -> [UInt8] {
      guard executors else {
        return { [seed] in FuzzGPUMutator.input(index: $0, seed: seed, pngs: pngs) }
      }
      let fuzzer = generator(pngs)
      return { fuzzer.input($0).png }
    }

    /// What input `index` is: the generated executor's mutations, or "a mutated PNG".
    func describe(_ index: Int, _ pngs: [[UInt8]]) -> String {
      executors ? generator(pngs).input(index).summary : "a mutated corpus PNG"
    }

    private func generator(_ pngs: [[UInt8]]) -> ExecutorFuzzer {
      ExecutorFuzzer(
        seed: seed, scenes: pngs.compactMap { try? ExecutorFuzzer.Scene.record(png: $0) })
    }

    func run() throws {
      let pngs = try corpusPNGs(corpus, excluding: exclude)
      guard !pngs.isEmpty else { throw ValidationError("no PNGine PNGs in \(corpus)") }
      let input = inputs(pngs)
      if let dump {
        try FileManager.default.createDirectory(atPath: dump, withIntermediateDirectories: true)
        for index in start..<(start + count) {
          try Data(input(index)).write(
            to: URL(fileURLWithPath: dump).appendingPathComponent("input-\(seed)-\(index).png"))
        }
      } else if child {
        try runChild(input)
      } else {
        try runParent(input, describe: { describe($0, pngs) })
      }
    }

    /// The child: renders inputs `start ..< start + count`, announcing each before and after
    /// on stdout (unbuffered), so that the parent knows which input a crash belongs to.
    private func runChild(_ input: (Int) -> [UInt8]) throws {
      let (w, h) = try parseSize(size)
      for index in start..<(start + count) {
        say("begin \(index)")
        let png = input(index)
        var outcome: [String] = []
        do {
          let renderer = try PngineRenderer(png: png, width: w, height: h)
          for k in 0..<frames {
            do {
              _ = try renderer.render(time: Float(k) * 0.5)
              outcome.append("ok")
            } catch {
              outcome.append(error.code.description)
            }
          }
        } catch {
          outcome.append("load:\(error.code)")
        }
        say("end \(index) \(outcome.joined(separator: ","))")
      }
    }

    private func say(_ line: String) {
      FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The parent: runs children over the inputs; a child that dies by a signal marks the
    /// input it had begun as a crash, one that spends more than `timeout` on an input is
    /// killed and the input counts as a hang, and a new child goes on after it.
    private func runParent(_ input: (Int) -> [UInt8], describe: (Int) -> String) throws {
      let clock = ContinuousClock()
      let began = clock.now
      var next = start
      let end = start + count
      var outcomes: [String: Int] = [:]
      var framesRendered = 0
      var crashes: [(index: Int, signal: Int32)] = []
      var hangs: [Int] = []
      while next < end {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments =
          [
            "fuzz-gpu", corpus, "--child", "--seed", "\(seed)", "--start", "\(next)", "--count",
            "\(end - next)", "--frames", "\(frames)", "--size", size,
          ] + exclude.flatMap { ["--exclude", $0] } + (executors ? ["--executors"] : [])
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The child's lines, read as they come, so that a child stuck on one input is seen.
        let lines = ChildLines()
        let reader = Thread {
          let handle = pipe.fileHandleForReading
          while case let data = handle.availableData, !data.isEmpty { lines.append(data) }
          lines.close()
        }
        reader.start()
        var open: Int?
        var openedAt = clock.now
        var hung = false
        func consume(_ batch: [Substring]) {
          for line in batch {
            let parts = line.split(separator: " ")
            guard parts.count >= 2, let index = Int(parts[1]) else { continue }
            if parts[0] == "begin" {
              open = index
              openedAt = clock.now
            } else if parts[0] == "end" {
              open = nil
              next = index + 1
              for outcome in (parts.count > 2 ? parts[2].split(separator: ",") : []) {
                outcomes[String(outcome), default: 0] += 1
                if outcome == "ok" { framesRendered += 1 }
              }
            }
          }
        }
        while !lines.isClosed {
          consume(lines.take())
          if open != nil, seconds(clock.now - openedAt) > timeout, !hung {
            hung = true
            kill(process.processIdentifier, SIGKILL)
          }
          Thread.sleep(forTimeInterval: 0.05)
        }
        consume(lines.take())
        process.waitUntilExit()
        if hung {
          let index = open ?? next
          hangs.append(index)
          print("HANG input \(index) (seed \(seed)): over \(timeout) s, killed: \(describe(index))")
          try keep(input(index), name: "hang-\(seed)-\(index).png")
          next = index + 1
        } else if process.terminationReason == .uncaughtSignal {
          let index = open ?? next
          crashes.append((index, process.terminationStatus))
          print(
            "CRASH input \(index) (seed \(seed)): signal \(process.terminationStatus): \(describe(index))"
          )
          try keep(input(index), name: "crash-\(seed)-\(index).png")
          next = index + 1
        } else if process.terminationStatus != 0 {
          throw Failure(description: "a child failed with status \(process.terminationStatus)")
        }
      }
      let elapsed = seconds(clock.now - began)
      let summary = outcomes.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }
      print(
        "seed \(seed): \(count) \(executors ? "generated executors" : "inputs"), \(count * frames) frames asked, \(framesRendered) rendered, \(crashes.count) aborts, \(hangs.count) hangs in \(String(format: "%.0f", elapsed)) s"
      )
      print("outcomes: " + summary.joined(separator: ", "))
      let asked = count * frames
      if Double(framesRendered) < minimumRendered * Double(asked) {
        throw Failure(
          description:
            "\(framesRendered) of \(asked) frames rendered, under the floor of \(minimumRendered)")
      }
      if !crashes.isEmpty || !hangs.isEmpty {
        throw Failure(
          description: "\(crashes.count) inputs aborted the process, \(hangs.count) hung: "
            + (crashes.map { "\($0.index) (signal \($0.signal))" } + hangs.map { "\($0) (hang)" })
            .joined(separator: ", "))
      }
    }

    /// Writes a failing input into the crashes folder, when there is one.
    private func keep(_ png: [UInt8], name: String) throws {
      guard let folder = crashes else { return }
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      try Data(png).write(to: URL(fileURLWithPath: folder).appendingPathComponent(name))
    }
  }

  /// Lines a child wrote, handed from the reading thread to the parent's loop.
  final class ChildLines: @unchecked Sendable {
    private let lock = Locked()
    private var buffer = Data()
    private var closed = false

    func append(_ data: Data) { lock.withLock { buffer.append(data) } }
    func close() { lock.withLock { closed = true } }
    var isClosed: Bool { lock.withLock { closed } }

    /// The complete lines so far (a partial last line stays for the next call).
    func take() -> [Substring] {
      lock.withLock {
        guard let last = buffer.lastIndex(of: 0x0A) else { return [] }
        let text = String(decoding: buffer[...last], as: UTF8.self)
        buffer.removeSubrange(...last)
        return text.split(separator: "\n")
      }
    }
  }

  /// The PNGs of a folder (or of its `pngs/`) that carry a payload.
  func corpusPNGs(_ folder: String, excluding: [String] = []) throws -> [[UInt8]] {
    let fm = FileManager.default
    let directory = fm.fileExists(atPath: folder + "/pngs") ? folder + "/pngs" : folder
    var pngs: [[UInt8]] = []
    for name in try fm.contentsOfDirectory(atPath: directory).sorted()
    where name.hasSuffix(".png") && !excluding.contains(where: { name.contains($0) }) {
      let bytes = try readFile(directory + "/" + name)
      if let payload = try? PNGFile.read(bytes).payloadBytes, (try? PNGBPayload(payload)) != nil {
        pngs.append(bytes)
      }
    }
    return pngs
  }
#endif

/// The inputs of `pngine fuzz-gpu`: input `index` of `seed` is always the same PNG.
enum FuzzGPUMutator {
  static func input(index: Int, seed: UInt64, pngs: [[UInt8]]) -> [UInt8] {
    var rng = SplitMix64(
      seed: seed &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(index) &* 0xBF58_476D_1CE4_E5B9)
    let png = pngs[rng.next(pngs.count)]
    guard let bytes = try? PNGFile.read(png).payloadBytes, let payload = try? PNGBPayload(bytes)
    else { return png }
    var mutated = payload.bytes
    let blobs = (try? payload.dataBlobs()) ?? []
    let strings = Int(payload.header.stringTableOffset)..<Int(payload.header.dataSectionOffset)
    let executorEnd =
      payload.header.hasEmbeddedExecutor
      ? Int(payload.header.executorOffset) + Int(payload.header.executorLength) : PNGBHeader.size
    let edits = 1 + rng.next(4)
    for _ in 0..<edits {
      // Mostly inside one data blob (WGSL, descriptors), else the strings, else anywhere
      // after the executor.
      let region: Range<Int>
      switch rng.next(10) {
      case 0..<7 where !blobs.isEmpty: region = blobs[rng.next(blobs.count)]
      case 7 where !strings.isEmpty: region = strings
      default: region = executorEnd..<mutated.count
      }
      guard !region.isEmpty, region.upperBound <= mutated.count else { continue }
      let i = region.lowerBound + rng.next(region.count)
      switch rng.next(6) {
      case 0: mutated[i] ^= UInt8(1 << rng.next(8))
      case 1: mutated[i] = UInt8(truncatingIfNeeded: rng.next(256))
      case 2:
        // A digit made larger (a size, a count, a flag set in JSON or WGSL).
        if let d = mutated[region].firstIndex(where: { (0x30...0x39).contains($0) }) {
          let at = d + rng.next(max(1, region.upperBound - d))
          if (0x30...0x39).contains(mutated[at]) { mutated[at] = 0x39 }
        }
      case 3:
        // A multi-byte character (é) over two bytes of text.
        if i + 1 < region.upperBound {
          mutated[i] = 0xC3
          mutated[i + 1] = 0xA9
        }
      case 4:
        // Bytes that are not UTF-8.
        mutated[i] = [0x80, 0xC0, 0xFF, 0xF8][rng.next(4)]
      default:
        let interesting: [UInt8] = [0x00, 0xFF, 0x7F, 0x22, 0x7B, 0x7D, 0x28]
        mutated[i] = interesting[rng.next(interesting.count)]
      }
    }
    return PngineFuzzer.testPNG(with: [1, 0] + mutated)
  }
}
