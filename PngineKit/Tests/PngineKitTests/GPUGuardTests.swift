import Foundation
import PngineKit
import Testing

/// The checks every command passes before a GPU backend sees it (``CommandChecker`` with
/// ``GPULimits``, ``ShaderSource``): the values wgpu-native answers by aborting the process are
/// refused here with a typed error naming the command.
struct GPUGuardTests {
  /// Runs `commands` (with their blobs) through a fresh checker; the first error, if any.
  func refusal(_ commands: [(Command, [UInt8]?)], limits: GPULimits = GPULimits())
    -> PngineError?
  {
    var checker = CommandChecker(limits: limits, canvasWidth: 64, canvasHeight: 64)
    for (index, (command, blob)) in commands.enumerated() {
      do {
        try checker.check(
          DecodedCommand(opcode: 0, offset: 8 + index, command: command),
          blob: blob.map { .bytes($0) }, call: "init")
      } catch {
        return error
      }
    }
    return nil
  }

  let ref = BlobRef(pointer: 0, length: 1)

  func buffer(_ id: UInt16, size: UInt32 = 64, usage: UInt16) -> (Command, [UInt8]?) {
    (.createBuffer(id: id, size: size, usage: usage), nil)
  }

  func texture(usage: UInt8, width: UInt32 = 16, height: UInt32 = 16) -> (Command, [UInt8]?) {
    let w = (0..<4).map { UInt8(width >> ($0 * 8) & 0xFF) }
    let h = (0..<4).map { UInt8(height >> ($0 * 8) & 0xFF) }
    return (
      .createTexture(id: 1, descriptor: ref),
      [1, 3, 1, 0] + w + [2, 0] + h + [8, 7, usage]
    )
  }

  func layout(_ json: String) -> (Command, [UInt8]?) {
    (.createBindGroupLayout(id: 2, descriptor: ref), Array(json.utf8))
  }

  func shader(_ bytes: [UInt8]) -> (Command, [UInt8]?) {
    (.createShader(id: 3, code: ref), bytes)
  }

  @Test("buffer usages outside GPUBufferUsage, and MAP_READ with more than COPY_DST, are refused")
  func bufferUsage() {
    #expect(refusal([buffer(0, usage: 0xFFFF)])?.code == .commandValidation)
    #expect(refusal([buffer(0, usage: 0x0400)])?.code == .commandValidation)
    #expect(refusal([buffer(0, usage: 0x0041)])?.code == .commandValidation)
    #expect(refusal([buffer(0, usage: 0x0009)]) == nil)  // MAP_READ | COPY_DST
    #expect(refusal([buffer(0, usage: 0x0048)]) == nil)  // UNIFORM | COPY_DST
    #expect(refusal([buffer(0, usage: 0)]) == nil)  // the host's COPY_DST
  }

  @Test("texture usages outside GPUTextureUsage and sizes past the limits are refused")
  func textureValues() {
    #expect(refusal([texture(usage: 0xFF)])?.code == .invalidDescriptor)
    #expect(refusal([texture(usage: 0x20)])?.code == .invalidDescriptor)
    #expect(refusal([texture(usage: 0x14)]) == nil)
    #expect(refusal([texture(usage: 0x10, width: 9000)])?.code == .invalidDescriptor)
    #expect(refusal([texture(usage: 0x10, width: 0)])?.code == .invalidDescriptor)
  }

  @Test("a layout's visibility outside GPUShaderStage, or an entry of no or two resource types")
  func layoutEntries() {
    let bad = [
      #"{"entries":[{"binding":0,"visibility":255,"buffer":{}}]}"#,
      #"{"entries":[{"binding":0,"visibility":2}]}"#,
      #"{"entries":[{"binding":0,"visibility":2,"buffer":{},"sampler":{}}]}"#,
      #"{"entries":[{"binding":5000,"visibility":2,"buffer":{}}]}"#,
    ]
    for json in bad {
      #expect(refusal([layout(json)])?.code == .invalidDescriptor, "\(json)")
    }
    #expect(refusal([layout(#"{"entries":[{"binding":0,"visibility":6,"buffer":{}}]}"#)]) == nil)
  }

