import Foundation
import LIVATestSupport
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

  /// Load/unload cycles free what they made. Deterministically: every animation is released
  /// once unloaded and dropped (a weak reference to it is nil), and the executor pool holds no
  /// more than its one idle executor of this payload. Measured: the C heap in use (not RSS,
  /// which keeps freed pages) grows less than 2 MiB over 100 cycles (a leak of one executor's
  /// memory per cycle would be over 100 MiB), in the quietest of three windows, since other
  /// suites in this process allocate at the same time.
  @Test("100 load/unload cycles release every animation and keep the heap flat", .measuresProcess)
  func heapFlat() throws {
    var released = 0
    var ran = 0
    func cycle(_ n: Int) throws {
      for _ in 0..<n {
        weak var weakAnimation: PngineAnimation?
        try {
          let animation = PngineAnimation()
          weakAnimation = animation
          try animation.load(png: png)
          _ = try animation.frame(time: 0, width: 512, height: 512)
          animation.unload()
        }()
        ran += 1
        if weakAnimation == nil { released += 1 }
      }
    }
    try cycle(20)  // warm up allocator pools and the executor pool
    let idleBefore = PngineExecutorPool.shared.statistics.idleExecutors
    let (_, growth) = try Heap.growth(attempts: 3, budget: 2 << 20) { try cycle(100) }
    print("heap growth over 100 cycles (least of up to three windows): \(growth ?? -1) bytes")
    #expect(ran >= 120)
    #expect(released == ran, "\(ran - released) of \(ran) animations not released")
    #expect(PngineExecutorPool.shared.statistics.idleExecutors <= max(idleBefore, 1))
    if let growth {
      #expect(growth < 2 << 20, "\(growth) bytes")
    } else {
      #expect(!Heap.measures, "no heap figure where the C library gives one")
    }
  }
}
