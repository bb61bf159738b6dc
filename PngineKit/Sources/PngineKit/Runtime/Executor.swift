import Logging
import WasmKit

/// How the payload is handed to the executor (`docs/abi.md` §4).
public enum LoadingMode: String, Sendable, Hashable, CaseIterable {
  /// Split mode for current executors; single-buffer for the legacy ones (their split mode
  /// leaves every blob pointer at `0xAAAAAAAA`), logged. The default.
  case automatic
  /// Always split mode: `payload[0..<data]` into the bytecode buffer, the data section into
  /// the data buffer. What the conformance oracle recorded.
  case split
  /// Always single-buffer: `payload[0..<wgsl]` into the bytecode buffer, `setDataLen` never
  /// called.
  case singleBuffer
}

/// Settings of the runtime stage.
public struct RuntimeLimits: Sendable, Hashable {
  /// Fuel (≈ WebAssembly operators) per frame: `frame()` and the getters that read its
  /// command buffer draw on one budget, as do `init()` and its getters, and the calls that
  /// hand the payload over. The fixtures need at most ~26 k per frame; the default, 2 M, is
  /// ~80 times that and stops an endless loop in well under a second even in a debug build.
  /// Used up: ``PngineError/Code/outOfFuel``, and the animation stops.
  public var fuelPerFrame: UInt64
  /// The largest memory an executor may declare or grow to, in 64 KiB pages (default 1024:
  /// 64 MiB; the fixtures declare 30–50). A declaration over it is refused before
  /// instantiation. The executor is instantiated with this as its memory's maximum, so a
  /// `memory.grow` past it fails inside the call (returns -1, nothing allocated) and the
  /// executor decides what to do; a memory found past it after a call (a second guard) is
  /// ``PngineError/Code/memoryLimit`` and stops the animation. At most 65 536 (4 GiB).
  public var maxMemoryPages: UInt64
  /// The largest command buffer read, in bytes (default 1 MiB; upstream's is 64 KiB).
  public var maxCommandBufferLength: Int

  /// Makes limits with the defaults.
  public init(
    fuelPerFrame: UInt64 = 2_000_000, maxMemoryPages: UInt64 = 1024,
    maxCommandBufferLength: Int = 1 << 20
  ) {
    self.fuelPerFrame = fuelPerFrame
    self.maxMemoryPages = maxMemoryPages
    self.maxCommandBufferLength = maxCommandBufferLength
  }

  /// The memory maximum an executor is instantiated with: ``maxMemoryPages``, at most the
  /// 65 536 pages a 32-bit memory can have.
  var memoryCapPages: UInt64 { min(maxMemoryPages, 65536) }
}

/// What one executor call returned: its status and the command buffer's raw bytes.
public struct ExecutorCallResult: Sendable, Hashable {
  /// `init` or `frame`.
  public var call: String
  /// The u32 status (0 = ok).
  public var status: UInt32
  /// The whole command buffer (header included), copied out of the executor's memory.
  public var bytes: [UInt8]
}

/// Where an executor's `env.log` goes. Swapped when a pooled executor changes hands.
final class ExecutorLogSink {
  var logger: Logger
  init(_ logger: Logger) { self.logger = logger }
}

/// One executor instance on WasmKit. Not Sendable (WasmKit's `Store`, `Instance`, `Memory`
/// and `Function` are not): it is only ever used by one owner at a time, inside
/// ``PngineAnimation``'s lock or idle in ``PngineExecutorPool``'s.
final class Executor {
  let info: ExecutorInfo
  /// The limits of the current owner (a pooled executor takes its next owner's).
  var limits: RuntimeLimits
  /// What a reset restores, when the executor was made to be reusable.
  let image: ExecutorImage?
  /// The original module bytes (the pool's key).
  let bytes: [UInt8]
  /// Set once a call traps, runs out of fuel or grows memory past the cap: such an
  /// executor is never called again (``invoke(_:_:)`` refuses) nor reused.
  private(set) var poisoned = false
  /// The maximum its memory was instantiated with (``RuntimeLimits/memoryCapPages``): a
  /// pooled executor only goes to an owner with the same cap.
  let memoryCapPages: UInt64
  /// The unit of work the current fuel budget is for (`load`, `init`, `frame`, …).
  private var budgetUnit = "instantiate"
  let logSink: ExecutorLogSink
  private let store: Store
  private let memory: Memory
  private let functions: [String: Function]
  private var stack: ExecutionStack
  /// The mutable globals (exported by ``ExecutorImage/instrumented``) and their values right
  /// after instantiation.
  private let globals: [(global: Global, initial: Value)]

