import Foundation
import LIVATestSupport
import Logging
import PngineTestSupport
import Testing

@testable import PngineKit

/// Command buffers written byte by byte (current layout), for executors that emit them.
enum CommandBytes {
  static func u16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
  static func u32(_ v: UInt32) -> [UInt8] {
    [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
  }

  /// The 8-byte header (total length, count, flags 0) before `commands`.
  static func buffer(_ commands: [[UInt8]]) -> [UInt8] {
    let body = commands.flatMap { $0 }
    return u32(UInt32(8 + body.count)) + u16(UInt16(commands.count)) + u16(0) + body
  }

  static func createBuffer(_ id: UInt16, size: UInt32) -> [UInt8] {
    [0x01] + u16(id) + u32(size) + u16(8)
  }
  static func writeBuffer(_ id: UInt16, pointer: UInt32, length: UInt32) -> [UInt8] {
    [0x20] + u16(id) + u32(0) + u32(pointer) + u32(length)
  }
  /// A render pass on the canvas: no depth, no resolve target.
  static let beginRenderPass: [UInt8] =
    [0x10] + u16(0xFFFE) + [1, 1] + u16(0xFFFF) + [0, 0, 0, 255] + u16(0xFFFF)
  static let beginComputePass: [UInt8] = [0x11]
  static let draw: [UInt8] = [0x15] + u32(3) + u32(1) + u32(0) + u32(0)
  static let dispatch: [UInt8] = [0x18] + u32(1) + u32(1) + u32(1)
  static let endPass: [UInt8] = [0x17]
  static let submit: [UInt8] = [0xF0]

  /// `bytes` as the text of a WAT data string.
  static func watString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    var out = ""
    out.reserveCapacity(bytes.count * 3)
    for b in bytes {
      out.append("\\")
      out.append(digits[Int(b >> 4)])
      out.append(digits[Int(b & 0xF)])
    }
    return out
  }

  /// An executor of 16 pages (1 MiB) whose `init` emits `initBuffer` and whose every frame
  /// emits `frameBuffer`: both lie in data segments high in memory, above where the payload
  /// is written, and `getCommandPtr` answers the one of the last call.
  static func executor(init initBuffer: [UInt8], frame frameBuffer: [UInt8]) throws
    -> PNGBPayload
  {
    let initAt = 0x80000
    let frameAt = 0x81000
    return try TestExecutors.payload(
      TestExecutors.Parts(
        memory: "(memory (export \"memory\") 16)",
        commandPointer: "global.get $cmd",
        commandLength: "(i32.load (global.get $cmd))",
        initBody: "(global.set $cmd (i32.const \(initAt))) i32.const 0",
        frameBody: "(global.set $cmd (i32.const \(frameAt))) i32.const 0",
        extra: """
          (global $cmd (mut i32) (i32.const \(initAt)))
          (data (i32.const \(initAt)) "\(watString(initBuffer))")
          (data (i32.const \(frameAt)) "\(watString(frameBuffer))")
          """))
  }
}

/// The per-frame budgets: host bytes copied, draws and
/// dispatches, fuel, executor memory; a stopped animation and a poisoned executor.
@Suite struct BudgetTests {
  typealias Parts = TestExecutors.Parts

  static let quiet = Logger(label: "budget-tests", factory: { _ in SwiftLogNoOpLogHandler() })

  func animation(
    _ payload: PNGBPayload, limits: RuntimeLimits = RuntimeLimits(),
    budgets: FrameBudgets = FrameBudgets(), pool: PngineExecutorPool? = nil
  ) throws -> PngineAnimation {
    let animation = PngineAnimation(
      configuration: PngineConfiguration(
        runtimeLimits: limits, budgets: budgets, executorPool: pool))
    try animation.load(payload: payload)
    return animation
  }

  // MARK: Host bytes copied (route 4)

  // Each FrameBudgets default is pinned by a test that reaches it with `FrameBudgets()`:
  // copied bytes by copiedBytesDefault, draws and dispatches by countsDefault, vertices and
  // workgroups (per command and per frame) by gpuWork. What is left is that a configuration
  // left alone brings those budgets, and the runtime limits' defaults.

