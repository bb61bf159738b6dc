// `pngine render` exists only with the WebGPU backend.
#if !PNGINE_WEBGPU_LEFT_OUT
  import Foundation
  import LIVATestSupport
  import PngineKit
  import Testing
  import WAT

  /// One PNG per route from payload bytes to an abort or to unbounded memory, each built here
  /// (an executor written as WAT whose command streams carry the hostile values) and rendered by
  /// `pngine render --keep-going` in a child process: the answer must be a typed error on
  /// stderr and a process that exits on its own, never one killed by a signal (what the app
  /// showing the PNG would suffer).
  @Suite(
    .enabled(if: pngineBinary != nil || requireAllTools, "the pngine executable is not built"),
    .serialized)
  struct HostilePNGTests {
    /// What a child `pngine render` did.
    struct Outcome {
      var signalled: Bool
      var status: Int32
      var stderr: String
    }

    func render(_ png: [UInt8], times: String = "0,1") async throws -> Outcome {
      let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
        "pngine-hostile-\(UUID().uuidString)")
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(at: folder) }
      let file = folder.appendingPathComponent("hostile.png")
      try Data(png).write(to: file)
      let run = try await runPngine([
        "render", file.path, "--times", times, "--size", "64x64", "-o",
        folder.appendingPathComponent("out").path, "--keep-going", "--no-video",
      ])
      return Outcome(
        signalled: run.signalled, status: run.status,
        stderr: String(decoding: run.stderr, as: UTF8.self))
    }

    /// Expects a clean, failing exit whose error names `code`.
    func expectTyped(_ outcome: Outcome, _ code: PngineError.Code, _ comment: Comment) {
      #expect(!outcome.signalled, "killed by signal \(outcome.status): \(comment)")
      #expect(outcome.status != 0, comment)
      #expect(outcome.stderr.contains("\(code)"), "\(comment): \(outcome.stderr.suffix(400))")
    }

    // Route 1: values from the payload reaching wgpu-native unchecked.

    @Test("a buffer usage with bits outside GPUBufferUsage")
    func bufferUsage() async throws {
      var png = HostilePNG()
      png.initStream.createBuffer(id: 0, size: 64, usage: 0xFFFF)
      expectTyped(try await render(png.bytes()), .commandValidation, "usage 0xFFFF")
    }

    @Test("a texture usage with bits outside GPUTextureUsage")
    func textureUsage() async throws {
      var png = HostilePNG()
      let blob = png.initStream.blob([1, 3, 1, 0, 16, 0, 0, 0, 2, 0, 16, 0, 0, 0, 8, 7, 0xFF])
      png.initStream.op(0x02, le16(1) + blob)
      expectTyped(try await render(png.bytes()), .invalidDescriptor, "texture usage 0xFF")
    }

    @Test("a bind-group layout whose visibility is not a GPUShaderStage set")
    func visibility() async throws {
      var png = HostilePNG()
      png.initStream.bindGroupLayout(
        id: 1, json: #"{"entries":[{"binding":0,"visibility":255,"buffer":{}}]}"#)
      expectTyped(try await render(png.bytes()), .invalidDescriptor, "visibility 255")
    }

    @Test("a bind-group layout entry naming no resource type")
    func noResourceType() async throws {
      var png = HostilePNG()
      png.initStream.bindGroupLayout(id: 1, json: #"{"entries":[{"binding":0,"visibility":2}]}"#)
      expectTyped(try await render(png.bytes()), .invalidDescriptor, "an entry of no type")
    }

    @Test("WGSL that is not UTF-8, and WGSL with a multi-byte character where an error is reported")
    func shaderText() async throws {
      for code in [
        Array("@compute @workgroup_size(1) fn main() { let x = 1".utf8) + [0xC3, 0x28, 0xFF],
        Array("@compute @workgroup_size(1) fn main() { let é = ; }".utf8),
      ] {
        var png = HostilePNG()
        png.initStream.shader(id: 0, code: code)
        expectTyped(try await render(png.bytes()), .shaderCompile, "WGSL \(code.suffix(6))")
      }
    }

    // Route 2: an id the checker defined although the GPU never made it.

    @Test("a layout that failed in one frame, used by a bind group in the next")
    func layoutThatFailed() async throws {
      var png = HostilePNG()
      // Frame at t = 0: a layout with a storage-texture format no one knows (refused while the
      // descriptor is built, before wgpu-native makes anything).
      png.frameA.bindGroupLayout(
        id: 1,
        json: #"{"entries":[{"binding":0,"visibility":4,"storageTexture":{"format":"bogus"}}]}"#)
      // Frame at t = 1: a bind group of that layout (a null layout aborts wgpu-native).
      let entries = png.frameB.blob([3, 1, 2, 3, 0])  // group 0 of no entries
      png.frameB.op(0x07, le16(2) + le16(0x8001) + entries)
      let outcome = try await render(png.bytes())
      expectTyped(outcome, .resourceNotFound, "the bind group of a layout that was never made")
    }

    // Route 4: host memory copied per frame.

    @Test("65,534 writes each pointing at the executor's whole memory (200 GB to copy)")
    func hostBytes() async throws {
      var png = HostilePNG()
      png.pages = 96  // 6 MiB: the streams, 3 MiB of blob, and the payload's copy
      png.initStream.createBuffer(id: 0, size: 64, usage: 0x48)
      for _ in 0..<65_534 {
        png.frameB.op(0x20, le16(0) + le32(0) + le32(0) + le32(48 * 65_536))
      }
      expectTyped(try await render(png.bytes()), .budgetExceeded, "200 GB of blobs")
    }

    // Route 5: executor memory grown in one call.

    @Test("an executor that grows its memory to 4 GiB in one call: the grow fails inside it")
    func memoryGrowth() async throws {
      var png = HostilePNG()
      // The frame traps unless memory.grow answered -1 (refused, nothing allocated).
      png.frameBody =
        "(if (i32.ne (memory.grow (i32.const 65000)) (i32.const -1)) (then unreachable))"
      let outcome = try await render(png.bytes())
      #expect(!outcome.signalled, "killed by signal \(outcome.status)")
      #expect(outcome.status == 0, "\(outcome.stderr)")
    }

    // Route 7: GPU memory past the animation's budget.

    @Test("three buffers of 256 MiB: past the 512 MiB budget")
    func gpuBytes() async throws {
      var png = HostilePNG()
      for id: UInt16 in 0..<3 { png.initStream.createBuffer(id: id, size: 256 << 20, usage: 0x48) }
      expectTyped(try await render(png.bytes()), .budgetExceeded, "768 MiB of buffers")
    }
  }

  /// The fuzzer's finds, kept as files (`FuzzFinds/`): the inputs of `pngine fuzz-gpu --seed 7`
  /// that killed `pngine render` before the GPU checks (SIGABRT in wgpu-native's shader
  /// compiler and error formatting, and two SIGSEGV), written by the fuzzer of that time
  /// (`--dump`), so that a later change to the fuzzer cannot change what is tested. Each is
  /// rendered again in a child: it must exit on its own, drawing or with a typed error.
  @Suite(
    .enabled(if: pngineBinary != nil || requireAllTools, "the pngine executable is not built"),
    .serialized)
  struct FuzzRegressionTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("FuzzFinds")

    static var finds: [URL] {
      ((try? FileManager.default.contentsOfDirectory(
        at: folder, includingPropertiesForKeys: nil)) ?? [])
        .filter { $0.pathExtension == "png" }.sorted { $0.path < $1.path }
    }

    @Test func inputsThatOnceKilledTheRendererExitOnTheirOwn() async throws {
      try requireTool(pngineBinary != nil, "the pngine executable")
      let finds = Self.finds
      // 20 inputs of seed 7 aborted (57 and 138 with a segmentation fault).
      #expect(finds.count == 20)
      let codes = (-140...0).map { "\(PngineError.Code(rawValue: Int32($0)))" }
        .filter { $0.contains { $0.isLetter } }
      for file in finds {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent(
          "pngine-find-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let run = try await runPngine([
          "render", file.path, "--times", "0,0.5,1,1.5", "--size", "64x64", "-o", out.path,
          "--keep-going", "--no-video",
        ])
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        let name = file.lastPathComponent
        #expect(!run.signalled, "\(name) was killed by signal \(run.status)")
        // Drawn, or refused with an error of the typed model.
        #expect(
          run.status == 0 || codes.contains { stderr.contains($0) },
          "\(name): status \(run.status), \(stderr.suffix(300))")
      }
    }
  }

  /// A PNG whose executor emits hand-written command streams: `initStream` from `init`,
  /// `frameA` from frames before t = 0.5, `frameB` from frames from t = 0.5 on.
  struct HostilePNG {
    var initStream = CommandStream(base: 0x4_0000)
    var frameA = CommandStream(base: 0x6_0000)
    var frameB = CommandStream(base: 0x8_0000)
    /// Memory pages (64 KiB each). The host copies the payload (this executor included, with
    /// its streams) to 3 MiB, past the streams, so there must be room for it there.
    var pages = 64
    /// WAT run at the start of every frame.
    var frameBody = ""

    func bytes() throws -> [UInt8] {
      let (i, a, b) = (0x1_0000, 0x2_0000, 0x10_0000)
      let segments = [
        (i, initStream.bytes), (a, frameA.bytes), (b, frameB.bytes),
        (initStream.base, initStream.blobs), (frameA.base, frameA.blobs),
        (frameB.base, frameB.blobs),
      ].map { "(data (i32.const \($0.0)) \"\(watString($0.1))\")" }.joined(separator: "\n")
      let wat = """
        (module
          (memory (export "memory") \(pages))
          \(segments)
          (global $cmd (mut i32) (i32.const \(i)))
          (func (export "getBytecodePtr") (result i32) i32.const 0x300000)
          (func (export "setBytecodeLen") (param i32))
          (func (export "getDataPtr") (result i32) i32.const 32768)
          (func (export "setDataLen") (param i32))
          (func (export "getCommandPtr") (result i32) global.get $cmd)
          (func (export "getCommandLen") (result i32) (i32.load (global.get $cmd)))
          (func (export "init") (result i32)
            (global.set $cmd (i32.const \(i)))
            i32.const 0)
          (func (export "frame") (param f32 i32 i32) (result i32)
            \(frameBody)
            (global.set $cmd
              (select (i32.const \(b)) (i32.const \(a)) (f32.ge (local.get 0) (f32.const 0.5))))
            i32.const 0)
        )
        """
      let executor = try wat2wasm(wat)
      return PngineFuzzer.testPNG(with: [1, 0] + Self.payload(executor: executor))
    }

    /// A PNGB payload: the 40-byte header, the executor, then empty string, data and WGSL
    /// tables.
    static func payload(executor: [UInt8]) -> [UInt8] {
      let strings = UInt32(40 + executor.count)
      let data = strings + 2
      let wgsl = data + 2
      let uniforms = wgsl + 1
      var out = Array("PNGB".utf8) + [0, 0, 1, 0, 0, 0, 0, 0]
      for v in [40, UInt32(executor.count), strings, data, wgsl, uniforms, uniforms] {
        out += le32(v)
      }
      return out + executor + [0, 0, 0, 0, 0]
    }

    private func watString(_ bytes: [UInt8]) -> String {
      bytes.map { "\\" + String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
  }

  /// One command stream in the current layout, its blobs kept apart (they go at `base`).
  struct CommandStream {
    let base: Int
    var body: [UInt8] = []
    var count = 0
    var blobs: [UInt8] = []

    init(base: Int) { self.base = base }

    /// The stream with its 8-byte header (length, count, flags), ending in `submit`.
    var bytes: [UInt8] {
      let all = body + [0xF0]
      return le32(UInt32(8 + all.count)) + le16(UInt16(truncatingIfNeeded: count + 1)) + le16(0)
        + all
    }

    /// Stores `bytes` among the blobs: their pointer and length, as commands carry them.
    mutating func blob(_ bytes: [UInt8]) -> [UInt8] {
      let pointer = UInt32(base + blobs.count)
      blobs += bytes
      while blobs.count % 4 != 0 { blobs.append(0) }
      return le32(pointer) + le32(UInt32(bytes.count))
    }

    mutating func op(_ code: UInt8, _ arguments: [UInt8]) {
      body += [code] + arguments
      count += 1
    }

    mutating func createBuffer(id: UInt16, size: UInt32, usage: UInt16) {
      op(0x01, le16(id) + le32(size) + le16(usage))
    }

    mutating func bindGroupLayout(id: UInt16, json: String) {
      let b = blob(Array(json.utf8))
      op(0x0A, le16(id) + b)
    }

    mutating func shader(id: UInt16, code: [UInt8]) {
      let b = blob(code)
      op(0x04, le16(id) + b)
    }
  }

  func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
  func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(v >> ($0 * 8) & 0xFF) } }

  extension String {
    fileprivate func leftPadded(to width: Int) -> String {
      String(repeating: "0", count: max(0, width - count)) + self
    }
  }

#endif