  /// Checks `bytes` (``ExecutorInfo``), then instantiates them with fuel metering on and the
  /// memory's maximum set to `limits`' cap (``ExecutorImage/capMemory(_:maximumPages:)``), so
  /// that `memory.grow` past the cap fails inside a call instead of allocating.
  /// - Parameters:
  ///   - info: `bytes`' info when already known (it is checked again against `limits`).
  ///   - image: when given, the instrumented module is instantiated, so that ``reset()``
  ///     can restore the globals.
  init(
    bytes: [UInt8], limits: RuntimeLimits, logger: Logger, info known: ExecutorInfo? = nil,
    image: ExecutorImage? = nil
  ) throws(PngineError) {
    let info: ExecutorInfo
    if let known {
      try known.check(maxMemoryPages: limits.maxMemoryPages)
      info = known
    } else {
      info = try ExecutorInfo(bytes, maxMemoryPages: limits.maxMemoryPages)
    }
    self.info = info
    self.limits = limits
    self.image = image
    self.bytes = bytes
    self.memoryCapPages = limits.memoryCapPages
    let sink = ExecutorLogSink(logger)
    self.logSink = sink
    // Eager: every function is compiled, so validated, when the module is instantiated. WasmKit
    // validates a function only when it first compiles it, so lazily a function that does not
    // validate would load and run until the first call of it.
    let engine = Engine(
      configuration: EngineConfiguration(compilationMode: .eager, fuelMetering: true))
    let store = Store(engine: engine)
    self.store = store
    func fail(_ code: PngineError.Code, _ message: String) -> PngineError {
      PngineError(code, message, location: .init(chunk: "pNGb", call: "instantiate"))
    }
    guard
      let capped = ExecutorImage.capMemory(
        image?.instrumented ?? bytes, maximumPages: limits.memoryCapPages)
    else {
      throw fail(.executorInvalid, "its memory section could not be rewritten to cap its growth")
    }
    let instance: Instance
    do {
      let module = try parseWasm(bytes: capped)
      var imports = Imports()
      if info.importsLog {
        let log = Function(store: store, parameters: [.i32, .i32]) { caller, args in
          // Debug text of the oldest executors: read at most 512 bytes, bounds-checked.
          guard args.count == 2, case .i32(let ptr) = args[0], case .i32(let len) = args[1],
            let memory = caller.instance?.exports[memory: "memory"]
          else { return [] }
          let count = Int(min(len, 512))
          guard UInt64(ptr) + UInt64(count) <= UInt64(memory.byteCount) else { return [] }
          let text = memory.withUnsafeBufferPointer(offset: UInt(ptr), count: count) {
            String(decoding: $0, as: UTF8.self)
          }
          sink.logger.trace("executor log: \(text)")
          return []
        }
        imports.define(module: "env", name: "log", log)
      }
      store.fuel = Fuel(remaining: limits.fuelPerFrame)
      instance = try module.instantiate(store: store, imports: imports)
    } catch {
      throw fail(.executorInvalid, "WasmKit refused the executor: \(error)")
    }
    guard let memory = instance.exports[memory: "memory"] else {
      throw fail(.executorInvalid, "no exported memory")
    }
    self.memory = memory
    var functions: [String: Function] = [:]
    for (name, _, _) in ExecutorInfo.required + ExecutorInfo.optional {
      if let f = instance.exports[function: name] { functions[name] = f }
    }
    self.functions = functions
    self.globals = (image?.mutableGlobals ?? []).compactMap { index in
      instance.exports[global: ExecutorImage.exportName(global: index)].map { ($0, $0.value) }
    }
    self.stack = ExecutionStack(engine: engine)
  }

