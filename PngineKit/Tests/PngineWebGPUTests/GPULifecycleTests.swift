import Foundation
import LIVATestSupport
import PngineKit
import PngineTestSupport
import PngineWebGPU
import Testing

/// The fresh path (no executor pool) with GPU objects: 100 renderers made, drawn and dropped
/// leave the process's memory flat, so neither the executor nor wgpu objects leak per cycle.
@Suite(.serialized, .measuresProcess)
struct GPULifecycleTests {
  @Test("100 renderer cycles on the fresh path, GPU objects included, keep RSS flat")
  func rendererCyclesKeepMemoryFlat() throws {
    let png = try fixture(cube)
    let configuration = PngineConfiguration(executorPool: nil)
    func cycle(_ n: Int) throws {
      for _ in 0..<n {
        let renderer = try PngineRenderer(
          png: png, width: 64, height: 64, configuration: configuration)
        _ = try renderer.render(time: 0.5)
      }
    }
    // The driver's and the allocator's pools fill over the first ~100 cycles (measured: +4 MiB,
    // then flat), so the measured cycles come after 110.
    try cycle(10)
    let start = try #require(ResidentMemory.kibibytes())
    try cycle(100)
    // Other suites run in this process meanwhile and move its RSS both ways (one 100-cycle
    // window measured 122 KiB a cycle once while they did): a leak grows every window, their
    // noise only some, so the least of three windows is the cycles' own.
    var perCycle: [Double] = []
    for _ in 0..<3 {
      let before = try #require(ResidentMemory.kibibytes())
      try cycle(35)
      perCycle.append(Double(try #require(ResidentMemory.kibibytes()) - before) / 35)
    }
    print("RSS \(start) KiB after 10 cycles; KiB a cycle over three windows of 35: \(perCycle)")
    // A leaked executor (its 1 MiB+ of memory) or a leaked canvas and read-back (32 KiB at
    // 64²) per cycle would add up far past this.
    #expect(perCycle.min()! < 64, "\(perCycle) KiB a cycle")
  }
}
