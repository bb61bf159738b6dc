import Foundation
import Testing

@testable import PngineKit

/// Reusing executors: a reset instance behaves as a fresh one, and only one that can be reset
/// is kept.
@Suite struct ExecutorPoolTests {
  typealias Parts = TestExecutors.Parts

  func animation(_ pool: PngineExecutorPool?, mode: LoadingMode = .automatic) -> PngineAnimation {
    PngineAnimation(configuration: PngineConfiguration(loadingMode: mode, executorPool: pool))
  }

  @Test(
    "a reused executor reproduces the oracle byte for byte", arguments: Fixtures.expectationNames)
  func reusedMatchesOracle(png: String) throws {
    let pool = PngineExecutorPool()
    let oracle = Fixtures.oracleBuffers(png).map(\.bytes)
    for round in 0..<3 {
      let a = animation(pool, mode: .split)
      let report = try a.load(png: Fixtures.png(png))
      var got = [report.initOutput.result.bytes]
      for t: Float in [0, 1] { got.append(try a.frameRaw(time: t, width: 512, height: 512).bytes) }
      #expect(got == oracle, "round \(round)")
      a.unload()
    }
    let stats = pool.statistics
    #expect(stats.instantiated == 1)
    #expect(stats.reused == 2)
    #expect(stats.kept == 3)
    #expect(stats.refused == 0)
    #expect(stats.idleExecutors == 1)
  }

  @Test("an executor reused for another payload runs it as a fresh one would")
  func reusedForAnotherPayload() throws {
    // The two audio-demo fixtures embed the same executor (12 062 bytes) with different
    // bytecode and data: each must come out as its own oracle, whichever ran before.
    let pool = PngineExecutorPool()
    let pngs = [
      "examples_audio-demo_public_sceneR.png", "examples_audio-demo_triangle.png",
      "examples_audio-demo_public_sceneR.png",
    ]
    for png in pngs {
      let a = animation(pool, mode: .split)
      let report = try a.load(png: Fixtures.png(png))
      var got = [report.initOutput.result.bytes]
      for t: Float in [0, 1] { got.append(try a.frameRaw(time: t, width: 512, height: 512).bytes) }
      #expect(got == Fixtures.oracleBuffers(png).map(\.bytes), "\(png)")
      a.unload()
    }
    #expect(pool.statistics.instantiated == 1)
    #expect(pool.statistics.reused == 2)
  }

  @Test("every fixture executor can be reset", arguments: Fixtures.positive)
  func fixturesResettable(png: String) throws {
    let file = try PNGFile.read(Fixtures.png(png))
    let payload = try PNGBPayload(file.payloadBytes!)
    let image = try ExecutorImage(Array(payload.executorBytes!))
    #expect(image.notResettable == nil)
    #expect(image.memoryPages > 0)
  }

  /// A frame bumps a counter, the byte at 2048 and the byte at 4096, then returns
  /// `1000 × counter + 100 × byte 4096 + byte 2048 before the bump` as its status. The
  /// counter is a mutable global that is not exported; the byte at 2048 comes from a data
  /// segment ("h", 104); the byte at 4096 starts as zero memory.
  static let stateful = Parts(
    frameBody: """
      (global.set $counter (i32.add (global.get $counter) (i32.const 1)))
      (i32.store8 (i32.const 2048) (i32.add (i32.load8_u (i32.const 2048)) (i32.const 1)))
      (i32.store8 (i32.const 4096) (i32.add (i32.load8_u (i32.const 4096)) (i32.const 1)))
      (i32.add
        (i32.add (i32.mul (global.get $counter) (i32.const 1000))
          (i32.mul (i32.load8_u (i32.const 4096)) (i32.const 100)))
        (i32.sub (i32.load8_u (i32.const 2048)) (i32.const 1)))
      """,
    extra: """
      (global $counter (mut i32) (i32.const 7))
      (data (i32.const 2048) "h")
      """)