  /// Puts the instance back into the state instantiation left it in: memory zeroed and the
  /// data segments copied in again, every mutable global at its initial value. Returns false
  /// (and changes nothing) when that is impossible: no image, an image that is not
  /// resettable, a poisoned executor, or a memory that has grown.
  func reset() -> Bool {
    guard let image, image.notResettable == nil, !poisoned,
      globals.count == image.mutableGlobals.count,
      UInt64(memory.byteCount) == image.memoryPages * 65536
    else { return false }
    let count = memory.byteCount
    if count > 0 {
      memory.withUnsafeMutableBufferPointer(offset: 0, count: count) { raw in
        raw.initializeMemory(as: UInt8.self, repeating: 0)
        for segment in image.segments {
          guard segment.offset + segment.bytes.count <= count else { continue }
          segment.bytes.withUnsafeBytes { src in
            UnsafeMutableRawBufferPointer(rebasing: raw[segment.offset...])
              .copyMemory(from: src)
          }
        }
      }
    }
    for (global, initial) in globals {
      do { try global.assign(initial) } catch { return false }
    }
    return true
  }

  /// The ABI version: `getAbiVersion()`, or 1 when it is absent.
  func abiVersion() throws(PngineError) -> UInt32 {
    guard functions["getAbiVersion"] != nil else { return 1 }
    startBudget("getAbiVersion")
    return try callU32("getAbiVersion")
  }

  /// Gives the store a fresh budget of ``RuntimeLimits/fuelPerFrame`` for one unit of work:
  /// every export called until the next start draws on it. Each entry point
  /// (``load(_:singleBuffer:)``, ``callInit()``, ``callFrame(time:width:height:)``, …) starts
  /// one, so a frame's getters share the frame's budget.
  private func startBudget(_ unit: String) {
    store.fuel = Fuel(remaining: limits.fuelPerFrame)
    budgetUnit = unit
  }

  /// Current memory size in bytes.
  var memoryByteCount: Int { memory.byteCount }

  /// Calls an export on the current unit's fuel budget (``startBudget(_:)``); classifies
  /// failures. A poisoned executor is never called again.
  private func invoke(_ name: String, _ args: [Value]) throws(PngineError) -> [Value] {
    guard !poisoned else {
      throw PngineError(
        .executorStopped,
        "the executor trapped, ran out of fuel or grew past its memory cap before; it is not called again",
        location: .init(call: name))
    }
    guard let f = functions[name] else {
      throw PngineError(.executorInvalid, "missing export \(name)", location: .init(call: name))
    }
    let results: [Value]
    do {
      results = try f.invoke(args, on: &stack)
    } catch {
      poisoned = true
      let text = "\(error)"
      if let fuel = store.fuel, fuel.remaining == 0 || text.contains("out of fuel") {
        throw PngineError(
          .outOfFuel,
          "\(name) ran out of fuel: the \(budgetUnit) budget of \(limits.fuelPerFrame) fuel is used up",
          location: .init(call: name))
      }
      let reason = text.hasPrefix("Trap: ") ? String(text.dropFirst(6)) : text
      throw PngineError(.trap, "\(name) trapped: \(reason)", location: .init(call: name))
    }
    guard memory.byteCount <= Int(limits.maxMemoryPages) * 65536 else {
      poisoned = true
      throw PngineError(
        .memoryLimit,
        "memory grew to \(memory.byteCount / 65536) pages, past the cap of \(limits.maxMemoryPages)",
        location: .init(call: name))
    }
    return results
  }

  private func callU32(_ name: String, _ args: [Value] = []) throws(PngineError) -> UInt32 {
    let r = try invoke(name, args)
    guard r.count == 1, case .i32(let v) = r[0] else {
      throw PngineError(.executorInvalid, "\(name) returned \(r)", location: .init(call: name))
    }
    return v
  }

  private func callVoid(_ name: String, _ args: [Value]) throws(PngineError) {
    _ = try invoke(name, args)
  }

