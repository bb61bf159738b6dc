import ArgumentParser
import Foundation
import Logging
import PngineKit

@main
struct Pngine: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "pngine",
    abstract: "Run PNGine PNGs: inspect, run the embedded executor, verify against the oracle.",
    subcommands: [Inspect.self, Run.self, Verify.self, Fuzz.self, FuzzStreams.self, Bench.self]
      + renderCommands)
}

func readFile(_ path: String) throws -> [UInt8] {
  guard let data = FileManager.default.contents(atPath: path) else {
    throw ValidationError("cannot read \(path)")
  }
  return [UInt8](data)
}

/// Reads a PNG or, failing the PNG signature, a bare PNGB payload.
func readPayload(_ bytes: [UInt8]) throws(PngineError) -> (PNGFile?, PNGBPayload) {
  if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) {
    let file = try PNGFile.read(bytes)
    guard let payload = file.payloadBytes else {
      throw PngineError(.noPayload, "the PNG has no pNGb chunk", location: .init(chunk: "pNGb"))
    }
    return (file, try PNGBPayload(payload))
  }
  return (nil, try PNGBPayload(bytes))
}

struct Failure: Error, CustomStringConvertible {
  var description: String
}

struct Inspect: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Chunks, PNGB header, tables, and the executor's exports and ABI.")
  @Argument(help: "A PNG (or a bare .pngb payload).") var file: String

  func run() throws {
    let bytes = try readFile(file)
    do {
      if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) {
        let png = try PNGFile.read(bytes)
        print("chunks:")
        for c in png.chunks { print("  \(c.type) offset \(c.offset) length \(c.length)") }
        if let m = png.metadata { print("pNGm: \(m)") }
        if let a = png.audioLength { print("pNGa: \(a) bytes") }
        if let f = png.flattenedLength { print("pNGf: \(f) bytes") }
      }
      let (_, payload) = try readPayload(bytes)
      let h = payload.header
      print("payload: \(payload.bytes.count) bytes")
      print(
        "header: version \(h.version) flags 0x\(String(h.flags, radix: 16)) plugins 0x\(String(h.plugins, radix: 16))"
      )
      print("  executor @\(h.executorOffset) +\(h.executorLength)")
      print(
        "  strings @\(h.stringTableOffset) data @\(h.dataSectionOffset) wgsl @\(h.wgslTableOffset) uniforms @\(h.uniformTableOffset) animation @\(h.animationTableOffset)"
      )
      print("strings: \(try payload.strings())")
      print("data blobs: \(try payload.dataBlobs().map(\.count))")
      print("wgsl modules: \(try payload.wgslModules().map { "\($0.dataID)<-\($0.dependencies)" })")
      guard let exe = payload.executorBytes else {
        print("executor: none (flags bit 0 clear): cannot run")
        return
      }
      let info = try ExecutorInfo(Array(exe), maxMemoryPages: RuntimeLimits().maxMemoryPages)
      print("executor exports: \(info.exports.joined(separator: ","))")
      print(
        "executor imports: \(info.imports.isEmpty ? "none" : info.imports.joined(separator: ","))")
      print(
        "executor memory: \(info.memoryMinimumPages) pages\(info.memoryMaximumPages.map { " (max \($0))" } ?? "")"
      )
      print("executor layout: \(info.layout.rawValue)")
      let report = try PngineAnimation().load(payload: payload)
      print(
        "executor ABI: \(report.abiVersion)\(info.hasAbiVersion ? "" : " (no getAbiVersion)"), loaded in \(report.mode.rawValue) mode; init: status \(report.initOutput.result.status), \(report.initOutput.buffer.commands.count) commands"
      )
    } catch {
      throw Failure(description: "\(file): \(error)")
    }
  }
}