  @Test("a reset restores memory and a mutable global that is not exported")
  func resetRestoresState() throws {
    let pool = PngineExecutorPool()
    let payload = try TestExecutors.payload(Self.stateful)
    func statuses() throws -> [UInt32] {
      let a = animation(pool)
      try a.load(payload: payload)
      defer { a.unload() }
      return try (0..<2).map { _ in try a.frameRaw(time: 0, width: 1, height: 1).status }
    }
    let fresh = try statuses()
    #expect(fresh == [8204, 9305])
    #expect(try statuses() == fresh)
    #expect(try statuses() == fresh)
    #expect(pool.statistics.reused == 2)
    // The same executor without a pool, for comparison.
    let unpooled = animation(nil)
    try unpooled.load(payload: payload)
    #expect(try unpooled.frameRaw(time: 0, width: 1, height: 1).status == 8204)
  }

  @Test(
    "an executor whose state a reset cannot restore is never kept",
    arguments: [
      ("table.set", "(table 1 funcref) (func $w (table.set 0 (i32.const 0) (ref.null func)))"),
      ("passive data segment", "(data \"x\")"),
    ])
  func notResettable(reason: String, extra: String) throws {
    let pool = PngineExecutorPool()
    let payload = try TestExecutors.payload(Parts(extra: extra))
    let image = try ExecutorImage(Array(payload.executorBytes!))
    #expect(image.notResettable?.contains(reason) == true)
    for _ in 0..<2 {
      let a = animation(pool)
      try a.load(payload: payload)
      _ = try a.frame(time: 0, width: 1, height: 1)
      a.unload()
    }
    let stats = pool.statistics
    #expect(stats.instantiated == 2)
    #expect(stats.reused == 0)
    #expect(stats.refused == 2)
    #expect(stats.idleExecutors == 0)
  }

  @Test(
    "an executor that trapped, ran out of fuel or grew its memory is not kept",
    arguments: [
      "unreachable", "(loop $l (br $l)) i32.const 0",
      "(drop (memory.grow (i32.const 1))) i32.const 0",
    ])
  func poisonedNotKept(frameBody: String) throws {
    let pool = PngineExecutorPool()
    let a = animation(pool)
    try a.load(payload: try TestExecutors.payload(Parts(frameBody: frameBody)))
    _ = try? a.frame(time: 0, width: 1, height: 1)
    a.unload()
    #expect(pool.statistics.refused == 1)
    #expect(pool.statistics.idleExecutors == 0)
  }

  @Test("replacing and releasing an animation return its executor too")
  func replaceAndRelease() throws {
    let pool = PngineExecutorPool()
    let payload = try TestExecutors.payload(Self.stateful)
    do {
      let a = animation(pool)
      try a.load(payload: payload)
      try a.load(payload: payload)  // the first executor is returned, then taken again
      #expect(pool.statistics.reused == 1)
      #expect(try a.frameRaw(time: 0, width: 1, height: 1).status == 8204)
    }  // released: returned
    #expect(pool.statistics.kept == 2)
    #expect(pool.statistics.idleExecutors == 1)
  }

  @Test("two animations loaded at once get two executors")
  func concurrentOwners() throws {
    let pool = PngineExecutorPool()
    let payload = try TestExecutors.payload(Self.stateful)
    let a = animation(pool)
    let b = animation(pool)
    try a.load(payload: payload)
    try b.load(payload: payload)
    #expect(try a.frameRaw(time: 0, width: 1, height: 1).status == 8204)
    #expect(try b.frameRaw(time: 0, width: 1, height: 1).status == 8204)
    #expect(pool.statistics.instantiated == 2)
    a.unload()
    b.unload()
    #expect(pool.statistics.idleExecutors == 2)
  }

