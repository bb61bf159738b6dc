import Foundation
import PngineKit
import PngineTestSupport
import Testing

@testable import PngineWebGPU

/// One PNG per way an executor written to attack the host used to crash or stall it, each
/// built here (``ExecutorFuzzer``: a new WebAssembly module replaying a fixture's scene with
/// the attack in it) and rendered on the GPU: each ends as its typed error, and the same
/// process then renders a healthy animation exactly as before.
@Suite(.serialized, .disturbsProcess)
struct HostileExecutorRouteTests {
  typealias Op = ExecutorFuzzer.Op

  static func le32(_ v: UInt32) -> [UInt8] {
    (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) }
  }

  /// The triangle's scene and the picture it renders at t = 0.5.
  static func healthy() throws -> (ExecutorFuzzer.Scene, RGBAImage) {
    let scene = try ExecutorFuzzer.Scene.record(png: try fixture(triangle))
    let picture = try PngineRenderer(png: ExecutorFuzzer.png(scene), width: 32, height: 32)
      .render(time: 0.5)
    return (scene, picture)
  }

  /// Renders `png` for two frames: the first error, if any.
  static func outcome(_ png: [UInt8]) -> PngineError? {
    do throws(PngineError) {
      let renderer = try PngineRenderer(png: png, width: 32, height: 32)
      for k in 0..<2 { _ = try renderer.render(time: Float(k) * 0.5) }
      return nil
    } catch {
      return error
    }
  }

  /// The routes: a name, how the scene is changed, and the typed error expected.
  enum Route: String, CaseIterable, Sendable {
    case templates, operators, unary, brackets, elseIf, swizzles
    case drawInstances, drawVertices, drawIndexedInstances, dispatchWorkgroups
    case indirectInstances, indirectFromGPU
    case trapBacktrace, endlessFrame, truncatedFlag, storeOp, indexFormat
  }

  static func build(_ route: Route, _ scene: ExecutorFuzzer.Scene) throws -> [UInt8] {
    var scene = scene
    func replace(_ opcode: UInt8, with op: Op) throws {
      let at = try #require(scene.frameOps.firstIndex { $0.bytes.first == opcode })
      scene.frameOps[at] = op
    }
    let draw: UInt8 = 0x15
    switch route {
    case .templates, .operators, .unary, .brackets, .elseIf, .swizzles:
      let kind = Route.allCases.firstIndex(of: route)!
      let at = try #require(scene.initOps.firstIndex { $0.bytes.first == 0x04 })
      scene.initOps[at].blob = Array(ExecutorFuzzer.deepWGSL(kind: kind, depth: 20_000).1.utf8)
    case .drawInstances:
      try replace(draw, with: Op(bytes: [draw] + le32(3) + le32(.max) + le32(0) + le32(0)))
    case .drawVertices:
      try replace(draw, with: Op(bytes: [draw] + le32(.max) + le32(1) + le32(0) + le32(0)))
    case .drawIndexedInstances:
      // An index buffer of its own (INDEX | COPY_DST), then 3 indices × 2³²−1 instances.
      scene.initOps.insert(Op(bytes: [0x01, 9, 0] + le32(64) + [0x18, 0]), at: 0)
      let at = try #require(scene.frameOps.firstIndex { $0.bytes.first == draw })
      scene.frameOps[at] = Op(bytes: [0x16] + le32(3) + le32(.max) + le32(0) + le32(0) + le32(0))
      scene.frameOps.insert(Op(bytes: [0x19, 9, 0, 0]), at: at)
    case .dispatchWorkgroups:
      // Boids' compute pass, dispatched 65535 × 65535 × 1.
      scene = try ExecutorFuzzer.Scene.record(png: try fixture(boids))
      try replace(0x18, with: Op(bytes: [0x18] + le32(65535) + le32(65535) + le32(1)))
    case .indirectInstances, .indirectFromGPU:
      // An argument buffer (INDIRECT | COPY_DST, or with STORAGE too: the GPU may write it)
      // holding 3 vertices × 2³²−1 instances, drawn from.
      let usage: [UInt8] = route == .indirectInstances ? [0x08, 0x01] : [0x88, 0x01]
      let args = le32(3) + le32(.max) + le32(0) + le32(0)
      scene.initOps.insert(
        contentsOf: [
          Op(bytes: [0x01, 40, 0] + le32(64) + usage),
          Op(bytes: [0x20, 40, 0] + le32(0) + le32(0) + le32(0), blob: args, blobField: 7),
        ], at: 0)
      try replace(draw, with: Op(bytes: [0x1C, 40, 0] + le32(0)))
    case .trapBacktrace:
      return ExecutorFuzzer.png(scene, behaviour: .frameRecurses)
    case .endlessFrame:
      return ExecutorFuzzer.png(scene, behaviour: .frameLoops)
    case .truncatedFlag:
      scene.frameOps.insert(Op(bytes: [0xFE, 0xED]), at: 0)
    case .storeOp:
      let at = try #require(scene.frameOps.firstIndex { $0.bytes.first == 0x10 })
      scene.frameOps[at].bytes[4] = 2
    case .indexFormat:
      scene.initOps.insert(Op(bytes: [0x01, 9, 0] + le32(64) + [0x18, 0]), at: 0)
      let at = try #require(scene.frameOps.firstIndex { $0.bytes.first == draw })
      scene.frameOps.insert(Op(bytes: [0x19, 9, 0, 255]), at: at)
    }
    return ExecutorFuzzer.png(scene)
  }

  static func expected(_ route: Route) -> PngineError.Code {
    switch route {
    case .templates, .operators, .unary, .brackets, .elseIf, .swizzles: .shaderCompile
    case .drawInstances, .drawVertices, .drawIndexedInstances, .dispatchWorkgroups,
      .indirectInstances, .indirectFromGPU:
      .budgetExceeded
    case .trapBacktrace: .trap
    case .endlessFrame: .outOfFuel
    case .truncatedFlag, .storeOp, .indexFormat: .commandValidation
    }
  }

  @Test(
    "each hostile executor's route ends as its typed error, and the process then renders as before",
    arguments: Route.allCases)
  func route(_ route: Route) throws {
    let (scene, before) = try Self.healthy()
    let clock = ContinuousClock()
    let started = clock.now
    let error = Self.outcome(try Self.build(route, scene))
    let elapsed = clock.now - started
    #expect(error?.code == Self.expected(route), "\(route): \(String(describing: error))")
    #expect((error?.message.utf8.count ?? 0) <= 2048 + 64, "\(route): the message is bounded")
    #expect(elapsed < .seconds(20), "\(route): took \(elapsed)")
    let after = try PngineRenderer(png: ExecutorFuzzer.png(scene), width: 32, height: 32)
      .render(time: 0.5)
    #expect(after == before, "\(route): the healthy animation renders as before")
  }
}