  @Test("a configuration left alone brings the default budgets: the 10,001st draw stops a frame")
  func defaultConfigurationBudgets() throws {
    func frame(_ n: Int) -> [UInt8] {
      Self.passFrame(Array(repeating: CommandBytes.draw, count: n))
    }
    func loaded(_ draws: Int) throws -> PngineAnimation {
      let animation = PngineAnimation(configuration: PngineConfiguration())
      try animation.load(
        payload: try CommandBytes.executor(init: CommandBytes.buffer([]), frame: frame(draws)))
      return animation
    }
    _ = try loaded(10_000).frame(time: 0, width: 1, height: 1)
    let over = try loaded(10_001)
    let e = #expect(throws: PngineError.self) { try over.frame(time: 0, width: 1, height: 1) }
    #expect(e?.code == .budgetExceeded)
    #expect(e?.message.contains("budget of 10000 draws per frame") == true, "\(e?.message ?? "")")
  }

  @Test("by default an executor's memory grows to 1024 pages (64 MiB), not one page more")
  func defaultMemoryPages() throws {
    // frame returns memory.size after the grow; the executor starts with 2 pages.
    func size(growingBy pages: Int) throws -> UInt32 {
      let payload = try TestExecutors.payload(
        Parts(frameBody: "(drop (memory.grow (i32.const \(pages)))) memory.size"))
      return try animation(payload).frameRaw(time: 0, width: 1, height: 1).status
    }
    #expect(try size(growingBy: 1022) == 1024)
    #expect(try size(growingBy: 1023) == 2)
  }

  @Test("the default fuel is ten times a budget of 200,000: the spins that fit scale with it")
  func defaultFuel() throws {
    let payload = try TestExecutors.payload(Self.spinning)
    func fits(_ spins: UInt32, _ limits: RuntimeLimits) throws -> Bool {
      do {
        _ = try animation(payload, limits: limits).frame(time: 0, width: spins, height: 0)
        return true
      } catch {
        #expect((error as? PngineError)?.code == .outOfFuel, "\(error)")
        return false
      }
    }
    // The most spins a budget of 200,000 allows, by bisection.
    let small = RuntimeLimits(fuelPerFrame: 200_000)
    var low: UInt32 = 0
    var high: UInt32 = 200_000
    while low < high {
      let mid = (low + high + 1) / 2
      if try fits(mid, small) { low = mid } else { high = mid - 1 }
    }
    #expect(low > 1000)
    // The default of 2,000,000: within 5% of ten times as many.
    #expect(try fits(low * 10 * 95 / 100, RuntimeLimits()))
    #expect(try !fits(low * 10 * 105 / 100, RuntimeLimits()))
  }

  @Test("write_buffers each pointing at the whole memory stop at the default 64 MiB, uncopied")
  func copiedBytesDefault() throws {
    // 100 commands × 1 MiB (the whole memory) = 100 MiB; the 65th passes 64 MiB.
    let frame = CommandBytes.buffer(
      (0..<100).map { _ in CommandBytes.writeBuffer(0, pointer: 0, length: 1 << 20) })
    let payload = try CommandBytes.executor(
      init: CommandBytes.buffer([CommandBytes.createBuffer(0, size: 64)]), frame: frame)
    let a = try animation(payload)
    let e = #expect(throws: PngineError.self) { try a.frame(time: 0, width: 1, height: 1) }
    #expect(e?.code == .budgetExceeded)
    #expect(e?.location.call == "frame")
    #expect(e?.location.opcode == 0x20)
    #expect(e?.location.byteOffset == 8 + 64 * 15)  // write_buffer: opcode + 14 bytes
    #expect(e?.message.contains("67108864 bytes copied") == true)
    #expect(e?.code.nativeCode == .renderFailed)
  }

