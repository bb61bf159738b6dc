import Locking
import Logging

/// Settings of an animation. The defaults suit real payloads.
public struct PngineConfiguration: Sendable, Hashable {
  /// How the payload is handed to the executor (default ``LoadingMode/automatic``).
  public var loadingMode: LoadingMode
  /// Caps of the format stage.
  public var formatLimits: FormatLimits
  /// Caps of the runtime stage: fuel per frame (default 2 M), executor memory (default 1024
  /// pages, 64 MiB, enforced during each call), command buffer size (default 1 MiB). See
  /// ``RuntimeLimits``.
  public var runtimeLimits: RuntimeLimits
  /// What one call (`init` or a frame) may cost the host: blob bytes copied out of the
  /// executor's memory (default 64 MiB), draws (default 10 000) and dispatches (default
  /// 10 000). Over one: ``PngineError/Code/budgetExceeded`` before anything is copied, and the
  /// animation stops. See ``FrameBudgets``.
  public var budgets: FrameBudgets
  /// Whether each buffer goes through ``CommandValidator`` (default true).
  public var validatesCommands: Bool
  /// Where executors go when unloaded and come from when a module loads again (default
  /// ``PngineExecutorPool/shared``); `nil` instantiates every load afresh.
  public var executorPool: PngineExecutorPool?

  /// Makes a configuration.
  public init(
    loadingMode: LoadingMode = .automatic, formatLimits: FormatLimits = FormatLimits(),
    runtimeLimits: RuntimeLimits = RuntimeLimits(), budgets: FrameBudgets = FrameBudgets(),
    validatesCommands: Bool = true, executorPool: PngineExecutorPool? = .shared
  ) {
    self.loadingMode = loadingMode
    self.formatLimits = formatLimits
    self.runtimeLimits = runtimeLimits
    self.budgets = budgets
    self.validatesCommands = validatesCommands
    self.executorPool = executorPool
  }
}

/// A blob a command points at, resolved against the executor's memory right after the call.
public enum Blob: Sendable, Hashable {
  /// The bytes, copied out (bounds checked first).
  case bytes([UInt8])
  /// The legacy split-mode sentinel (`0xAAAAAAAA`, length 0): nothing was read.
  case legacySentinel

  /// The bytes as UTF-8 text (WGSL, JSON), or `nil` for the sentinel.
  public var text: String? {
    if case .bytes(let b) = self { return String(decoding: b, as: UTF8.self) }
    return nil
  }
}

/// One call's output: the raw result, the decoded and validated buffer, and its blobs.
public struct FrameOutput: Sendable, Hashable {
  /// Status and raw bytes.
  public var result: ExecutorCallResult
  /// The decoded buffer.
  public var buffer: CommandBuffer
  /// The blob of each command that has one, by the command's index in `buffer.commands`.
  public var blobs: [Int: Blob]
}

/// What loading found.
public struct LoadReport: Sendable, Hashable {
  /// The executor's declarations.
  public var executor: ExecutorInfo
  /// The ABI version (`getAbiVersion()`, or 1 when absent).
  public var abiVersion: UInt32
  /// The mode actually used (``LoadingMode/automatic`` resolved).
  public var mode: LoadingMode
  /// The output of `init()`: the resource-creation commands.
  public var initOutput: FrameOutput
}

/// A PNGine animation: a payload's own executor on WasmKit behind one lock, its command
/// stream decoded and validated, and its diagnostics.
///
/// All methods may be called from any thread; calls into the executor are serialised by a
/// `Mutex` (WasmKit's types are not `Sendable`, so the executor never leaves it).
/// ``load(png:)`` → ``frame(time:width:height:)`` … → ``unload()``; loading again replaces
/// the executor; after ``unload()`` frames fail with ``PngineError/Code/notInitialized``.
///
/// The animation stops when its executor traps, runs out of fuel
/// (``RuntimeLimits/fuelPerFrame``), is found past its memory cap, or a call goes over one of
/// the ``PngineConfiguration/budgets``: the error is thrown, the executor is unloaded (it is
/// never called again, and a poisoned one never goes back to the pool), and every later
/// ``frame(time:width:height:)``, ``frameRaw(time:width:height:)`` or ``frameCounter()``
/// throws ``PngineError/Code/executorStopped`` naming that error, without calling anything,
/// until the next load.
public final class PngineAnimation: Sendable {
  private struct Loaded {
    let executor: Executor
    var validator: CommandValidator
  }

  /// The loaded executor, or why the animation stopped.
  private struct State {
    var loaded: Loaded?
    var stopped: PngineError?

    /// The loaded executor, or the error a stopped or unloaded animation answers `call` with.
    func current(_ call: String) throws(PngineError) -> Loaded {
      if let loaded { return loaded }
      if let stopped {
        throw PngineError(
          .executorStopped, "the animation stopped after \(stopped); load it again",
          location: .init(call: call))
      }
      throw PngineError(.notInitialized, "no executor is loaded", location: .init(call: call))
    }
  }

  /// Whether `error` stops the animation: its executor is poisoned or over a budget.
  private static func stops(_ error: PngineError) -> Bool {
    [.outOfFuel, .trap, .memoryLimit, .budgetExceeded, .executorStopped].contains(error.code)
  }

