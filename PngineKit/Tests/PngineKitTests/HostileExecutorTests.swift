import Foundation
import PngineKit
import Testing

/// Executors written by the tests to misbehave: each gives a typed error, never a crash.
@Suite struct HostileExecutorTests {
  typealias Parts = TestExecutors.Parts

  func load(_ parts: Parts, limits: RuntimeLimits = RuntimeLimits()) throws -> PngineAnimation {
    let animation = PngineAnimation(configuration: PngineConfiguration(runtimeLimits: limits))
    try animation.load(payload: TestExecutors.payload(parts))
    return animation
  }

  func error(_ parts: Parts, limits: RuntimeLimits = RuntimeLimits()) -> PngineError? {
    do {
      let animation = try load(parts, limits: limits)
      _ = try animation.frame(time: 0, width: 64, height: 64)
      return nil
    } catch {
      return error as? PngineError
    }
  }

  @Test("the well-behaved test executor runs")
  func wellBehaved() throws {
    let animation = try load(Parts())
    let out = try animation.frame(time: 0.5, width: 64, height: 64)
    #expect(out.buffer.commands.map(\.command) == [.submit])
    #expect(animation.diagnostics.snapshot.frames == 1)
  }

  @Test("an endless loop stops on its fuel")
  func endlessLoop() throws {
    let animation = try load(Parts(frameBody: "(loop $l (br $l)) i32.const 0"))
    let clock = ContinuousClock()
    let start = clock.now
    let e = #expect(throws: PngineError.self) {
      try animation.frame(time: 0, width: 64, height: 64)
    }
    let elapsed = clock.now - start
    #expect(e?.code == .outOfFuel)
    #expect(e?.location.call == "frame")
    // Reported, not asserted as a timing (measured by scripts/bench): see the README.
    print("endless loop stopped after \(elapsed) at \(RuntimeLimits().fuelPerFrame) fuel")
    // The animation stopped: the executor is never called again.
    let again = #expect(throws: PngineError.self) {
      try animation.frame(time: 0, width: 64, height: 64)
    }
    #expect(again?.code == .executorStopped)
    #expect(animation.stopError?.code == .outOfFuel)
  }

  @Test("an endless loop in init stops on its fuel too")
  func endlessInit() {
    #expect(error(Parts(initBody: "(loop $l (br $l)) i32.const 0"))?.code == .outOfFuel)
  }

  @Test("an oversized memory declaration is refused before instantiation")
  func oversizedMemory() {
    let e = error(Parts(memory: "(memory (export \"memory\") 40000)"))
    #expect(e?.code == .memoryLimit)
    #expect(e?.location.call == "instantiate")
    // A smaller cap refuses the normal 2 pages as well.
    #expect(error(Parts(), limits: RuntimeLimits(maxMemoryPages: 1))?.code == .memoryLimit)
  }

  @Test("growing memory past the cap fails inside the call, and the executor goes on")
  func growth() throws {
    // Each frame returns what memory.grow answered: -1 (refused), never the old size.
    let animation = try load(
      Parts(frameBody: "(memory.grow (i32.const 20))"), limits: RuntimeLimits(maxMemoryPages: 16))
    for _ in 0..<2 {
      let result = try animation.frameRaw(time: 0, width: 64, height: 64)
      #expect(result.status == UInt32(bitPattern: -1))
    }
    // The executor goes on: a frame after the refusals draws.
    #expect(animation.isLoaded)
  }

  @Test("a command pointer past memory is reported")
  func commandPointerPastMemory() {
    let e = error(Parts(commandPointer: "i32.const -256", commandLength: "i32.const 64"))
    #expect(e?.code == .pointerOutOfBounds)
    #expect(e?.location.call == "init")
    // A length that runs past the end, from a valid pointer.
    let e2 = error(Parts(commandLength: "i32.const 0x7fffff00"))
    #expect(e2?.code == .invalidCommandBuffer || e2?.code == .pointerOutOfBounds)
    let e3 = error(Parts(commandLength: "i32.const 70000"))
    #expect(e3?.code == .pointerOutOfBounds)
  }

  @Test("a bytecode pointer past memory is reported before any write")
  func bytecodePointerPastMemory() throws {
    var parts = Parts()
    parts.extra = ""
    let wat = TestExecutors.wat(parts).replacingOccurrences(
      of: "(func (export \"getBytecodePtr\") (result i32) i32.const 1024)",
      with: "(func (export \"getBytecodePtr\") (result i32) i32.const 131000)")
    let payload = try PNGBPayload(TestExecutors.payload(executor: try TestExecutors.wat2(wat)))
    let e = #expect(throws: PngineError.self) { try PngineAnimation().load(payload: payload) }
    #expect(e?.code == .pointerOutOfBounds)
  }

  @Test("a blob pointer past memory is reported with its opcode")
  func blobPastMemory() {
    // init emits create_shader(0, ptr 0xFFFF0000, len 16).
    let body = """
      (i32.store (i32.const 65536) (i32.const 19))
      (i32.store (i32.const 65540) (i32.const 1))
      (i32.store8 (i32.const 65544) (i32.const 4))
      (i32.store16 (i32.const 65545) (i32.const 0))
      (i32.store (i32.const 65547) (i32.const 0xFFFF0000))
      (i32.store (i32.const 65551) (i32.const 16))
      i32.const 0
      """
    let e = error(Parts(initBody: body))
    #expect(e?.code == .pointerOutOfBounds)
    #expect(e?.location.opcode == 0x04)
    #expect(e?.location.byteOffset == 8)
  }

  @Test("unreachable is a trap")
  func unreachable() {
    let e = error(Parts(frameBody: "unreachable"))
    #expect(e?.code == .trap)
    #expect(e?.message.contains("unreachable") == true)
    #expect(error(Parts(initBody: "unreachable"))?.code == .trap)
  }

  @Test("an out-of-bounds access inside the executor is a trap, not a crash")
  func wasmOutOfBounds() {
    let e = error(Parts(frameBody: "(drop (i32.load (i32.const -4))) i32.const 0"))
    #expect(e?.code == .trap)
  }

  @Test(
    "an unknown import is refused",
    arguments: [
      "(import \"env\" \"fetch\" (func (param i32)))",
      "(import \"wasi_snapshot_preview1\" \"fd_write\" (func (param i32 i32 i32 i32) (result i32)))",
      "(import \"env\" \"log\" (func (param i64)))",
      "(import \"env\" \"memory\" (memory 1))",
    ])
  func unknownImport(importLine: String) {
    #expect(error(Parts(imports: importLine))?.code == .importNotAllowed)
  }

  @Test("a function that does not validate is refused at load, even one never called")
  func invalidFunctionAtLoad() {
    // `$never` returns an i64 where it declares an i32, and nothing calls it: WasmKit
    // validates a function when it first compiles it, so only eager compilation finds it.
    let parts = Parts(extra: "(func $never (result i32) i64.const 0)")
    let animation = PngineAnimation()
    let e = #expect(throws: PngineError.self) {
      try animation.load(payload: TestExecutors.payload(parts))
    }
    #expect(e?.code == .executorInvalid)
    #expect(e?.location.call == "instantiate")
    #expect(!animation.isLoaded)
  }

  @Test("env.log(i32, i32) is provided")
  func logImport() throws {
    let animation = try load(
      Parts(
        imports: "(import \"env\" \"log\" (func $log (param i32 i32)))",
        frameBody:
          "(call $log (i32.const 0) (i32.const 4)) (call $log (i32.const -1) (i32.const 9)) i32.const 0"
      ))
    _ = try animation.frame(time: 0, width: 1, height: 1)
  }

  @Test("missing exports, wrong signatures, a start function and garbage are refused")
  func malformedExecutors() throws {
    let noFrame = TestExecutors.wat(Parts()).replacingOccurrences(
      of: "(export \"frame\")", with: "")
    #expect(try errorCode(noFrame) == .executorInvalid)
    let badSig = TestExecutors.wat(Parts()).replacingOccurrences(
      of: "(func (export \"setDataLen\") (param i32))",
      with: "(func (export \"setDataLen\") (param i64))")
    #expect(try errorCode(badSig) == .executorInvalid)
    let start = TestExecutors.wat(Parts(extra: "(func $s) (start $s)"))
    #expect(try errorCode(start) == .executorInvalid)
    let garbage = try PNGBPayload(TestExecutors.payload(executor: [0, 0x61, 0x73, 0x6D, 9, 9]))
    let e = #expect(throws: PngineError.self) { try PngineAnimation().load(payload: garbage) }
    #expect(e?.code == .executorInvalid)
  }

  @Test("a nonzero status is a typed executorStatus error")
  func status() {
    let e = error(Parts(frameBody: "i32.const 3"))
    #expect(e?.code == .executorStatus)
    #expect(e?.executorStatus == 3)
    #expect(e?.location.call == "frame")
  }

  func errorCode(_ wat: String) throws -> PngineError.Code? {
    let payload = try PNGBPayload(TestExecutors.payload(executor: try TestExecutors.wat2(wat)))
    do {
      try PngineAnimation().load(payload: payload)
      return nil
    } catch {
      return error.code
    }
  }
}
