import Foundation
import PngineKit
import PngineTestSupport
import Testing

@testable import PngineWebGPU

/// The worst shaders within the structure limits reach wgpu-native's compiler (naga) from a
/// caller whose own stack is that of an Apple secondary thread (512 KiB): modules and
/// pipelines are made on a thread sized for the compiler, so each either compiles or is a
/// typed error, and the process lives.
@Suite(.serialized, .disturbsProcess)
struct ShaderStackTests {
  static let appleThread = 512 << 10
  let inputs = FrameInputs(time: 0, width: 1, height: 1)

  /// A compute shader of 61 `else if` arms and a 254-term chain (both at their limits), and a
  /// pipeline of it: what the SPIR-V writer recurses over too.
  static var pipelineAtTheLimitsStream: Stream {
    var s = Stream()
    s.add(
      0x04, .createShader(id: 0, code: BlobRef(pointer: 0, length: 0)),
      blob: Array(HostileWGSL.computeShader(arms: 61, terms: 254).utf8))
    s.add(
      0x06, .createComputePipeline(id: 0, descriptor: BlobRef(pointer: 0, length: 0)),
      blob: [0x06, 0, 0, 4] + Array("main".utf8))
    return s
  }

  /// Runs `stream` on a fresh backend from a 512 KiB thread; the error, if any.
  func run(_ stream: Stream) throws -> PngineError? {
    let backend = try WebGPUBackend(width: 1, height: 1)
    let outcome: PngineError?? = LargeStack.run(stackBytes: Self.appleThread) {
      do throws(PngineError) {
        try backend.execute(stream.commands, blobs: stream.blobs, call: "init", inputs: inputs)
        return nil
      } catch {
        return error
      }
    }
    guard let outcome else {
      Issue.record("no thread")
      return nil
    }
    return outcome
  }

  /// For `scripts/measure-shader-stack` only (skipped otherwise): compiles the constructs at
  /// their limits (`PNGINE_MEASURE_CONSTRUCT`: one of them by index; the compute pipeline
  /// too) on a compiler thread of `PNGINE_MEASURE_STACK_KB` KiB. Too small a stack crashes the
  /// process, which is what the script looks for.
  @Test(
    "measure: the constructs at their limits on a compiler stack of a given size",
    .enabled(if: ProcessInfo.processInfo.environment["PNGINE_MEASURE_STACK_KB"] != nil))
  func measure() throws {
    let environment = ProcessInfo.processInfo.environment
    let kib = try #require(environment["PNGINE_MEASURE_STACK_KB"].flatMap { Int($0) })
    var limits = GPULimits()
    limits.shaderCompilerStackBytes = kib << 10
    let only = environment["PNGINE_MEASURE_CONSTRUCT"].flatMap { Int($0) }
    for (index, construct) in HostileWGSL.all.enumerated() where only == nil || only == index {
      var s = Stream()
      s.add(
        0x04, .createShader(id: 0, code: BlobRef(pointer: 0, length: 0)),
        blob: Array(construct.shader(construct.within).utf8))
      let backend = try WebGPUBackend(width: 1, height: 1, limits: limits)
      _ = try? backend.execute(s.commands, blobs: s.blobs, call: "init", inputs: inputs)
    }
    if only == nil || only == HostileWGSL.all.count {
      let s = Self.pipelineAtTheLimitsStream
      let backend = try WebGPUBackend(width: 1, height: 1, limits: limits)
      try backend.execute(s.commands, blobs: s.blobs, call: "init", inputs: inputs)
    }
  }

  @Test(
    "every construct at the most repetitions the limits allow compiles or is a typed error",
    arguments: HostileWGSL.all)
  func atTheLimits(_ construct: HostileWGSL) throws {
    var s = Stream()
    s.add(
      0x04, .createShader(id: 0, code: BlobRef(pointer: 0, length: 0)),
      blob: Array(construct.shader(construct.within).utf8))
    let error = try run(s)
    print("\(construct.name) × \(construct.within): \(error.map { "\($0.code)" } ?? "compiled")")
    if let error { #expect(error.code == .shaderCompile) }
  }

  @Test("a compute pipeline of the deepest blocks and tallest expression allowed is made")
  func pipelineAtTheLimits() throws {
    let s = Self.pipelineAtTheLimitsStream
    let error = try run(s)
    #expect(error == nil, "\(String(describing: error))")
  }
}