  /// The configuration given at creation.
  public let configuration: PngineConfiguration
  /// Counters for this animation, readable from any thread.
  public let diagnostics = PngineDiagnostics()
  private let logger: Logger
  private let reporter: ErrorReporter?
  // The executor and its validator; `Loaded` holds WasmKit objects that are not Sendable
  // and never leave this lock.
  private let state = Locked(State())

  /// Makes an unloaded animation.
  /// - Parameters:
  ///   - configuration: limits and loading mode.
  ///   - logger: where the runtime logs (the fallback to single-buffer mode at `notice`,
  ///     per-frame detail at `trace`); the library never bootstraps logging.
  ///   - reporter: where errors are logged, de-duplicated and rate-limited; `nil` logs none
  ///     (they still reach ``diagnostics``).
  public init(
    configuration: PngineConfiguration = PngineConfiguration(),
    logger: Logger = Logger(label: "pngine", factory: { _ in SwiftLogNoOpLogHandler() }),
    reporter: ErrorReporter? = nil
  ) {
    self.configuration = configuration
    self.logger = logger
    self.reporter = reporter
  }

  /// Whether an executor is loaded.
  /// Whether an executor is loaded (false once the animation stopped).
  public var isLoaded: Bool { state.withLock { $0.loaded != nil } }

  /// The error that stopped the animation, while it is stopped (``PngineAnimation``).
  public var stopError: PngineError? { state.withLock { $0.stopped } }

  /// Reads a PNG and loads its payload (``load(payload:)``).
  @discardableResult
  public func load(png bytes: [UInt8]) throws(PngineError) -> LoadReport {
    try recording { () throws(PngineError) in
      let file = try PNGFile.read(bytes, limits: configuration.formatLimits)
      guard let payload = file.payloadBytes else {
        throw PngineError(.noPayload, "the PNG has no pNGb chunk", location: .init(chunk: "pNGb"))
      }
      return try loadLocked(try PNGBPayload(payload))
    }
  }

  /// Loads a payload: checks and instantiates its embedded executor, hands it the payload,
  /// calls `init()`. Refuses a payload without an embedded executor. Replaces any executor
  /// already loaded: a payload refused before its executor is touched (no executor, a bad
  /// PNG) leaves the loaded one in place; once the new executor is being set up, the old one
  /// is gone, and a failure leaves nothing loaded.
  @discardableResult
  public func load(payload: PNGBPayload) throws(PngineError) -> LoadReport {
    try recording { () throws(PngineError) in try loadLocked(payload) }
  }

  private func loadLocked(_ payload: PNGBPayload) throws(PngineError) -> LoadReport {
    guard let executorBytes = payload.executorBytes else {
      throw PngineError(
        .executorMissing,
        "the payload has no embedded executor (PNGB flags bit 0 clear); only its own executor can run it faithfully",
        location: .init(chunk: "pNGb", byteOffset: 6))
    }
    let configuration = self.configuration
    let logger = self.logger
    let diagnostics = self.diagnostics
    let pool = configuration.executorPool
    return try state.withLock { (state: inout State) throws(PngineError) -> LoadReport in
      if let old = state.loaded.take() { pool?.checkIn(old.executor) }
      state.stopped = nil
      let bytes = Array(executorBytes)
      let limits = configuration.runtimeLimits
      let executor: Executor
      if let pool {
        executor = try pool.checkOut(bytes: bytes, limits: limits, logger: logger)
      } else {
        executor = try Executor(bytes: bytes, limits: limits, logger: logger)
      }
      let mode: LoadingMode
      switch configuration.loadingMode {
      case .automatic:
        if executor.info.layout == .legacy {
          mode = .singleBuffer
          logger.notice(
            "legacy executor (no getAbiVersion, imports env.log): its split mode leaves blob pointers at 0xAAAAAAAA, loading in single-buffer mode"
          )
        } else {
          mode = .split
        }
      case .split, .singleBuffer: mode = configuration.loadingMode
      }
      try executor.load(payload, singleBuffer: mode == .singleBuffer)
      let abi = try executor.abiVersion()
      var loaded = Loaded(executor: executor, validator: CommandValidator())
      diagnostics.recordCall()
      let result = try executor.callInit()
      let output = try Self.finish(
        result, loaded: &loaded, configuration: configuration, diagnostics: diagnostics,
        frame: false)
      state.loaded = loaded
      return LoadReport(executor: executor.info, abiVersion: abi, mode: mode, initOutput: output)
    }
  }