  @Test("four threads loading and unloading through one pool never share an executor")
  func concurrentCycles() async throws {
    let pool = PngineExecutorPool(maximumIdleExecutors: 2)
    let payload = try TestExecutors.payload(Self.stateful)
    let statuses = try await withThrowingTaskGroup(of: [UInt32].self) { group in
      for _ in 0..<4 {
        group.addTask {
          var seen: [UInt32] = []
          for _ in 0..<25 {
            let a = PngineAnimation(configuration: PngineConfiguration(executorPool: pool))
            try a.load(payload: payload)
            seen.append(try a.frameRaw(time: 0, width: 1, height: 1).status)
            seen.append(try a.frameRaw(time: 0, width: 1, height: 1).status)
            a.unload()
          }
          return seen
        }
      }
      return try await group.reduce(into: []) { $0 += $1 }
    }
    // Every owner saw a fresh executor: its first two frames, never another owner's state.
    #expect(statuses.count == 200)
    #expect(Set(statuses) == [8204, 9305])
    let stats = pool.statistics
    #expect(stats.reused + stats.instantiated == 100)
    #expect(stats.kept == 100)
    #expect(stats.idleExecutors <= 2)
  }

  @Test("the pool keeps at most its count and bytes, least recently returned out first; purge")
  func capacity() throws {
    let pool = PngineExecutorPool(maximumIdleExecutors: 2, maximumIdleBytes: 4 * 65536)
    let small = try TestExecutors.payload(Self.stateful)  // 2 pages
    let other = try TestExecutors.payload(Parts(frameBody: "i32.const 0 i32.const 0 drop"))
    let third = try TestExecutors.payload(Parts(memory: "(memory (export \"memory\") 3)"))
    let animations = (0..<3).map { _ in animation(pool) }
    try animations[0].load(payload: small)
    try animations[1].load(payload: other)
    try animations[2].load(payload: third)
    for a in animations { a.unload() }
    // 2 + 2 + 3 pages: the first is dropped for the count, the second for the bytes.
    var stats = pool.statistics
    #expect(stats.idleExecutors == 1)
    #expect(stats.idleBytes == 3 * 65536)
    #expect(stats.evicted == 2)
    let again = animation(pool)
    try again.load(payload: third)
    #expect(pool.statistics.reused == 1)
    again.unload()
    pool.purge()
    stats = pool.statistics
    #expect(stats.idleExecutors == 0)
    #expect(stats.idleBytes == 0)
    #expect(stats.evicted == 3)
  }

  @Test("a kept executor still answers to the next owner's limits")
  func limitsOfNextOwner() throws {
    let pool = PngineExecutorPool()
    let payload = try TestExecutors.payload(Parts())
    let a = animation(pool)
    try a.load(payload: payload)
    a.unload()
    let strict = PngineAnimation(
      configuration: PngineConfiguration(
        runtimeLimits: RuntimeLimits(maxMemoryPages: 1), executorPool: pool))
    let e = #expect(throws: PngineError.self) { try strict.load(payload: payload) }
    #expect(e?.code == .memoryLimit)
    let slow = PngineAnimation(
      configuration: PngineConfiguration(
        runtimeLimits: RuntimeLimits(fuelPerFrame: 1), executorPool: pool))
    let f = #expect(throws: PngineError.self) { try slow.load(payload: payload) }
    #expect(f?.code == .outOfFuel)
    #expect(pool.statistics.reused == 1)
  }

  @Test("the instrumented module only adds exports")
  func instrumentAddsExports() throws {
    let payload = try TestExecutors.payload(Self.stateful)
    let bytes = Array(payload.executorBytes!)
    let image = try ExecutorImage(bytes)
    #expect(image.mutableGlobals == [0])
    let info = try ExecutorInfo(image.instrumented, maxMemoryPages: 1024)
    let original = try ExecutorInfo(bytes, maxMemoryPages: 1024)
    #expect(info.exports == original.exports + [ExecutorImage.exportName(global: 0)])
    #expect(ExecutorImage.instrument([0, 1, 2], exporting: [0]) == nil)
  }
}
