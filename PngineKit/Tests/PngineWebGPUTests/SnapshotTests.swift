import Foundation
import PngineKit
import PngineTestSupport
import PngineWebGPU
import Testing

/// One snapshot: a fixture drawn at fixed times (or frame counts) and compared with
/// `References/<name>.png` at a tolerance.
struct SnapshotCase: CustomTestStringConvertible, Sendable {
  var name: String
  var file: String
  var size: UInt32 = 256
  /// The times of the frames drawn before the snapshot; the last one is compared.
  var times: [Float]
  /// Share of pixels that must match within 2/255 per channel.
  var tolerance: Double = 0.985
  /// Share of the *drawn* pixels (those that differ from the reference's background in either
  /// picture) that must match: a picture mostly background (boids' 2048 one-pixel dots) scores
  /// high on ``tolerance`` even when black, never on this.
  var contentTolerance: Double = 0.9
  /// Why the tolerance is what it is.
  var why: String =
    "rasterisation only: lavapipe is deterministic, the margin covers another driver's edge pixels"

  var testDescription: String { name }
}

/// Set PNGINE_RECORD_SNAPSHOTS=1 to write the references anew (then look at each).
let snapshotCases: [SnapshotCase] = [
  SnapshotCase(name: "triangle-t0", file: triangle, times: [0]),
  SnapshotCase(name: "cube-t0", file: cube, times: [0]),
  SnapshotCase(name: "cube-t1", file: cube, times: [1]),
  // Boids varies with the frame counter: frame 0 runs the once-only init pass and phase 0,
  // later frames alternate the ping-pong phases.
  SnapshotCase(
    name: "boids-frame0", file: boids, times: [0], tolerance: 0.95, contentTolerance: 0.6,
    why:
      "compute: 2048 one-pixel boids placed by a simulation in f32 (atan2, normalize, sqrt) whose last bits differ between drivers and CPUs; one boid moved by a pixel changes a dozen pixels"
  ),
  SnapshotCase(
    name: "boids-frame1", file: boids, times: [0, 1.0 / 60], tolerance: 0.95, contentTolerance: 0.6,
    why: "compute, as boids-frame0"),
  SnapshotCase(
    name: "boids-frame2", file: boids, times: [0, 1.0 / 60, 2.0 / 60], tolerance: 0.95,
    contentTolerance: 0.6,
    why: "compute, as boids-frame0"),
  SnapshotCase(
    name: "boids-frame3", file: boids, times: [0, 1.0 / 60, 2.0 / 60, 3.0 / 60], tolerance: 0.95,
    contentTolerance: 0.6, why: "compute, as boids-frame0"),
  SnapshotCase(name: "legacy-shader-t0", file: "examples_vite-basic_shader.png", times: [0]),
  SnapshotCase(name: "legacy-triangle-t1", file: "examples_audio-demo_triangle.png", times: [1]),
  SnapshotCase(
    name: "legacy-sceneR-t1", file: "examples_audio-demo_public_sceneR.png", size: 128, times: [1],
    tolerance: 0.97,
    why:
      "a full-screen procedural fragment shader (noise, dithering dots): per-pixel float maths whose rounding differs between drivers; drawn at 128² because lavapipe needs ≈ 2.5 s for 256²"
  ),
]

@Suite(.serialized, .disturbsProcess)
struct SnapshotTests {
  @Test(arguments: snapshotCases)
  func snapshot(_ c: SnapshotCase) throws {
    let renderer = try PngineRenderer(png: try fixture(c.file), width: c.size, height: c.size)
    for t in c.times.dropLast() { try renderer.draw(time: t) }
    let image = try renderer.render(time: c.times.last!)
    let url = references.appendingPathComponent(c.name + ".png")
    let record = ProcessInfo.processInfo.environment["PNGINE_RECORD_SNAPSHOTS"] == "1"
    guard !record, FileManager.default.fileExists(atPath: url.path) else {
      try Data(image.pngData()).write(to: url)
      Issue.record("recorded \(url.path): look at it, then commit it")
      return
    }
    let reference = try RGBAImage(png: [UInt8](try Data(contentsOf: url)))
    let similarity = image.similarity(to: reference)
    let content = contentSimilarity(image, reference)
    print(
      "\(c.name): similarity \(similarity) (tolerance \(c.tolerance)), drawn pixels \(content) (tolerance \(c.contentTolerance))"
    )
    if similarity < c.tolerance || content < c.contentTolerance {
      let failed = FileManager.default.temporaryDirectory.appendingPathComponent(
        "\(c.name)-failed.png")
      try? Data(image.pngData()).write(to: failed)
      Issue.record(
        "\(c.name): similarity \(similarity) (≥ \(c.tolerance)), drawn pixels \(content) (≥ \(c.contentTolerance)) (\(c.why)); drawn: \(failed.path)"
      )
    }
  }