  /// Runs one frame: `frame(time, width, height)`, then decodes, resolves and validates its
  /// buffer. A nonzero status throws ``PngineError/Code/executorStatus`` (the buffer is not to
  /// be executed). A buffer over one of the ``PngineConfiguration/budgets`` throws
  /// ``PngineError/Code/budgetExceeded`` before any blob is copied, and stops the animation.
  public func frame(time: Float, width: UInt32, height: UInt32) throws(PngineError) -> FrameOutput {
    let configuration = self.configuration
    let logger = self.logger
    let diagnostics = self.diagnostics
    return try recording { () throws(PngineError) in
      try running("frame") { (loaded: inout Loaded) throws(PngineError) -> FrameOutput in
        diagnostics.recordCall()
        let result = try loaded.executor.callFrame(time: time, width: width, height: height)
        let output = try Self.finish(
          result, loaded: &loaded, configuration: configuration, diagnostics: diagnostics,
          frame: true)
        logger.trace("frame \(time): \(output.buffer.commands.count) commands")
        return output
      }
    }
  }

  /// Runs one frame and returns the raw buffer only: no decoding, no blobs, no validation,
  /// a nonzero status returned rather than thrown. For hosts that forward the bytes and for
  /// measuring the executor alone.
  public func frameRaw(time: Float, width: UInt32, height: UInt32) throws(PngineError)
    -> ExecutorCallResult
  {
    let diagnostics = self.diagnostics
    return try recording { () throws(PngineError) in
      try running("frame") { (loaded: inout Loaded) throws(PngineError) -> ExecutorCallResult in
        diagnostics.recordCall()
        return try loaded.executor.callFrame(time: time, width: width, height: height)
      }
    }
  }

  /// The executor's frame counter (`getFrameCounter()`), if it has one.
  public func frameCounter() throws(PngineError) -> UInt32? {
    try running("getFrameCounter") { (loaded: inout Loaded) throws(PngineError) -> UInt32? in
      try loaded.executor.frameCounter()
    }
  }

  /// Runs `body` on the loaded executor inside the lock. An error that stops the animation
  /// (`stops(_:)`) unloads the executor and is remembered, so that it is never called again.
  private func running<T: Sendable>(_ call: String, _ body: (inout Loaded) throws(PngineError) -> T)
    throws(PngineError) -> T
  {
    let pool = configuration.executorPool
    return try state.withLock { (state: inout State) throws(PngineError) -> T in
      var loaded = try state.current(call)
      do throws(PngineError) {
        let value = try body(&loaded)
        state.loaded = loaded
        return value
      } catch {
        // Any other error leaves the executor loaded as it was before the call (the
        // validator's state included).
        if Self.stops(error) {
          state.loaded = nil
          state.stopped = error
          // A poisoned executor is dropped; one that only went over a budget is reset there.
          pool?.checkIn(loaded.executor)
        }
        throw error
      }
    }
  }

  /// Drops the executor: its memory is freed, or, with an ``PngineConfiguration/executorPool``,
  /// it is reset and kept there for the next load of the same module. Harmless when nothing
  /// is loaded. Forgets why a stopped animation stopped.
  public func unload() {
    let pool = configuration.executorPool
    state.withLock { state in
      if let old = state.loaded.take() { pool?.checkIn(old.executor) }
      state.stopped = nil
    }
  }

  deinit {
    unload()
  }

  /// Records a thrown error in diagnostics and the reporter, then rethrows it.
  private func recording<T>(_ body: () throws(PngineError) -> T) throws(PngineError) -> T {
    do {
      return try body()
    } catch {
      diagnostics.record(error)
      reporter?.report(error)
      throw error
    }
  }

  private static func finish(
    _ result: ExecutorCallResult, loaded: inout Loaded, configuration: PngineConfiguration,
    diagnostics: PngineDiagnostics, frame: Bool
  ) throws(PngineError) -> FrameOutput {
    guard result.status == 0 else {
      throw PngineError(
        .executorStatus, "\(result.call) returned status \(result.status)",
        location: .init(call: result.call), executorStatus: result.status)
    }
    let buffer = try CommandBuffer(
      decoding: result.bytes, layout: loaded.executor.info.layout, call: result.call)
    // Commands the executor dropped would leave a frame half drawn: none is run.
    if buffer.isTruncated {
      throw PngineError(
        .commandValidation,
        "\(result.call) truncated its command buffer (flags bit 0): commands that did not fit "
          + "were dropped",
        location: .init(byteOffset: 6, call: result.call))
    }
    // Draws, dispatches and the bytes the blobs add up to, before a byte is copied.
    try configuration.budgets.check(buffer, call: result.call)
    var blobs: [Int: Blob] = [:]
    var sentinels = 0
    for (index, decoded) in buffer.commands.enumerated() {
      guard let ref = decoded.command.blobs.first else { continue }
      if ref.isLegacySentinel {
        blobs[index] = .legacySentinel
        sentinels += 1
        continue
      }
      guard let bytes = loaded.executor.read(pointer: ref.pointer, length: ref.length) else {
        throw PngineError(
          .pointerOutOfBounds,
          "blob \(ref) lies past the \(loaded.executor.memoryByteCount) bytes of memory",
          location: .init(byteOffset: decoded.offset, opcode: decoded.opcode, call: result.call))
      }
      blobs[index] = .bytes(bytes)
    }
    if configuration.validatesCommands {
      try loaded.validator.validate(buffer, call: result.call)
    }
    diagnostics.record(buffer, frame: frame, unresolvedBlobs: sentinels)
    return FrameOutput(result: result, buffer: buffer, blobs: blobs)
  }
}