struct Run: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Run init and frames; print the oracle lines or JSON.")
  @Argument(help: "A PNG.") var file: String
  @Option(help: "Frame times in seconds, comma separated.") var times: String = "0,1"
  @Option(help: "Canvas size WxH.") var size: String = "512x512"
  @Option(help: "oracle (the lines of cmdbufs/*.txt, split mode) or json (decoded).")
  var format: String = "oracle"
  @Option(help: "json only: automatic, split or singleBuffer.") var mode: String = "automatic"

  func run() throws {
    let parts = size.split(separator: "x").compactMap { UInt32($0) }
    guard parts.count == 2, parts[0] > 0, parts[1] > 0 else {
      throw ValidationError("--size must be WxH")
    }
    let ts = try times.split(separator: ",").map { s -> Float in
      guard let t = Float(s) else { throw ValidationError("bad time \(s)") }
      return t
    }
    let bytes = try readFile(file)
    do {
      switch format {
      case "oracle":
        let lines = try PngineConformance.oracleLines(
          png: bytes, times: ts, width: parts[0], height: parts[1])
        print(lines.joined(separator: "\n"))
      case "json":
        guard let m = LoadingMode(rawValue: mode) else { throw ValidationError("bad --mode") }
        let animation = PngineAnimation(configuration: PngineConfiguration(loadingMode: m))
        let report = try animation.load(png: bytes)
        var calls: [[String: Any]] = [json(report.initOutput, name: "init")]
        for (i, t) in ts.enumerated() {
          calls.append(
            json(try animation.frame(time: t, width: parts[0], height: parts[1]), name: "frame\(i)")
          )
        }
        let d = animation.diagnostics.snapshot
        let object: [String: Any] = [
          "exports": report.executor.exports, "abi": report.abiVersion,
          "mode": report.mode.rawValue, "layout": report.executor.layout.rawValue,
          "calls": calls,
          "diagnostics": [
            "calls": d.calls, "commands": d.commands, "renderPasses": d.renderPasses,
            "computePasses": d.computePasses, "draws": d.draws, "dispatches": d.dispatches,
            "pipelines": d.pipelines, "bindGroups": d.bindGroups, "frames": d.frames,
            "unresolvedBlobs": d.unresolvedBlobs,
          ],
        ]
        let data = try JSONSerialization.data(
          withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        print(String(decoding: data, as: UTF8.self))
      default:
        throw ValidationError("--format must be oracle or json")
      }
    } catch let error as PngineError {
      throw Failure(description: "\(file): \(error)")
    }
  }

  func json(_ output: FrameOutput, name: String) -> [String: Any] {
    var commands: [[String: Any]] = []
    for (i, c) in output.buffer.commands.enumerated() {
      var entry: [String: Any] = [
        "op": String(format: "0x%02x", c.opcode), "offset": c.offset, "command": "\(c.command)",
      ]
      switch output.blobs[i] {
      case .bytes(let b)?:
        entry["blob"] = ["length": b.count, "text": String(decoding: b.prefix(80), as: UTF8.self)]
      case .legacySentinel?: entry["blob"] = "legacy sentinel 0xAAAAAAAA (not read)"
      case nil: break
      }
      commands.append(entry)
    }
    return [
      "call": name, "status": output.result.status, "total": output.buffer.totalLength,
      "count": output.buffer.commandCount, "flags": output.buffer.flags, "commands": commands,
    ]
  }
}

struct Verify: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract:
      "Check every PNG of DIR/pngs (or DIR) against DIR/cmdbufs/<name>.txt; PNGs without an expectation must fail with a typed error."
  )
  @Argument(help: "A fixture folder with pngs/ and cmdbufs/.") var directory: String

  func run() throws {
    let fm = FileManager.default
    let pngDir = fm.fileExists(atPath: directory + "/pngs") ? directory + "/pngs" : directory
    let names = try fm.contentsOfDirectory(atPath: pngDir).filter { $0.hasSuffix(".png") }.sorted()
    var failures = 0
    for name in names {
      let expectPath = directory + "/cmdbufs/" + name + ".txt"
      let bytes = try readFile(pngDir + "/" + name)
      let expected = fm.contents(atPath: expectPath).map { String(decoding: $0, as: UTF8.self) }
      do {
        let got = try PngineConformance.oracleLines(png: bytes).joined(separator: "\n") + "\n"
        if let expected {
          if got == expected {
            print("ok    \(name)")
          } else {
            print("DIFF  \(name)")
            failures += 1
          }
        } else {
          print("ran   \(name) (no expectation)")
          failures += 1
        }
      } catch {
        if expected == nil {
          print("ok    \(name): \(error.code) (\(error.location))")
        } else {
          print("FAIL  \(name): \(error)")
          failures += 1
        }
      }
    }
    if failures > 0 { throw Failure(description: "\(failures) file(s) failed") }
  }
}