  @Test("the copy budget counts every command's blob: exactly at it passes, one more fails")
  func copiedBytesEdge() throws {
    let budgets = FrameBudgets(maxCopiedBytesPerFrame: 4 << 20)
    let initBuffer = CommandBytes.buffer([CommandBytes.createBuffer(0, size: 64)])
    func frame(_ n: Int) -> [UInt8] {
      CommandBytes.buffer(
        (0..<n).map { _ in CommandBytes.writeBuffer(0, pointer: 0, length: 1 << 20) })
    }
    let fits = try animation(
      try CommandBytes.executor(init: initBuffer, frame: frame(4)), budgets: budgets)
    let out = try fits.frame(time: 0, width: 1, height: 1)
    #expect(out.blobs.count == 4)
    #expect(
      out.blobs.values.allSatisfy {
        if case .bytes(let b) = $0 { b.count == 1 << 20 } else { false }
      })
    let over = try animation(
      try CommandBytes.executor(init: initBuffer, frame: frame(5)), budgets: budgets)
    let e = #expect(throws: PngineError.self) { try over.frame(time: 0, width: 1, height: 1) }
    #expect(e?.code == .budgetExceeded)
    #expect(e?.location.byteOffset == 8 + 4 * 15)
  }

  @Test("init has the same copy budget")
  func copiedBytesInit() throws {
    let initBuffer = CommandBytes.buffer(
      [CommandBytes.createBuffer(0, size: 64)]
        + (0..<3).map { _ in CommandBytes.writeBuffer(0, pointer: 0, length: 1 << 20) })
    let payload = try CommandBytes.executor(init: initBuffer, frame: CommandBytes.buffer([]))
    let a = PngineAnimation(
      configuration: PngineConfiguration(
        budgets: FrameBudgets(maxCopiedBytesPerFrame: 2 << 20), executorPool: nil))
    let e = #expect(throws: PngineError.self) { try a.load(payload: payload) }
    #expect(e?.code == .budgetExceeded)
    #expect(e?.location.call == "init")
    #expect(!a.isLoaded)
  }

  // MARK: The decoder stops at the count (route 4)

  @Test("commands past the header's count fail where they start, without reading on")
  func decoderStopsAtCount() {
    // Count 1, then 1000 submits and an unknown opcode at the very end.
    var bytes = CommandBytes.u32(UInt32(8 + 1001)) + CommandBytes.u16(1) + CommandBytes.u16(0)
    bytes += [UInt8](repeating: 0xF0, count: 1000) + [0x99]
    let e = #expect(throws: PngineError.self) {
      try CommandBuffer(decoding: bytes, layout: .current, call: "frame")
    }
    #expect(e?.code == .invalidCommandBuffer)
    #expect(e?.location.byteOffset == 9)
    #expect(e?.message.contains("more commands than the header's count of 1") == true)
  }

  @Test("a count the bytes cannot hold fails before any command is read")
  func decoderCountCannotFit() {
    // 65 535 commands declared in 8 bytes; the first byte is an unknown opcode.
    let bytes =
      CommandBytes.u32(16) + CommandBytes.u16(0xFFFF) + CommandBytes.u16(0)
      + [0x99] + [UInt8](repeating: 0xF0, count: 7)
    let e = #expect(throws: PngineError.self) {
      try CommandBuffer(decoding: bytes, layout: .current)
    }
    #expect(e?.code == .invalidCommandBuffer)
    #expect(e?.location.byteOffset == 4)
    #expect(e?.message.contains("65535") == true)
    // A count that fits still decodes, and one too few still fails at the end.
    let ok = CommandBytes.buffer([CommandBytes.submit, CommandBytes.submit])
    #expect((try? CommandBuffer(decoding: ok, layout: .current))?.commands.count == 2)
  }

  // MARK: Draws and dispatches (route 7)

  @Test(
    "draws and dispatches past the default budget stop the frame at the first one over",
    arguments: [("draws", true), ("dispatches", false)])
  func countsDefault(kind: String, draws: Bool) throws {
    func frame(_ n: Int) -> [UInt8] {
      CommandBytes.buffer(
        [draws ? CommandBytes.beginRenderPass : CommandBytes.beginComputePass]
          + Array(repeating: draws ? CommandBytes.draw : CommandBytes.dispatch, count: n)
          + [CommandBytes.endPass, CommandBytes.submit])
    }
    let initBuffer = CommandBytes.buffer([])
    let fits = try animation(try CommandBytes.executor(init: initBuffer, frame: frame(10_000)))
    let out = try fits.frame(time: 0, width: 1, height: 1)
    #expect(out.buffer.commands.count == 10_003)
    let over = try animation(try CommandBytes.executor(init: initBuffer, frame: frame(10_001)))
    let e = #expect(throws: PngineError.self) { try over.frame(time: 0, width: 1, height: 1) }
    #expect(e?.code == .budgetExceeded, "\(kind)")
    let size = draws ? CommandBytes.draw.count : CommandBytes.dispatch.count
    let opening = draws ? CommandBytes.beginRenderPass.count : 1
    #expect(e?.location.byteOffset == 8 + opening + 10_000 * size)
    #expect(e?.location.opcode == (draws ? 0x15 : 0x18))
    #expect(e?.message.contains("budget of 10000 \(kind) per frame") == true)
  }

  @Test("a configured draw budget: three fit, the fourth stops the animation; a load restarts it")
  func drawBudgetStops() throws {
    func frame(_ n: Int) -> [UInt8] {
      CommandBytes.buffer(
        [CommandBytes.beginRenderPass] + Array(repeating: CommandBytes.draw, count: n)
          + [CommandBytes.endPass, CommandBytes.submit])
    }
    let budgets = FrameBudgets(maxDrawsPerFrame: 3)
    let three = try animation(
      try CommandBytes.executor(init: CommandBytes.buffer([]), frame: frame(3)), budgets: budgets)
    _ = try three.frame(time: 0, width: 1, height: 1)
    _ = try three.frame(time: 1, width: 1, height: 1)
    let payload = try CommandBytes.executor(init: CommandBytes.buffer([]), frame: frame(4))
    let four = try animation(payload, budgets: budgets)
    let e = #expect(throws: PngineError.self) { try four.frame(time: 0, width: 1, height: 1) }
    #expect(e?.code == .budgetExceeded)
    #expect(!four.isLoaded)
    #expect(four.stopError?.code == .budgetExceeded)
    let calls = four.diagnostics.snapshot.calls
    let again = #expect(throws: PngineError.self) { try four.frame(time: 1, width: 1, height: 1) }
    #expect(again?.code == .executorStopped)
    #expect(again?.message.contains("budgetExceeded") == true)
    #expect(four.diagnostics.snapshot.calls == calls)
    try four.load(payload: payload)
    #expect(four.stopError == nil)
    #expect(four.isLoaded)
  }

  // MARK: GPU work per draw, dispatch and frame

  /// A frame of `commands` inside a render (or compute) pass.
  static func passFrame(_ commands: [[UInt8]], compute: Bool = false) -> [UInt8] {
    CommandBytes.buffer(
      [compute ? CommandBytes.beginComputePass : CommandBytes.beginRenderPass] + commands
        + [CommandBytes.endPass, CommandBytes.submit])
  }
  static func draw(_ vertices: UInt32, _ instances: UInt32) -> [UInt8] {
    [0x15] + CommandBytes.u32(vertices) + CommandBytes.u32(instances) + CommandBytes.u32(0)
      + CommandBytes.u32(0)
  }
  static func drawIndexed(_ indices: UInt32, _ instances: UInt32) -> [UInt8] {
    [0x16] + CommandBytes.u32(indices) + CommandBytes.u32(instances) + CommandBytes.u32(0)
      + CommandBytes.u32(0) + CommandBytes.u32(0)
  }
  static func dispatch(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> [UInt8] {
    [0x18] + CommandBytes.u32(x) + CommandBytes.u32(y) + CommandBytes.u32(z)
  }

  struct WorkCase: Sendable, CustomTestStringConvertible {
    var name: String
    var frame: [UInt8]
    /// The message's words, or nil when the frame is within the budgets.
    var refused: String?
    var testDescription: String { name }
  }

  static let workCases: [WorkCase] = [
    WorkCase(
      name: "draw of 2³²−1 instances", frame: passFrame([draw(3, .max)]),
      refused: "asks for 12884901885 vertices in one command, over its budget of 16777216"),
    WorkCase(
      name: "draw of 2³²−1 vertices", frame: passFrame([draw(.max, 1)]),
      refused: "4294967295 vertices in one command"),
    WorkCase(
      name: "draw_indexed of 2³²−1 instances", frame: passFrame([drawIndexed(6, .max)]),
      refused: "25769803770 vertices in one command"),
    WorkCase(
      name: "dispatch of 65535×65535×1",
      frame: passFrame([dispatch(65535, 65535, 1)], compute: true),
      refused: "4294836225 workgroups in one command, over its budget of 1048576"),
    WorkCase(
      name: "dispatch whose x·y·z passes 2⁶⁴",
      frame: passFrame([dispatch(.max, .max, .max)], compute: true),
      refused: "18446744073709551615 workgroups"),
    WorkCase(
      name: "a draw exactly at the budget", frame: passFrame([draw(1 << 12, 1 << 12)]),
      refused: nil),
    WorkCase(
      name: "five draws at the budget pass the frame's",
      frame: passFrame(Array(repeating: draw(1 << 12, 1 << 12), count: 5)),
      refused: "goes over its budget of 67108864 vertices per frame (83886080 so far)"),
    WorkCase(
      name: "a dispatch exactly at the budget",
      frame: passFrame([dispatch(1024, 1024, 1)], compute: true),
      refused: nil),
    WorkCase(
      name: "five dispatches at the budget pass the frame's",
      frame: passFrame(Array(repeating: dispatch(1024, 1024, 1), count: 5), compute: true),
      refused: "goes over its budget of 4194304 workgroups per frame (5242880 so far)"),
  ]

  @Test(
    "GPU work is checked per draw, per dispatch and per frame before anything runs",
    arguments: workCases)
  func gpuWork(_ test: WorkCase) throws {
    let payload = try CommandBytes.executor(init: CommandBytes.buffer([]), frame: test.frame)
    let a = try animation(payload)
    guard let words = test.refused else {
      _ = try a.frame(time: 0, width: 1, height: 1)
      return
    }
    let e = #expect(throws: PngineError.self) { try a.frame(time: 0, width: 1, height: 1) }
    #expect(e?.code == .budgetExceeded)
    #expect(e?.message.contains(words) == true, "\(e?.message ?? "")")
    #expect([0x15, 0x16, 0x18].contains(e?.location.opcode ?? 0))
    #expect(!a.isLoaded)
  }

  @Test("GPU work budgets are the animation's: a smaller one refuses what the default allows")
  func configuredWork() throws {
    let frame = Self.passFrame([Self.draw(3, 1000)])
    let payload = try CommandBytes.executor(init: CommandBytes.buffer([]), frame: frame)
    _ = try animation(payload).frame(time: 0, width: 1, height: 1)
    let small = try animation(payload, budgets: FrameBudgets(maxVerticesPerDraw: 2999))
    let e = #expect(throws: PngineError.self) { try small.frame(time: 0, width: 1, height: 1) }
    #expect(e?.message.contains("3000 vertices in one command, over its budget of 2999") == true)
  }

  // MARK: Fuel per frame (route 5)

  /// `frame(_, w, h)` spins `w` times, then `getCommandLen` spins `h` times.
  static let spinning = Parts(
    commandLength: "(call $spin (i32.load (i32.const 256))) (i32.load (i32.const 65536))",
    frameBody: "(call $spin (local.get 1)) (i32.store (i32.const 256) (local.get 2)) i32.const 0",
    extra: """
      (func $spin (param $n i32) (local $i i32)
        (block $done
          (loop $l
            (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $l))))
      """)

  @Test("the fuel budget covers the whole frame: frame and its getters together")
  func fuelPerFrame() throws {
    let budget: UInt64 = 200_000
    let limits = RuntimeLimits(fuelPerFrame: budget)
    let payload = try TestExecutors.payload(Self.spinning)
    func runs(_ w: UInt32, _ h: UInt32) throws -> PngineError? {
      let a = try animation(payload, limits: limits)
      do {
        _ = try a.frame(time: 0, width: w, height: h)
        return nil
      } catch {
        return error
      }
    }
    // The most spins `frame` alone can do on the budget, found by bisection.
    var low: UInt32 = 0
    var high = UInt32(budget)
    while low < high {
      let mid = (low + high + 1) / 2
      if try runs(mid, 0) == nil { low = mid } else { high = mid - 1 }
    }
    let n = low * 2 / 3
    #expect(n > 1000)
    // Each call alone stays under the budget …
    #expect(try runs(n, 0) == nil)
    #expect(try runs(0, n) == nil)
    // … together they do not.
    let e = try runs(n, n)
    #expect(e?.code == .outOfFuel)
    #expect(e?.location.call == "getCommandLen")
    #expect(e?.message.contains("frame budget of 200000") == true)
  }

  // MARK: Executor memory, capped during the call (route 5)

  @Test(
    "memory.grow past the cap fails inside the call; within it, it grows",
    arguments: [
      (UInt32(10), UInt32(12)), (14, 16), (15, 2), (2048, 2), (65535, 2), (0xFFFF_FFFF, 2),
    ])
  func growthCappedInside(pages: UInt32, size: UInt32) throws {
    // frame returns memory.size after the grow: its status.
    let payload = try TestExecutors.payload(
      Parts(frameBody: "(drop (memory.grow (i32.const \(Int32(bitPattern: pages))))) memory.size"))
    let a = try animation(payload, limits: RuntimeLimits(maxMemoryPages: 16))
    let result = try a.frameRaw(time: 0, width: 1, height: 1)
    #expect(result.status == size)
    #expect(a.isLoaded)
  }

  @Test("a failed grow is the executor's to handle: it may give up, or trap touching past it")
  func failedGrowHandled() throws {
    let limits = RuntimeLimits(maxMemoryPages: 16)
    let givesUp = try animation(
      try TestExecutors.payload(
        Parts(
          frameBody: """
            (if (i32.eq (memory.grow (i32.const 2048)) (i32.const -1))
              (then (return (i32.const 7))))
            i32.const 0
            """)), limits: limits)
    let e = #expect(throws: PngineError.self) { try givesUp.frame(time: 0, width: 1, height: 1) }
    #expect(e?.code == .executorStatus)
    #expect(e?.executorStatus == 7)
    #expect(givesUp.isLoaded)
    let ignores = try animation(
      try TestExecutors.payload(
        Parts(
          frameBody:
            "(drop (memory.grow (i32.const 2048))) (i32.store (i32.const 0x7000000) (i32.const 1)) i32.const 0"
        )), limits: limits)
    let t = #expect(throws: PngineError.self) { try ignores.frame(time: 0, width: 1, height: 1) }
    #expect(t?.code == .trap)
    #expect(!ignores.isLoaded)
  }

  @Test("growing 128 MiB past the cap and filling it allocates nothing", .measuresProcess)
  func growthAllocatesNothing() throws {
    // Without the cap inside the call, the grow succeeds and the fill makes 128 MiB resident.
    let payload = try TestExecutors.payload(
      Parts(
        frameBody: """
          (if (i32.eq (memory.grow (i32.const 2048)) (i32.const -1))
            (then (return (i32.const 7))))
          (memory.fill (i32.const 131072) (i32.const 1) (i32.const 0x8000000))
          i32.const 0
          """))
    let a = try animation(
      payload, limits: RuntimeLimits(fuelPerFrame: 10_000_000, maxMemoryPages: 16))
    let before = try #require(ResidentMemory.kibibytes())
    let e = #expect(throws: PngineError.self) { try a.frame(time: 0, width: 1, height: 1) }
    let after = try #require(ResidentMemory.kibibytes())
    print("RSS before \(before) KiB, after the grow \(after) KiB; error \(String(describing: e))")
    #expect(e?.executorStatus == 7)
    #expect(after - before < 64 * 1024)
  }

  @Test("the module is instantiated with its memory's maximum at the cap")
  func capRewrite() throws {
    let bytes = try TestExecutors.wasm(Parts())
    let capped = try #require(ExecutorImage.capMemory(bytes, maximumPages: 16))
    let info = try ExecutorInfo(capped, maxMemoryPages: 1024)
    #expect(info.memoryMinimumPages == 2)
    #expect(info.memoryMaximumPages == 16)
    #expect(info.exports == (try ExecutorInfo(bytes, maxMemoryPages: 1024)).exports)
    // A lower declared maximum is kept.
    let declared = try TestExecutors.wasm(Parts(memory: "(memory (export \"memory\") 2 4)"))
    let kept = try #require(ExecutorImage.capMemory(declared, maximumPages: 16))
    #expect(try ExecutorInfo(kept, maxMemoryPages: 1024).memoryMaximumPages == 4)
    #expect(ExecutorImage.capMemory([0, 0x61, 0x73, 0x6D, 1, 0, 0, 0], maximumPages: 16) == nil)
  }

  @Test("a pooled executor only goes to an owner with the cap it was instantiated with")
  func poolKeepsCap() throws {
    let pool = PngineExecutorPool()
    // frame grows by `width` pages and returns memory.size.
    let payload = try TestExecutors.payload(
      Parts(frameBody: "(drop (memory.grow (local.get 1))) memory.size"))
    let wide = try animation(payload, limits: RuntimeLimits(maxMemoryPages: 64), pool: pool)
    wide.unload()
    #expect(pool.statistics.kept == 1)
    let narrow = try animation(payload, limits: RuntimeLimits(maxMemoryPages: 16), pool: pool)
    #expect(pool.statistics.reused == 0)
    #expect(try narrow.frameRaw(time: 0, width: 20, height: 1).status == 2)
    let wideAgain = try animation(payload, limits: RuntimeLimits(maxMemoryPages: 64), pool: pool)
    #expect(pool.statistics.reused == 1)
    #expect(try wideAgain.frameRaw(time: 0, width: 20, height: 1).status == 22)
  }

  // MARK: A poisoned executor is never called again

  /// frame: counts its calls; a negative time traps (`unreachable`) or loops forever; else it
  /// returns the number of earlier calls as its status.
  static func poisonable(_ poison: String) -> Parts {
    Parts(
      frameBody: """
        (global.set $n (i32.add (global.get $n) (i32.const 1)))
        (if (f32.lt (local.get 0) (f32.const 0)) (then \(poison)))
        (i32.sub (global.get $n) (i32.const 1))
        """,
      extra: "(global $n (mut i32) (i32.const 0))")
  }

  @Test(
    "a trapped or starved executor is never called again by its animation",
    arguments: [("unreachable", PngineError.Code.trap), ("(loop $l (br $l))", .outOfFuel)])
  func poisonedNotCalled(poison: String, code: PngineError.Code) throws {
    let a = try animation(try TestExecutors.payload(Self.poisonable(poison)))
    let e = #expect(throws: PngineError.self) { try a.frameRaw(time: -1, width: 1, height: 1) }
    #expect(e?.code == code)
    #expect(!a.isLoaded)
    let calls = a.diagnostics.snapshot.calls
    for call in 0..<3 {
      let again = #expect(throws: PngineError.self) {
        try a.frameRaw(time: 0, width: 1, height: 1)
      }
      #expect(again?.code == .executorStopped, "call \(call)")
      #expect(again?.message.contains("\(code)") == true)
    }
    #expect(throws: PngineError.self) { try a.frame(time: 0, width: 1, height: 1) }
    #expect(throws: PngineError.self) { try a.frameCounter() }
    #expect(a.diagnostics.snapshot.calls == calls)
    // Unloading forgets the stop: not loaded, as ever.
    a.unload()
    let unloaded = #expect(throws: PngineError.self) {
      try a.frameRaw(time: 0, width: 1, height: 1)
    }
    #expect(unloaded?.code == .notInitialized)
  }

  @Test("a poisoned executor refuses every call itself")
  func executorRefusesWhenPoisoned() throws {
    let payload = try TestExecutors.payload(Self.poisonable("unreachable"))
    let executor = try Executor(
      bytes: Array(payload.executorBytes!), limits: RuntimeLimits(), logger: Self.quiet)
    try executor.load(payload, singleBuffer: false)
    _ = try executor.callInit()
    #expect(try executor.callFrame(time: 0, width: 1, height: 1).status == 0)
    #expect(throws: PngineError.self) { try executor.callFrame(time: -1, width: 1, height: 1) }
    #expect(executor.poisoned)
    let e = #expect(throws: PngineError.self) {
      try executor.callFrame(time: 0, width: 1, height: 1)
    }
    #expect(e?.code == .executorStopped)
    #expect(throws: PngineError.self) { try executor.callInit() }
  }

  @Test("the pool drops a poisoned executor at once and hands out a fresh one")
  func poolNeverHandsOutPoisoned() throws {
    let pool = PngineExecutorPool()
    let payload = try TestExecutors.payload(Self.poisonable("unreachable"))
    let a = try animation(payload, pool: pool)
    #expect(try a.frameRaw(time: 0, width: 1, height: 1).status == 0)
    #expect(throws: PngineError.self) { try a.frameRaw(time: -1, width: 1, height: 1) }
    // Stopping returned it to the pool, which refused it.
    #expect(pool.statistics.refused == 1)
    #expect(pool.statistics.idleExecutors == 0)
    let b = try animation(payload, pool: pool)
    #expect(pool.statistics.reused == 0)
    #expect(pool.statistics.instantiated == 2)
    #expect(try b.frameRaw(time: 0, width: 1, height: 1).status == 0)
    // Checked in directly, a poisoned executor is refused even though its memory and
    // globals could be reset.
    let executor = try pool.checkOut(
      bytes: Array(payload.executorBytes!), limits: RuntimeLimits(), logger: Self.quiet)
    try executor.load(payload, singleBuffer: false)
    _ = try executor.callInit()
    _ = try? executor.callFrame(time: -1, width: 1, height: 1)
    #expect(executor.poisoned)
    pool.checkIn(executor)
    #expect(pool.statistics.refused == 2)
    let next = try pool.checkOut(
      bytes: Array(payload.executorBytes!), limits: RuntimeLimits(), logger: Self.quiet)
    #expect(next !== executor)
    #expect(!next.poisoned)
  }
}