  /// Copies `bytes` into memory at `pointer`, after checking the range.
  private func write(_ bytes: ArraySlice<UInt8>, at pointer: UInt32, call: String)
    throws(PngineError)
  {
    guard UInt64(pointer) + UInt64(bytes.count) <= UInt64(memory.byteCount) else {
      throw PngineError(
        .pointerOutOfBounds,
        "\(call) returned 0x\(String(pointer, radix: 16)): \(bytes.count) bytes do not fit in \(memory.byteCount) bytes of memory",
        location: .init(call: call))
    }
    memory.withUnsafeMutableBufferPointer(offset: UInt(pointer), count: bytes.count) { dst in
      bytes.withUnsafeBytes { src in dst.copyMemory(from: src) }
    }
  }

  /// Reads `length` bytes at `pointer`, or `nil` when the range is outside memory.
  func read(pointer: UInt32, length: UInt32) -> [UInt8]? {
    guard UInt64(pointer) + UInt64(length) <= UInt64(memory.byteCount) else { return nil }
    if length == 0 { return [] }
    return memory.withUnsafeBufferPointer(offset: UInt(pointer), count: Int(length)) {
      Array($0.bindMemory(to: UInt8.self))
    }
  }

  /// Hands the payload over: split or single-buffer (`docs/abi.md` §4).
  func load(_ payload: PNGBPayload, singleBuffer: Bool) throws(PngineError) {
    startBudget("load")
    let dataOffset = Int(payload.header.dataSectionOffset)
    let wgslOffset = Int(payload.header.wgslTableOffset)
    let bytecodePtr = try callU32("getBytecodePtr")
    if singleBuffer {
      try write(payload.bytes[0..<wgslOffset], at: bytecodePtr, call: "getBytecodePtr")
      try callVoid("setBytecodeLen", [.i32(UInt32(wgslOffset))])
    } else {
      try write(payload.bytes[0..<dataOffset], at: bytecodePtr, call: "getBytecodePtr")
      try callVoid("setBytecodeLen", [.i32(UInt32(dataOffset))])
      if wgslOffset > dataOffset {
        let dataPtr = try callU32("getDataPtr")
        try write(payload.bytes[dataOffset..<wgslOffset], at: dataPtr, call: "getDataPtr")
        try callVoid("setDataLen", [.i32(UInt32(wgslOffset - dataOffset))])
      }
    }
  }

  /// Calls `init()` and reads the command buffer, on one fuel budget.
  func callInit() throws(PngineError) -> ExecutorCallResult {
    startBudget("init")
    let status = try callU32("init")
    return ExecutorCallResult(call: "init", status: status, bytes: try readCommandBuffer("init"))
  }

  /// Calls `frame(time, width, height)` and reads the command buffer, on one fuel budget.
  func callFrame(time: Float, width: UInt32, height: UInt32) throws(PngineError)
    -> ExecutorCallResult
  {
    startBudget("frame")
    let status = try callU32(
      "frame", [.f32(time.bitPattern), .i32(width), .i32(height)])
    return ExecutorCallResult(call: "frame", status: status, bytes: try readCommandBuffer("frame"))
  }

  /// `getFrameCounter()`, if exported.
  func frameCounter() throws(PngineError) -> UInt32? {
    guard functions["getFrameCounter"] != nil else { return nil }
    startBudget("getFrameCounter")
    return try callU32("getFrameCounter")
  }

  private func readCommandBuffer(_ call: String) throws(PngineError) -> [UInt8] {
    let pointer = try callU32("getCommandPtr")
    let length = try callU32("getCommandLen")
    guard Int(length) <= limits.maxCommandBufferLength else {
      throw PngineError(
        .invalidCommandBuffer,
        "command buffer of \(length) bytes passes the cap of \(limits.maxCommandBufferLength)",
        location: .init(call: call))
    }
    guard let bytes = read(pointer: pointer, length: length) else {
      throw PngineError(
        .pointerOutOfBounds,
        "command buffer [0x\(String(pointer, radix: 16)), +\(length)) lies past the \(memory.byteCount) bytes of memory",
        location: .init(call: call))
    }
    return bytes
  }
}