  /// The tolerances tell a wrong picture from a right one: an empty (transparent), a black and
  /// a background-only frame fail every reference, and each boids frame fails its neighbours'
  /// references (the simulation moves between them).
  @Test func emptyBlackAndNeighbouringFramesFail() throws {
    func load(_ name: String) throws -> RGBAImage {
      try RGBAImage(
        png: [UInt8](try Data(contentsOf: references.appendingPathComponent(name + ".png"))))
    }
    for c in snapshotCases {
      let reference = try load(c.name)
      let count = reference.width * reference.height
      let wrong = [
        (
          "empty",
          RGBAImage(
            width: reference.width, height: reference.height,
            pixels: .init(repeating: 0, count: count * 4))
        ),
        (
          "black",
          RGBAImage(
            width: reference.width, height: reference.height,
            pixels: ([0, 0, 0, 255] as [UInt8]).repeated(count))
        ),
        (
          "background",
          RGBAImage(
            width: reference.width, height: reference.height,
            pixels: background(reference).repeated(count))
        ),
      ]
      for (what, image) in wrong {
        let passes =
          image.similarity(to: reference) >= c.tolerance
          && contentSimilarity(image, reference) >= c.contentTolerance
        #expect(!passes, "\(c.name): a \(what) frame passes")
      }
    }
    let boidsCases = snapshotCases.filter { $0.file == boids }
    for (a, b) in zip(boidsCases, boidsCases.dropFirst()) {
      let (x, y) = (try load(a.name), try load(b.name))
      let content = contentSimilarity(x, y)
      print("\(a.name) vs \(b.name): similarity \(x.similarity(to: y)), drawn pixels \(content)")
      #expect(content < b.contentTolerance, "\(a.name) passes as \(b.name)")
    }
  }

  @Test func everyReferenceHasItsCaseAndEveryCaseItsReference() throws {
    let files = try FileManager.default.contentsOfDirectory(atPath: references.path)
      .filter { $0.hasSuffix(".png") }.map { String($0.dropLast(4)) }
    let names = snapshotCases.map(\.name)
    #expect(Set(files) == Set(names), "references without a case or cases without a reference")
    #expect(Set(names).count == names.count, "duplicate case names")
  }
}

/// The most frequent pixel of `image`: its background.
func background(_ image: RGBAImage) -> [UInt8] {
  var counts: [UInt32: Int] = [:]
  for p in stride(from: 0, to: image.pixels.count, by: 4) {
    let key =
      UInt32(image.pixels[p]) << 24 | UInt32(image.pixels[p + 1]) << 16
      | UInt32(image.pixels[p + 2]) << 8 | UInt32(image.pixels[p + 3])
    counts[key, default: 0] += 1
  }
  let key = counts.max { $0.value < $1.value }?.key ?? 0
  return [UInt8(key >> 24), UInt8(key >> 16 & 0xFF), UInt8(key >> 8 & 0xFF), UInt8(key & 0xFF)]
}

/// The share of drawn pixels that match within 2/255 per channel, a pixel being drawn when it
/// differs from the reference's background in either picture (1 when neither draws anything).
func contentSimilarity(_ image: RGBAImage, _ reference: RGBAImage) -> Double {
  guard image.width == reference.width, image.height == reference.height else { return 0 }
  let back = background(reference)
  func close(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
    zip(a, b).allSatisfy { ($0 > $1 ? $0 - $1 : $1 - $0) <= 2 }
  }
  var drawn = 0
  var same = 0
  for p in stride(from: 0, to: reference.pixels.count, by: 4) {
    let a = image.pixels[p..<(p + 4)]
    let b = reference.pixels[p..<(p + 4)]
    guard !close(a, back[...]) || !close(b, back[...]) else { continue }
    drawn += 1
    if close(a, b) { same += 1 }
  }
  return drawn == 0 ? 1 : Double(same) / Double(drawn)
}

extension Array {
  /// The array repeated `count` times.
  fileprivate func repeated(_ count: Int) -> [Element] {
    [[Element]](repeating: self, count: count).flatMap { $0 }
  }
}

