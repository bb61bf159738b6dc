import Foundation
import PngineKit
import Testing

/// The recording backend and the descriptor decoders: no GPU needed.
struct RecordingBackendTests {
  @Test(arguments: Fixtures.positive)
  func everyFixtureRunsThroughTheRecordingBackend(_ name: String) throws {
    let animation = PngineAnimation()
    let report = try animation.load(png: Fixtures.png(name))
    let backend = RecordingBackend()
    try backend.execute(report.initOutput, inputs: FrameInputs(time: 0, width: 512, height: 512))
    for i in 0..<4 {
      let t = Float(i) / 60
      try backend.execute(
        try animation.frame(time: t, width: 512, height: 512),
        inputs: FrameInputs(time: t, width: 512, height: 512))
    }
    #expect(backend.submits == 4)
    #expect(backend.checker.pass == .none)
  }

  @Test func theTimeUniformIsTimeWidthHeightAspect() throws {
    let animation = PngineAnimation()
    let report = try animation.load(png: Fixtures.png("examples_vite-gallery_shaders_cube.png"))
    let backend = RecordingBackend()
    let inputs = FrameInputs(time: 1.5, width: 640, height: 320)
    try backend.execute(report.initOutput, inputs: inputs)
    try backend.execute(try animation.frame(time: 1.5, width: 640, height: 320), inputs: inputs)
    let written = backend.entries.compactMap { e -> [UInt8]? in
      if case .writeTimeUniform = e.command { return e.written }
      return nil
    }
    let floats: [Float] = [1.5, 640, 320, 2]
    let expected = floats.flatMap { f in (0..<4).map { UInt8((f.bitPattern >> ($0 * 8)) & 0xFF) } }
    #expect(written == [expected])
    #expect(FrameInputs(time: 0, width: 4, height: 0).timeUniformBytes(size: 8).count == 8)
  }

  @Test func aDrawWithoutAPipelineIsRefusedWithItsLocation() throws {
    var commands: [DecodedCommand] = []
    commands.append(
      DecodedCommand(
        opcode: 0x10, offset: 8,
        command: .beginRenderPass(
          colors: [ColorAttachment(texture: 0xFFFE, load: 1, store: 0, clear: nil)], depth: 0xFFFF,
          resolve: nil)))
    commands.append(
      DecodedCommand(
        opcode: 0x15, offset: 21,
        command: .draw(vertexCount: 3, instanceCount: 1, firstVertex: 0, firstInstance: 0)))
    let backend = RecordingBackend()
    let error = #expect(throws: PngineError.self) {
      try backend.execute(
        commands, blobs: [:], call: "frame", inputs: FrameInputs(time: 0, width: 1, height: 1))
    }
    #expect(error?.code == .resourceNotFound)
    #expect(error?.location == PngineError.Location(byteOffset: 21, opcode: 0x15, call: "frame"))
  }

  @Test func aBindGroupOfAnUndefinedBufferIsRefused() throws {
    var checker = CommandChecker()
    try checker.check(
      DecodedCommand(
        opcode: 0x04, offset: 8, command: .createShader(id: 0, code: .init(pointer: 0, length: 1))),
      blob: .bytes([0x20]), call: "init")
    let pipeline = #"{"vertex":{"shader":0,"entryPoint":"vs"}}"#
    try checker.check(
      DecodedCommand(
        opcode: 0x05, offset: 19,
        command: .createRenderPipeline(id: 0, descriptor: .init(pointer: 0, length: 1))),
      blob: .bytes(Array(pipeline.utf8)), call: "init")
    // Group 0, one entry: binding 0, buffer 3, offset 0, size 0.
    let entries: [UInt8] = [3, 2, 1, 7, 0, 2, 3, 1, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    let error = #expect(throws: PngineError.self) {
      try checker.check(
        DecodedCommand(
          opcode: 0x07, offset: 30,
          command: .createBindGroup(id: 0, layout: 0, entries: .init(pointer: 0, length: 20))),
        blob: .bytes(entries), call: "init")
    }
    #expect(error?.code == .resourceNotFound)
    #expect(error?.message.contains("buffer 3") == true)
  }

  @Test func descriptorsDecodeAsUpstreamWritesThem() throws {
    // The cube's depth texture: format depth24plus, usage RENDER_ATTACHMENT, canvas-sized.
    let texture = try TextureDescriptor(decoding: [1, 2, 7, 7, 0x10, 8, 7, 0x10])
    #expect(texture.isCanvasBound)
    #expect(texture.format.flatMap(TextureFormatCode.name) == "depth24plus")
    #expect(texture.usage == 0x10)
    // Boids' compute pipeline: shader 0, entry computeMain.
    let compute = try ComputePipelineDescriptor(
      decoding: [6, 0, 0, 11] + Array("computeMain".utf8))
    #expect(compute.shader == 0 && compute.entryPoint == "computeMain" && compute.layout == nil)
    let group = try BindGroupDescriptor(
      decoding: [3, 2, 1, 7, 0, 2, 3, 2, 0, 0, 3, 0, 16, 0, 0, 0, 8, 0, 0, 0, 1, 2, 5, 0])
    #expect(group.entries.count == 2)
    #expect(
      group.entries[0]
        == BindGroupEntry(binding: 0, kind: .buffer, resource: 3, offset: 16, size: 8))
    #expect(group.entries[1].kind == .sampler)
    #expect(throws: PngineError.self) { try TextureDescriptor(decoding: [1, 1, 1, 0, 0]) }
    #expect(throws: PngineError.self) { try RenderPipelineDescriptor(decoding: Array("{".utf8)) }
  }

  @Test func picturesSurviveAPNGRoundTrip() throws {
    var pixels = [UInt8](repeating: 0, count: 7 * 5 * 4)
    for i in pixels.indices { pixels[i] = UInt8((i * 37) & 0xFF) }
    let image = RGBAImage(width: 7, height: 5, pixels: pixels)
    let decoded = try RGBAImage(png: image.pngData())
    #expect(decoded == image)
    #expect(image.similarity(to: decoded) == 1)
    var other = image
    other.pixels[0] &+= 3
    #expect(image.similarity(to: other) == 34.0 / 35.0)
    #expect(image.similarity(to: other, channelTolerance: 3) == 1)
  }
}
