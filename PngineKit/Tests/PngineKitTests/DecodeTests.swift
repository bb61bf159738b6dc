import PngineKit
import Testing

/// The typed decoder over the oracle's 18 command buffers, with the layout chosen from each
/// payload's executor.
@Suite struct DecodeTests {
  static func info(_ png: String) throws -> ExecutorInfo {
    let file = try PNGFile.read(Fixtures.png(png))
    let payload = try PNGBPayload(file.payloadBytes!)
    return try ExecutorInfo(Array(payload.executorBytes!), maxMemoryPages: 1024)
  }

  @Test("all 18 buffers decode, count and length agreeing", arguments: Fixtures.positive)
  func decodesAll(png: String) throws {
    let layout = try Self.info(png).layout
    #expect(layout == (Fixtures.legacy.contains(png) ? .legacy : .current))
    let buffers = Fixtures.oracleBuffers(png)
    #expect(buffers.map(\.name) == ["init", "frame0", "frame1"])
    var validator = CommandValidator()
    for (name, bytes) in buffers {
      let buffer = try CommandBuffer(decoding: bytes, layout: layout, call: name)
      #expect(Int(buffer.totalLength) == bytes.count)
      #expect(buffer.commands.count == Int(buffer.commandCount))
      #expect(!buffer.isTruncated)
      try validator.validate(buffer, call: name)
    }
  }

  @Test("the legacy buffers do not decode with the current table", arguments: Fixtures.legacy)
  func legacyNeedsItsTable(png: String) {
    let failures = Fixtures.oracleBuffers(png).filter { (_, bytes) in
      (try? CommandBuffer(decoding: bytes, layout: .current)) == nil
    }
    #expect(!failures.isEmpty)
  }

