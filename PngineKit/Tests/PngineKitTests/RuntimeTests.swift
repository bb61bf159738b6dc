import Foundation
import Locking
import Logging
import PngineKit
import Testing

/// The runtime on the real fixtures: loading modes, legacy sentinels, WGSL blobs.
@Suite struct RuntimeTests {
  @Test(
    "legacy executors in split mode: sentinel blobs become diagnostics, never reads",
    arguments: Fixtures.legacy)
  func legacySplit(png: String) throws {
    let animation = PngineAnimation(configuration: PngineConfiguration(loadingMode: .split))
    let report = try animation.load(png: Fixtures.png(png))
    #expect(report.mode == .split)
    #expect(report.executor.layout == .legacy)
    #expect(report.abiVersion == 1)
    let shaders = report.initOutput.buffer.commands.indices.filter {
      if case .createShader = report.initOutput.buffer.commands[$0].command { return true }
      return false
    }
    #expect(!shaders.isEmpty)
    for i in shaders { #expect(report.initOutput.blobs[i] == .legacySentinel) }
    #expect(animation.diagnostics.snapshot.unresolvedBlobs >= shaders.count)
  }

  @Test(
    "legacy executors in automatic mode: single-buffer, shader blobs are WGSL",
    arguments: Fixtures.legacy)
  func legacyAutomatic(png: String) throws {
    let animation = PngineAnimation()
    let report = try animation.load(png: Fixtures.png(png))
    #expect(report.mode == .singleBuffer)
    var shaders = 0
    for (i, c) in report.initOutput.buffer.commands.enumerated() {
      guard case .createShader = c.command else { continue }
      shaders += 1
      let text = try #require(report.initOutput.blobs[i]?.text)
      #expect(text.contains("@vertex") || text.contains("@fragment") || text.contains("fn "))
    }
    #expect(shaders > 0)
    #expect(animation.diagnostics.snapshot.unresolvedBlobs == 0)
  }

  @Test("the single-buffer fallback is logged")
  func fallbackLogged() throws {
    let lines = Locked<[String]>([])
    let logger = Logger(label: "test") { _ in CapturingHandler(lines: lines) }
    let animation = PngineAnimation(logger: logger)
    try animation.load(png: Fixtures.png("examples_vite-basic_shader.png"))
    #expect(
      lines.withLock { $0 }.contains { $0.hasPrefix("notice") && $0.contains("single-buffer") })
    lines.withLock { $0 = [] }
    try animation.load(png: Fixtures.png("examples_vite-gallery_shaders_triangle.png"))
    #expect(!lines.withLock { $0 }.contains { $0.contains("single-buffer") })
  }

  @Test("current executors: split mode, WGSL blobs, ABI 1", arguments: Fixtures.positive)
  func allLoadAndRun(png: String) throws {
    let animation = PngineAnimation()
    let report = try animation.load(png: Fixtures.png(png))
    #expect(report.abiVersion == 1)
    #expect(report.mode == (Fixtures.legacy.contains(png) ? .singleBuffer : .split))
    let expected = Fixtures.oracleBuffers(png)
    // Outside the blob pointers, automatic mode emits the oracle's buffers.
    #expect(report.initOutput.buffer.commandCount == CommandBuffer.count(expected[0].bytes))
    for (i, t) in [Float(0), 1].enumerated() {
      let out = try animation.frame(time: t, width: 512, height: 512)
      #expect(out.result.bytes == expected[i + 1].bytes)
    }
    let d = animation.diagnostics.snapshot
    #expect(d.calls == 3)
    #expect(d.frames == 2)
    #expect(d.draws >= 2)
    #expect(d.lastError == nil)
  }

  @Test("boids diagnostics: compute passes, dispatches, render passes, draws")
  func boidsDiagnostics() throws {
    let animation = PngineAnimation()
    try animation.load(png: Fixtures.png("examples_vite-gallery_shaders_boids.png"))
    _ = try animation.frame(time: 0, width: 512, height: 512)
    let d = animation.diagnostics.snapshot
    #expect(d.computePasses == 2)
    #expect(d.dispatches == 2)
    #expect(d.renderPasses == 1)
    #expect(d.draws == 1)
    #expect(d.pipelines == 3)
    #expect(d.bindGroups == 3)
    #expect(d.frames == 1)
    #expect(try animation.frameCounter() == 1)
  }
}

extension CommandBuffer {
  static func count(_ bytes: [UInt8]) -> UInt16 { UInt16(bytes[4]) | UInt16(bytes[5]) << 8 }
}
