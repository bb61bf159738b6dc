import Foundation
import PngineKit
import PngineTestSupport
import Testing

/// Loading twice, unload then load, and memory over 100 load/unload cycles.
@Suite(.serialized) struct LifecycleTests {
  let png = Fixtures.png("examples_vite-gallery_shaders_boids.png")

  @Test("loading twice is harmless: the second load replaces the first")
  func loadTwice() throws {
    let animation = PngineAnimation()
    let first = try animation.load(png: png)
    _ = try animation.frame(time: 0, width: 512, height: 512)
    let second = try animation.load(png: png)
    #expect(first.initOutput.result == second.initOutput.result)
    // A fresh executor: frame 0 again (the init pass), not frame 1.
    let out = try animation.frame(time: 0, width: 512, height: 512)
    #expect(
      out.result.bytes == Fixtures.oracleBuffers("examples_vite-gallery_shaders_boids.png")[1].bytes
    )
  }

  @Test("load, unload, load works; frames in between fail with notInitialized")
  func unloadThenLoad() throws {
    let animation = PngineAnimation()
    try animation.load(png: png)
    #expect(animation.isLoaded)
    animation.unload()
    animation.unload()  // harmless
    #expect(!animation.isLoaded)
    let e = #expect(throws: PngineError.self) {
      try animation.frame(time: 0, width: 512, height: 512)
    }
    #expect(e?.code == .notInitialized)
    try animation.load(png: png)
    _ = try animation.frame(time: 0, width: 512, height: 512)
  }

  @Test("a refused payload keeps the loaded executor; a refused executor leaves none")
  func failedLoad() throws {
    let animation = PngineAnimation()
    try animation.load(png: png)
    #expect(throws: PngineError.self) {
      try animation.load(png: Fixtures.png("examples_invalid_pixel.png"))
    }
    // The PNG failed before the executor was touched: the old one stays.
    #expect(animation.isLoaded)
    #expect(throws: PngineError.self) {
      try animation.load(payload: try PNGBPayload(Fixtures.bytes("simpleInstanced.pngb")))
    }
    #expect(animation.isLoaded)
    let hostile = try TestExecutors.payload(TestExecutors.Parts(initBody: "unreachable"))
    let e = #expect(throws: PngineError.self) { try animation.load(payload: hostile) }
    #expect(e?.code == .trap)
    #expect(!animation.isLoaded)
    try animation.load(png: png)
    #expect(animation.isLoaded)
  }

  /// Other suites run in the same process at the same time and move its RSS both ways (the
  /// first form of this test, one 100-cycle window within ±5 %, failed one run in a few at
  /// +5.4 %). A leak grows RSS in every window, while other suites' noise only sometimes does:
  /// the least growth of three windows is the cycles' own.
  @Test(
    "100 load/unload cycles keep RSS flat: the least growth of three windows within 5 %",
    .measuresProcess)
  func rssFlat() throws {
    func cycle(_ n: Int) throws {
      for _ in 0..<n {
        let animation = PngineAnimation()
        try animation.load(png: png)
        _ = try animation.frame(time: 0, width: 512, height: 512)
        animation.unload()
      }
    }
    try cycle(20)  // warm up allocator pools
    var growths: [Double] = []
    for _ in 0..<3 {
      let before = try Self.residentKiB()
      try cycle(100)
      let after = try Self.residentKiB()
      growths.append(Double(after - before) / Double(before))
    }
    print("RSS growth over 100 cycles, three windows: \(growths.map { $0 * 100 }) %")
    #expect(growths.min()! <= 0.05)
  }

  /// VmRSS from /proc/self/status, in KiB.
  static func residentKiB() throws -> Int {
    let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
    let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
    return try #require(Int(line.split(separator: " ").dropFirst().first ?? ""))
  }
}