  @Test(
    "queue writes need COPY_DST and whole words inside the buffer (wgpu-native aborts otherwise)")
  func queueWrites() {
    let uniform = buffer(0, size: 16, usage: 0x40)  // UNIFORM, no COPY_DST
    let writable = buffer(0, size: 16, usage: 0x48)
    let write = { (offset: UInt32, bytes: Int) -> (Command, [UInt8]?) in
      (.writeBuffer(id: 0, offset: offset, data: self.ref), [UInt8](repeating: 1, count: bytes))
    }
    #expect(refusal([uniform, write(0, 4)])?.code == .commandValidation)
    #expect(refusal([writable, write(2, 4)])?.code == .commandValidation)
    #expect(refusal([writable, write(12, 8)])?.code == .commandValidation)
    #expect(refusal([writable, write(12, 4)]) == nil)
    #expect(refusal([writable, (.writeTimeUniform(id: 0, offset: 8, size: 16), nil)]) != nil)
    #expect(refusal([writable, (.writeTimeUniform(id: 0, offset: 0, size: 16), nil)]) == nil)
    #expect(refusal([writable, (.writeTimeUniform(id: 0, offset: 0, size: 6), nil)]) != nil)
  }

  @Test("copies between buffers need their usages, aligned ranges, and two buffers")
  func bufferCopies() {
    let source = buffer(0, size: 16, usage: 0x04)
    let destination = buffer(1, size: 16, usage: 0x08)
    let copy = { (from: UInt16, to: UInt16, size: UInt32) -> (Command, [UInt8]?) in
      (
        .copyBufferToBuffer(
          source: from, sourceOffset: 0, destination: to, destinationOffset: 0, size: size), nil
      )
    }
    #expect(refusal([source, destination, copy(0, 1, 16)]) == nil)
    #expect(refusal([source, destination, copy(1, 0, 16)])?.code == .commandValidation)
    #expect(refusal([source, destination, copy(0, 1, 6)])?.code == .commandValidation)
    #expect(refusal([source, destination, copy(0, 0, 4)])?.code == .commandValidation)
  }

