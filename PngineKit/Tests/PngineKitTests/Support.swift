import Foundation
import PngineKit
import WAT

/// The fixture folder (a copy of the public PNGine fixtures), beside this file.
enum Fixtures {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

  static func bytes(_ relative: String) -> [UInt8] {
    [UInt8](
      FileManager.default.contents(atPath: root.appendingPathComponent(relative).path) ?? Data())
  }

  static func png(_ name: String) -> [UInt8] { bytes("pngs/" + name) }

  /// Every PNG in `pngs/`.
  static var pngNames: [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("pngs").path))
      ?? []).filter { $0.hasSuffix(".png") }.sorted()
  }

  /// Every expectation in `cmdbufs/`, by PNG name.
  static var expectationNames: [String] {
    ((try? FileManager.default.contentsOfDirectory(
      atPath: root.appendingPathComponent("cmdbufs").path)) ?? [])
      .filter { $0.hasSuffix(".png.txt") }.map { String($0.dropLast(4)) }.sorted()
  }

  static func expectation(_ png: String) -> String {
    String(decoding: bytes("cmdbufs/" + png + ".txt"), as: UTF8.self)
  }

  /// The oracle's command buffers of one PNG: init, frame0, frame1.
  static func oracleBuffers(_ png: String) -> [(name: String, bytes: [UInt8])] {
    expectation(png).split(separator: "\n").dropFirst().map { line in
      let fields = line.split(separator: " ")
      return (String(fields[0]), hex(fields.last!))
    }
  }

  static func hex(_ s: Substring) -> [UInt8] {
    var out: [UInt8] = []
    var i = s.startIndex
    while i < s.endIndex {
      let j = s.index(i, offsetBy: 2)
      out.append(UInt8(s[i..<j], radix: 16)!)
      i = j
    }
    return out
  }

  static let positive = [
    "examples_audio-demo_public_sceneR.png", "examples_audio-demo_triangle.png",
    "examples_vite-basic_shader.png", "examples_vite-gallery_shaders_boids.png",
    "examples_vite-gallery_shaders_cube.png", "examples_vite-gallery_shaders_triangle.png",
  ]
  static let legacy = [
    "examples_audio-demo_public_sceneR.png", "examples_audio-demo_triangle.png",
    "examples_vite-basic_shader.png",
  ]
}

/// Hostile (and one well-behaved) executors, written as WAT and assembled by WasmKit's `WAT`
/// module, wrapped in a minimal PNGB payload.
enum TestExecutors {
  struct Parts {
    var memory = "(memory (export \"memory\") 2)"
    var imports = ""
    var commandPointer = "i32.const 65536"
    var commandLength = "(i32.load (i32.const 65536))"
    var initBody = "i32.const 0"
    var frameBody = "i32.const 0"
    var extra = ""
  }

  /// `init` writes an empty buffer (8 bytes, 0 commands), `frame` one with `submit`.
  static func wat(_ p: Parts) -> String {
    """
    (module
      \(p.imports)
      \(p.memory)
      (func (export "getBytecodePtr") (result i32) i32.const 1024)
      (func (export "setBytecodeLen") (param i32))
      (func (export "getDataPtr") (result i32) i32.const 32768)
      (func (export "setDataLen") (param i32))
      (func (export "getCommandPtr") (result i32) \(p.commandPointer))
      (func (export "getCommandLen") (result i32) \(p.commandLength))
      (func (export "init") (result i32)
        (i32.store (i32.const 65536) (i32.const 8))
        (i32.store (i32.const 65540) (i32.const 0))
        \(p.initBody))
      (func (export "frame") (param f32 i32 i32) (result i32)
        (i32.store (i32.const 65536) (i32.const 9))
        (i32.store (i32.const 65540) (i32.const 1))
        (i32.store8 (i32.const 65544) (i32.const 0xF0))
        \(p.frameBody))
      \(p.extra)
    )
    """
  }

  static func wasm(_ p: Parts) throws -> [UInt8] { try wat2wasm(wat(p)) }

  /// A PNGB payload: header, executor, then empty tables.
  static func payload(executor: [UInt8]?) -> [UInt8] {
    let exe = executor ?? []
    let exeOff: UInt32 = executor == nil ? 0 : 40
    let strings = UInt32(40 + exe.count)
    let data = strings + 2
    let wgsl = data + 2
    let uniforms = wgsl + 1
    let animation = uniforms
    var out = Array("PNGB".utf8) + [0, 0, executor == nil ? 0 : 1, 0, 0, 0, 0, 0]
    for v in [exeOff, UInt32(exe.count), strings, data, wgsl, uniforms, animation] {
      out += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
    }
    return out + exe + [0, 0] + [0, 0] + [0]
  }

  static func payload(_ p: Parts) throws -> PNGBPayload {
    try PNGBPayload(payload(executor: try wasm(p)))
  }
}

extension TestExecutors {
  static func wat2(_ text: String) throws -> [UInt8] { try wat2wasm(text) }
}
