import Foundation
import PngineKit
import PngineWebGPU

/// The fixture PNGs (shared with PngineKitTests).
let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().appendingPathComponent("PngineKitTests/Fixtures/pngs")

/// The committed reference pictures.
let references = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .appendingPathComponent("References")

func fixture(_ name: String) throws -> [UInt8] {
  [UInt8](try Data(contentsOf: fixtures.appendingPathComponent(name)))
}

let triangle = "examples_vite-gallery_shaders_triangle.png"
let cube = "examples_vite-gallery_shaders_cube.png"
let boids = "examples_vite-gallery_shaders_boids.png"

/// A hand-made stream: commands with their blobs.
struct Stream {
  var commands: [DecodedCommand] = []
  var blobs: [Int: Blob] = [:]

  mutating func add(_ opcode: UInt8, _ command: Command, blob: [UInt8]? = nil) {
    if let blob { blobs[commands.count] = .bytes(blob) }
    commands.append(
      DecodedCommand(opcode: opcode, offset: 8 + commands.count * 16, command: command))
  }
}