  @Test("the animation's GPU memory is budgeted: buffers and textures past it are refused")
  func gpuBudget() {
    var limits = GPULimits()
    limits.gpuByteBudget = 1 << 20
    #expect(
      refusal(
        [buffer(0, size: 1 << 19, usage: 0x48), buffer(1, size: 1 << 19, usage: 0x48)],
        limits: limits) == nil)
    let over = refusal(
      [buffer(0, size: 1 << 19, usage: 0x48), buffer(1, size: (1 << 19) + 4, usage: 0x48)],
      limits: limits)
    #expect(over?.code == .budgetExceeded)
    #expect(over?.message.contains("budget") == true)
    // A 512×512 RGBA texture is 1 MiB: with a buffer already there it does not fit.
    #expect(
      refusal(
        [buffer(0, size: 64, usage: 0x48), texture(usage: 0x10, width: 512, height: 512)],
        limits: limits)?.code
        == .budgetExceeded)
    // A buffer past WebGPU's maxBufferSize, whatever the budget.
    #expect(refusal([buffer(0, size: 300 << 20, usage: 0x48)])?.code == .limitExceeded)
  }

  @Test("bind-group slots, vertex-buffer slots and dispatch sizes are bounded by the limits")
  func passValues() {
    var checker = CommandChecker()
    #expect(throws: Never.self) {
      try checker.check(
        DecodedCommand(opcode: 0x11, offset: 8, command: .beginComputePass), blob: nil,
        call: "frame")
    }
    let e = #expect(throws: PngineError.self) {
      try checker.check(
        DecodedCommand(opcode: 0x13, offset: 9, command: .setBindGroup(slot: 9, id: 0)),
        blob: nil, call: "frame")
    }
    #expect(e?.code == .commandValidation)
  }

  @Test("WGSL that is not UTF-8, has non-ASCII code or control characters, or nests too deep")
  func shaderSources() {
    let good = Array("@vertex fn vs() -> @builtin(position) vec4f { return vec4f(0.0); }".utf8)
    #expect(refusal([shader(good)]) == nil)
    #expect(refusal([shader(good + [0xFF, 0xFE])])?.code == .shaderCompile)  // not UTF-8
    #expect(refusal([shader(Array("fn é() {}".utf8))])?.code == .shaderCompile)
    #expect(refusal([shader(Array("fn f() {}\u{0}".utf8))])?.code == .shaderCompile)
    let deep = String(repeating: "(", count: 65) + String(repeating: ")", count: 65)
    let refused = refusal([shader(Array("fn f() -> i32 { return \(deep)1; }".utf8))])
    #expect(refused?.code == .shaderCompile)
    #expect(refused?.message.contains("nest") == true)
    var limits = GPULimits()
    limits.maxShaderSourceBytes = 16
    #expect(refusal([shader(good)], limits: limits)?.code == .shaderCompile)
  }

  @Test("non-ASCII in WGSL comments is blanked, not refused; the code is unchanged")
  func shaderComments() throws {
    let text = "// señal — ünïcode\nfn f() {} /* nested /* ✓ */ é */ fn g() {}"
    let prepared = try ShaderSource.prepare(Array(text.utf8), limits: GPULimits()).get()
    let out = String(decoding: prepared, as: UTF8.self)
    let ascii = out.unicodeScalars.allSatisfy { $0.isASCII }
    #expect(ascii)
    let lines = out.split(separator: "\n")
    let keptCode =
      lines.count == 2 && lines[1].hasPrefix("fn f() {} /*") && lines[1].hasSuffix("*/ fn g() {}")
    #expect(keptCode, "\(out)")
    #expect(prepared.count == Array(text.utf8).count)
    // The same characters outside the comment are refused, with the line.
    if case .failure(let refusal) = ShaderSource.prepare(
      Array("fn f() {}\nfn ü() {}".utf8), limits: GPULimits())
    {
      #expect(refusal.line == 2)
    } else {
      Issue.record("a non-ASCII identifier was accepted")
    }
  }

  @Test(arguments: Fixtures.positive)
  func everyFixturePassesTheChecks(_ name: String) throws {
    let animation = PngineAnimation()
    let report = try animation.load(png: Fixtures.png(name))
    let backend = RecordingBackend()
    try backend.execute(report.initOutput, inputs: FrameInputs(time: 0, width: 512, height: 512))
    try backend.execute(
      try animation.frame(time: 0.5, width: 512, height: 512),
      inputs: FrameInputs(time: 0.5, width: 512, height: 512))
    #expect(backend.checker.gpuBytes > 0 || backend.checker.defined[.buffer] == nil)
  }
}

/// A short run of the stream fuzzer (scripts/fuzz-streams runs a million): mutated streams and
/// descriptors reach the checker and the descriptor decoders, and nothing crashes.
struct StreamFuzzerTests {
  @Test func mutatedStreamsReachTheChecksAndAreRefusedWithTypedErrors() throws {
    let corpus = try Fixtures.positive.map { name throws(PngineError) in
      try StreamFuzzer.Entry.record(png: Fixtures.png(name))
    }
    let seed = UInt64.random(in: 1...UInt64.max)
    print("StreamFuzzer seed \(seed)")
    var fuzzer = StreamFuzzer(seed: seed, corpus: corpus)
    let report = fuzzer.run(count: 3_000)
    print(report)
    #expect(report.inputs == 3_000)
    // Past the decoder: the descriptor decoders and the checker's value rules refused some.
    let deep: [PngineError.Code] = [.invalidDescriptor, .commandValidation, .resourceNotFound]
    #expect(deep.map { report.rejections[$0] ?? 0 }.reduce(0, +) > 100, "\(report)")
  }
}