  @Test("boids frame 0: init pass, ping-pong phase 0, render pass, draw, submit")
  func boidsFrame0() throws {
    let bytes = Fixtures.oracleBuffers("examples_vite-gallery_shaders_boids.png")[1].bytes
    let buffer = try CommandBuffer(decoding: bytes, layout: .current)
    let canvas = ColorAttachment(texture: 0xFFFE, load: 1, store: 0, clear: .unorm8(0, 0, 0, 255))
    #expect(
      buffer.commands.map(\.command) == [
        .beginComputePass, .setPipeline(id: 2), .setBindGroup(slot: 0, id: 2),
        .dispatch(x: 32, y: 1, z: 1), .endPass,
        .writeBuffer(id: 3, offset: 0, data: BlobRef(pointer: 0x14_0DE6, length: 28)),
        .beginComputePass, .setPipeline(id: 1), .setBindGroup(slot: 0, id: 0),
        .dispatch(x: 32, y: 1, z: 1), .endPass,
        .beginRenderPass(colors: [canvas], depth: 0xFFFF, resolve: 0xFFFF),
        .setPipeline(id: 0), .setVertexBuffer(slot: 0, id: 1), .setVertexBuffer(slot: 1, id: 2),
        .draw(vertexCount: 3, instanceCount: 2048, firstVertex: 0, firstInstance: 0), .endPass,
        .submit,
      ])
    #expect(buffer.commands.map(\.offset).prefix(3) == [8, 9, 12])
  }

  @Test("boids frame 1: the other ping-pong phase, no init pass")
  func boidsFrame1() throws {
    let bytes = Fixtures.oracleBuffers("examples_vite-gallery_shaders_boids.png")[2].bytes
    let commands = try CommandBuffer(decoding: bytes, layout: .current).commands.map(\.command)
    #expect(commands.count == 13)
    #expect(commands.filter { $0 == .beginComputePass }.count == 1)
    #expect(commands[3] == .setBindGroup(slot: 0, id: 1))
    #expect(commands[8] == .setVertexBuffer(slot: 0, id: 0))
    #expect(commands.last == .submit)
  }

  @Test("legacy triangle: 7-byte create_buffer, 6-byte render pass without clear colour")
  func legacyTriangle() throws {
    let buffers = Fixtures.oracleBuffers("examples_audio-demo_triangle.png")
    let sentinel = BlobRef(pointer: 0xAAAA_AAAA, length: 0)
    let initBuffer = try CommandBuffer(decoding: buffers[0].bytes, layout: .legacy)
    #expect(
      initBuffer.commands.map(\.command) == [
        .createShader(id: 0, code: sentinel), .createBuffer(id: 0, size: 16, usage: 0x48),
        .createRenderPipeline(id: 0, descriptor: sentinel),
        .createBindGroup(id: 0, layout: 0, entries: sentinel),
      ])
    let frame = try CommandBuffer(decoding: buffers[1].bytes, layout: .legacy)
    #expect(
      frame.commands.map(\.command) == [
        .writeTimeUniform(id: 0, offset: 0, size: 16),
        .beginRenderPass(
          colors: [ColorAttachment(texture: 0xFFFE, load: 1, store: 0, clear: nil)],
          depth: 0xFFFF, resolve: nil),
        .setPipeline(id: 0), .setBindGroup(slot: 0, id: 0),
        .draw(vertexCount: 3, instanceCount: 1, firstVertex: 0, firstInstance: 0), .endPass,
        .submit,
      ])
  }

  @Test("cube: f32-free current render pass with a grey clear, depth texture")
  func cubeFrame() throws {
    let bytes = Fixtures.oracleBuffers("examples_vite-gallery_shaders_cube.png")[1].bytes
    let commands = try CommandBuffer(decoding: bytes, layout: .current).commands.map(\.command)
    #expect(
      commands[1]
        == .beginRenderPass(
          colors: [
            ColorAttachment(texture: 0xFFFE, load: 1, store: 0, clear: .unorm8(128, 128, 128, 255))
          ], depth: 0, resolve: 0xFFFF))
    #expect(
      commands[5] == .draw(vertexCount: 36, instanceCount: 1, firstVertex: 0, firstInstance: 0))
  }

  @Test("malformed buffers give typed errors with offset and opcode")
  func malformed() {
    // Header says 2 commands, holds 1.
    var e = #expect(throws: PngineError.self) {
      try CommandBuffer(decoding: [9, 0, 0, 0, 2, 0, 0, 0, 0xF0], layout: .current)
    }
    #expect(e?.code == .invalidCommandBuffer)
    // Unknown opcode.
    e = #expect(throws: PngineError.self) {
      try CommandBuffer(decoding: [9, 0, 0, 0, 1, 0, 0, 0, 0x42], layout: .current)
    }
    #expect(e?.location.opcode == 0x42)
    #expect(e?.location.byteOffset == 8)
    // A draw cut short by the header's length.
    e = #expect(throws: PngineError.self) {
      try CommandBuffer(decoding: [12, 0, 0, 0, 1, 0, 0, 0, 0x15, 3, 0, 0, 0, 0], layout: .current)
    }
    #expect(e?.location.opcode == 0x15)
    // Length past the bytes read.
    e = #expect(throws: PngineError.self) {
      try CommandBuffer(decoding: [200, 0, 0, 0, 0, 0, 0, 0], layout: .current)
    }
    #expect(e?.code == .invalidCommandBuffer)
  }

  @Test("the validator: ids before use, passes nest, submit last")
  func validator() throws {
    /// Decodes `commands` (with `count` commands) and validates them.
    func check(_ commands: [UInt8], count: UInt8) -> PngineError? {
      let total = UInt8(commands.count + 8)
      var validator = CommandValidator()
      do throws(PngineError) {
        let buffer = try CommandBuffer(
          decoding: [total, 0, 0, 0, count, 0, 0, 0] + commands, layout: .current)
        try validator.validate(buffer)
        return nil
      } catch {
        return error
      }
    }
    #expect(check([0x11, 0x18, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0x17, 0xF0], count: 4) == nil)
    // set_pipeline outside a pass
    #expect(check([0x12, 0, 0], count: 1)?.code == .commandValidation)
    // an undefined pipeline
    #expect(check([0x11, 0x12, 7, 0, 0x17], count: 3)?.code == .resourceNotFound)
    #expect(check([0x11, 0x11, 0x17, 0x17], count: 4)?.code == .commandValidation)  // nested passes
    #expect(check([0x17], count: 1)?.code == .commandValidation)  // end without begin
    #expect(check([0x11], count: 1)?.code == .commandValidation)  // pass left open
    #expect(check([0xF0, 0x11, 0x17], count: 3)?.code == .commandValidation)  // submit not last
    #expect(  // a draw in a compute pass
      check([0x11, 0x15] + [UInt8](repeating: 0, count: 16) + [0x17], count: 3)?.code
        == .commandValidation)
  }
}