@Suite(.serialized, .disturbsProcess)
struct PictureTests {
  @Test func triangleCentreIsTheFragmentColourAndCornersTheClearColour() throws {
    let renderer = try PngineRenderer(png: try fixture(triangle), width: 256, height: 256)
    let image = try renderer.render(time: 0)
    #expect(image[128, 128] == [255, 0, 0, 255])  // fragMain: vec4(1, 0, 0, 1)
    for (x, y) in [(0, 0), (255, 0), (0, 255), (255, 255)] {
      #expect(image[x, y] == [0, 0, 0, 0])  // the pass clears to (0, 0, 0, 0)
    }
  }

  @Test func whatChangesWithTimeChangesInThePicture() throws {
    let renderer = try PngineRenderer(png: try fixture(cube), width: 128, height: 128)
    let a = try renderer.render(time: 0)
    let b = try renderer.render(time: 1)
    let again = try renderer.render(time: 0)
    #expect(a.similarity(to: b) < 0.9)  // the cube turns with inputs.time
    #expect(a == again)  // and nothing else moves it
    let still = try PngineRenderer(png: try fixture(triangle), width: 64, height: 64)
    #expect(try still.render(time: 0) == (try still.render(time: 5)))  // no time input
  }

  @Test func boidsMoveFromFrameToFrame() throws {
    let renderer = try PngineRenderer(png: try fixture(boids), width: 128, height: 128)
    let first = try renderer.render(time: 0)
    let second = try renderer.render(time: 1.0 / 60)
    #expect(first != second)
    #expect(renderer.animation.diagnostics.snapshot.dispatches == 3)
  }
}

@Suite(.serialized, .disturbsProcess)
struct GPUErrorTests {
  let inputs = FrameInputs(time: 0, width: 64, height: 64)

