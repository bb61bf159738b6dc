import Testing

@testable import PngineKit

/// Indirect draws and dispatches read their arguments from a buffer, where no count in the
/// command bounds them. The checker keeps what the host wrote into buffers made for indirect
/// arguments and bounds those as direct commands are bounded; arguments the GPU may have
/// written are refused unless an app allows them.
@Suite("Indirect arguments are bounded")
struct IndirectBudgetTests {
  typealias Op = ExecutorFuzzer.Op

  static func le32(_ v: UInt32) -> [UInt8] {
    (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) }
  }

  static let indirectCopyDst: UInt16 = 0x108
  static let indirectStorage: UInt16 = 0x188

  /// Boids with an argument buffer (id 40, 64 bytes, `usage`) written in `init` with `args`,
  /// its dispatch (or its draw) made indirect from it; `extra` goes before the frame's pass.
  static func boids(
    usage: UInt16, args: [UInt32], draw: Bool, extra: [Op] = []
  ) throws -> [UInt8] {
    var scene = try ExecutorFuzzer.Scene.record(
      png: Fixtures.png("examples_vite-gallery_shaders_boids.png"))
    let words = args.flatMap(le32)
    scene.initOps.insert(
      contentsOf: [
        Op(bytes: [0x01, 40, 0] + le32(64) + [UInt8(usage & 0xFF), UInt8(usage >> 8)]),
        Op(bytes: [0x20, 40, 0] + le32(0) + le32(0) + le32(0), blob: words, blobField: 7),
      ], at: 0)
    let target: UInt8 = draw ? 0x15 : 0x18
    let at = try #require(scene.frameOps.firstIndex { $0.bytes.first == target })
    scene.frameOps[at] = Op(bytes: [draw ? 0x1C : 0x1E, 40, 0] + le32(0))
    scene.frameOps.insert(contentsOf: extra, at: 0)
    return ExecutorFuzzer.png(scene)
  }

  /// Loads `png` and runs `init` and one frame through the checks: the error, if any.
  static func run(_ png: [UInt8], limits: GPULimits = GPULimits()) -> PngineError? {
    do throws(PngineError) {
      let animation = PngineAnimation()
      let report = try animation.load(png: png)
      let backend = RecordingBackend(limits: limits)
      let inputs = FrameInputs(time: 0.5, width: 64, height: 64)
      try backend.execute(report.initOutput, inputs: inputs)
      try backend.execute(try animation.frame(time: 0.5, width: 64, height: 64), inputs: inputs)
      return nil
    } catch {
      return error
    }
  }

  @Test("host-written arguments within the budgets pass, as the fixture's own counts do")
  func within() throws {
    #expect(
      Self.run(try Self.boids(usage: Self.indirectCopyDst, args: [32, 1, 1], draw: false)) == nil)
    #expect(
      Self.run(try Self.boids(usage: Self.indirectCopyDst, args: [3, 1024, 0, 0], draw: true))
        == nil)
  }

  @Test(
    "host-written arguments over a budget are refused as budgetExceeded, over a per-axis limit as commandValidation",
    arguments: [
      ([65535, 65535, 1], false, "budgetExceeded"), ([70000, 1, 1], false, "commandValidation"),
      ([3, 0xFFFF_FFFF, 0, 0], true, "budgetExceeded"),
      ([0xFFFF_FFFF, 1, 0, 0], true, "budgetExceeded"),
    ] as [([UInt32], Bool, String)])
  func over(_ args: [UInt32], _ draw: Bool, _ code: String) throws {
    let error = Self.run(try Self.boids(usage: Self.indirectCopyDst, args: args, draw: draw))
    #expect(error.map { "\($0.code)" } == code, "\(String(describing: error))")
  }

  @Test("arguments the GPU may write are refused unless allowed")
  func gpuWritten() throws {
    let storage = try Self.boids(usage: Self.indirectStorage, args: [32, 1, 1], draw: false)
    let error = Self.run(storage)
    #expect(error?.code == .budgetExceeded)
    #expect(error?.message.contains("may be written by the GPU") == true)
    var limits = GPULimits()
    limits.allowsUnboundedIndirect = true
    #expect(Self.run(storage, limits: limits) == nil)
    // A copy into a host-written argument buffer makes its contents unknown too.
    let copied = try Self.boids(
      usage: Self.indirectCopyDst, args: [32, 1, 1], draw: false,
      extra: [
        Op(bytes: [0x01, 41, 0] + Self.le32(64) + [0x0C, 0]),
        Op(bytes: [0x22, 41, 0] + Self.le32(0) + [40, 0] + Self.le32(0) + Self.le32(16)),
      ])
    #expect(Self.run(copied)?.code == .budgetExceeded)
  }

  @Test("a buffer without INDIRECT usage, or arguments past its end, are refused")
  func malformed() throws {
    let noUsage = try Self.boids(usage: 0x08, args: [32, 1, 1], draw: false)
    #expect(Self.run(noUsage)?.code == .commandValidation)
    var scene = try ExecutorFuzzer.Scene.record(
      png: Fixtures.png("examples_vite-gallery_shaders_boids.png"))
    scene.initOps.insert(Op(bytes: [0x01, 40, 0] + Self.le32(8) + [0x08, 0x01]), at: 0)
    let at = try #require(scene.frameOps.firstIndex { $0.bytes.first == 0x18 })
    scene.frameOps[at] = Op(bytes: [0x1E, 40, 0] + Self.le32(0))
    let error = Self.run(ExecutorFuzzer.png(scene))
    #expect(error?.code == .commandValidation)
    #expect(error?.message.contains("do not fit buffer 40") == true)
  }
}