  @Test func aShaderThatDoesNotCompileIsATypedErrorWithTheWGSLMessage() throws {
    let backend = try WebGPUBackend(width: 64, height: 64)
    var s = Stream()
    s.add(
      0x04, .createShader(id: 0, code: BlobRef(pointer: 0, length: 0)),
      blob: Array("@vertex fn main( -> {".utf8))
    let error = #expect(throws: PngineError.self) {
      try backend.execute(s.commands, blobs: s.blobs, call: "init", inputs: inputs)
    }
    print("shader error: \(String(describing: error))")
    #expect(error?.code == .shaderCompile)
    #expect(error?.location.opcode == 0x04)
    #expect(error?.message.contains("createShader(id: 0") == true)
    #expect(
      error?.message.lowercased().contains("expected") == true, "\(String(describing: error))")
    // The backend goes on: a good shader after the bad one is accepted.
    var good = Stream()
    good.add(
      0x04, .createShader(id: 1, code: BlobRef(pointer: 0, length: 0)),
      blob: Array("@compute @workgroup_size(1) fn main() {}".utf8))
    try backend.execute(good.commands, blobs: good.blobs, call: "init", inputs: inputs)
  }

  @Test func aDrawWithAMissingPipelineNamesTheDraw() throws {
    let backend = try WebGPUBackend(width: 64, height: 64)
    var s = Stream()
    s.add(
      0x10,
      .beginRenderPass(
        colors: [ColorAttachment(texture: 0xFFFE, load: 1, store: 0, clear: .unorm8(0, 0, 0, 255))],
        depth: 0xFFFF, resolve: nil))
    s.add(0x15, .draw(vertexCount: 3, instanceCount: 1, firstVertex: 0, firstInstance: 0))
    s.add(0x17, .endPass)
    s.add(0xF0, .submit)
    let error = #expect(throws: PngineError.self) {
      try backend.execute(s.commands, blobs: s.blobs, call: "frame", inputs: inputs)
    }
    #expect(error?.code == .resourceNotFound)
    #expect(error?.location.opcode == 0x15)
    #expect(error?.location.call == "frame")
    // A pipeline id never created is named too.
    let other = try WebGPUBackend(width: 64, height: 64)
    var t = Stream()
    t.add(
      0x10,
      .beginRenderPass(
        colors: [ColorAttachment(texture: 0xFFFE, load: 1, store: 0, clear: nil)], depth: 0xFFFF,
        resolve: nil))
    t.add(0x12, .setPipeline(id: 7))
    let missing = #expect(throws: PngineError.self) {
      try other.execute(t.commands, blobs: t.blobs, call: "frame", inputs: inputs)
    }
    #expect(missing?.code == .resourceNotFound)
    #expect(missing?.message.contains("pipeline 7") == true)
  }

  @Test func aPassTheGPURejectsIsNotSubmittedAndTheNextFrameDraws() throws {
    // A depth attachment of 16×16 beside the 64×64 canvas: wgpu records the pass, rejects it
    // when the encoder finishes, and wgpu-native aborts the process if such a command buffer
    // is submitted. It must come back as a typed error, and the backend go on.
    let renderer = try PngineRenderer(png: try fixture(triangle), width: 64, height: 64)
    var s = Stream()
    let u32 = { (v: UInt32) in (0..<4).map { UInt8(v >> (8 * $0) & 0xFF) } }
    let depth: [UInt8] =
      [0x01, 3, 0x01, 0x00] + u32(16) + [0x02, 0x00] + u32(16) + [0x07, 0x07, 0x10]
    s.add(0x03, .createTexture(id: 40, descriptor: BlobRef(pointer: 0, length: 0)), blob: depth)
    s.add(
      0x10,
      .beginRenderPass(
        colors: [
          ColorAttachment(texture: 0xFFFE, load: 1, store: 0, clear: .unorm8(0, 0, 255, 255))
        ],
        depth: 40, resolve: nil))
    s.add(0x17, .endPass)
    s.add(0xF0, .submit)
    let error = #expect(throws: PngineError.self) {
      try renderer.backend.execute(s.commands, blobs: s.blobs, call: "frame", inputs: inputs)
    }
    #expect(error?.code == .gpuValidation)
    #expect(error?.location.opcode == 0xF0)
    let image = try renderer.render(time: 0)
    #expect(image[32, 32] == [255, 0, 0, 255])
  }

  @Test func theBackendGoesOnAfterAFailedFrame() throws {
    let renderer = try PngineRenderer(png: try fixture(triangle), width: 64, height: 64)
    var s = Stream()
    s.add(
      0x10,
      .beginRenderPass(
        colors: [
          ColorAttachment(texture: 0xFFFE, load: 1, store: 0, clear: .unorm8(0, 0, 255, 255))
        ],
        depth: 0xFFFF, resolve: nil))
    s.add(0x15, .draw(vertexCount: 3, instanceCount: 1, firstVertex: 0, firstInstance: 0))
    #expect(throws: PngineError.self) {
      try renderer.backend.execute(s.commands, blobs: s.blobs, call: "frame", inputs: inputs)
    }
    // The failed frame's pass was closed and its encoder dropped: the next frame draws.
    let image = try renderer.render(time: 0)
    #expect(image[32, 32] == [255, 0, 0, 255])
    #expect(image[0, 0] == [0, 0, 0, 0])
  }

  @Test func aPipelineTheGPURejectsCarriesTheGPUsMessage() throws {
    let backend = try WebGPUBackend(width: 64, height: 64)
    var s = Stream()
    s.add(
      0x04, .createShader(id: 0, code: BlobRef(pointer: 0, length: 0)),
      blob: Array("@vertex fn vs() -> @builtin(position) vec4f { return vec4f(0); }".utf8))
    // No fragment stage and no depth-stencil: wgpu rejects a pipeline without a render target.
    s.add(
      0x05, .createRenderPipeline(id: 0, descriptor: BlobRef(pointer: 0, length: 0)),
      blob: Array(#"{"vertex":{"shader":0,"entryPoint":"nope"}}"#.utf8))
    let error = #expect(throws: PngineError.self) {
      try backend.execute(s.commands, blobs: s.blobs, call: "init", inputs: inputs)
    }
    print("pipeline error: \(String(describing: error))")
    #expect(error?.code == .pipelineCreate)
    #expect(error?.location.opcode == 0x05)
    #expect(error?.message.isEmpty == false)
  }

  @Test func aLostDeviceIsATypedErrorNotACrash() throws {
    let renderer = try PngineRenderer(
      png: try fixture(triangle), width: 64, height: 64, devices: PngineDeviceProvider())
    _ = try renderer.render(time: 0)
    renderer.backend.loseDevice()
    let error = #expect(throws: PngineError.self) { _ = try renderer.render(time: 0.1) }
    print("lost device: \(String(describing: error))")
    #expect(error?.code == .deviceLost)
    #expect(error?.code.nativeCode == .contextFailed)
    #expect(error?.location.call == "frame")
  }
}
