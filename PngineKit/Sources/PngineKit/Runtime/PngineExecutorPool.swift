import Locking
import Logging

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Idle executor instances kept for reuse, so that loading a PNG whose executor ran before
/// skips instantiating it and, above all, skips WasmKit translating its functions again
/// (about 1 ms of the 1.1 ms a cold load takes on the fixtures).
///
/// When an animation unloads (``PngineAnimation/unload()``, a new load replacing it, or its
/// release), its executor is reset to the state instantiation left it in and kept here;
/// the next load of a module with the same bytes takes it. A reset instance is
/// indistinguishable from a fresh one: its memory is zeroed and the data segments copied in
/// again, every mutable global gets its initial value back, and the module was checked to
/// contain no instruction that changes a table or a segment (see `ExecutorImage`). An
/// executor that trapped, ran out of fuel, grew its memory, or cannot be vouched for is not
/// kept, and an idle executor only goes to an owner whose memory cap
/// (``RuntimeLimits/maxMemoryPages``) is the one it was instantiated with. The tests hold
/// pooled executors to the conformance oracle byte for byte.
///
/// Idle executors hold their memory (a few MiB each for the fixtures): the pool keeps at
/// most ``maximumIdleExecutors`` and ``maximumIdleBytes``, dropping the least recently
/// returned first, and ``purge()`` drops them all (call it on a memory warning).
///
/// Thread-safe. Set ``PngineConfiguration/executorPool`` to `nil` to never reuse.
public final class PngineExecutorPool: Sendable, Hashable {
  /// What the pool has done since it was made.
  public struct Statistics: Sendable, Hashable {
    /// Loads that took an idle executor.
    public var reused = 0
    /// Loads that instantiated a new one.
    public var instantiated = 0
    /// Executors reset and kept.
    public var kept = 0
    /// Executors not kept: not resettable, poisoned by a failed call, or grown.
    public var refused = 0
    /// Idle executors dropped for room or by ``PngineExecutorPool/purge()``.
    public var evicted = 0
    /// Executors idle when the statistics were read.
    public var idleExecutors = 0
    /// The memory the idle executors held then, in bytes.
    public var idleBytes = 0
  }

  /// The pool animations use unless configured otherwise.
  public static let shared = PngineExecutorPool()

  /// The most executors kept idle.
  public let maximumIdleExecutors: Int
  /// The most memory (executors' linear memories) kept idle, in bytes.
  public let maximumIdleBytes: Int

  /// An executor handed between owners; only one owner ever uses it.
  private struct Owned: @unchecked Sendable {
    let executor: Executor
  }

  /// What is known of a module: its checks and its reset image, computed once.
  private struct Template: @unchecked Sendable {
    let bytes: [UInt8]
    let info: ExecutorInfo
    let image: ExecutorImage?
  }

  private struct State: Sendable {
    var idle: [Owned] = []
    var templates: [Template] = []
    var statistics = Statistics()
  }

  private let state = Locked(State())

  /// Makes a pool.
  /// - Parameters:
  ///   - maximumIdleExecutors: the most executors kept idle (default 4).
  ///   - maximumIdleBytes: the most executor memory kept idle (default 64 MiB).
  public init(maximumIdleExecutors: Int = 4, maximumIdleBytes: Int = 64 << 20) {
    self.maximumIdleExecutors = maximumIdleExecutors
    self.maximumIdleBytes = maximumIdleBytes
  }

  /// A copy of the counters, with what is idle now.
  public var statistics: Statistics {
    state.withLock { state in
      var statistics = state.statistics
      statistics.idleExecutors = state.idle.count
      statistics.idleBytes = Self.bytes(of: state.idle)
      return statistics
    }
  }

  /// Drops every idle executor and what is known of their modules.
  public func purge() {
    let dropped = state.withLock { state -> [Owned] in
      let idle = state.idle
      state.statistics.evicted += idle.count
      state.idle = []
      state.templates = []
      return idle
    }
    _ = dropped  // released here, outside the lock
  }

  /// An executor for `bytes`: an idle one when there is one, else a new instance.
  func checkOut(bytes: [UInt8], limits: RuntimeLimits, logger: Logger) throws(PngineError)
    -> Executor
  {
    let (reused, template) = state.withLock { state -> (Owned?, Template?) in
      let template = state.templates.first { Self.same($0.bytes, bytes) }
      // Only an executor instantiated with the same memory cap as this owner's will do (the
      // cap is the memory's maximum in the module it runs), and never a poisoned one.
      guard let template, (try? template.info.check(maxMemoryPages: limits.maxMemoryPages)) != nil,
        let index = state.idle.lastIndex(where: {
          !$0.executor.poisoned && $0.executor.memoryCapPages == limits.memoryCapPages
            && Self.same($0.executor.bytes, bytes)
        })
      else { return (nil, template) }
      let owned = state.idle.remove(at: index)
      state.statistics.reused += 1
      return (owned, template)
    }
    if let executor = reused?.executor {
      executor.limits = limits
      executor.logSink.logger = logger
      return executor
    }
    let known: Template
    if let template {
      known = template
    } else {
      let info = try ExecutorInfo(bytes, maxMemoryPages: limits.maxMemoryPages)
      let image = try? ExecutorImage(bytes)
      if let reason = image?.notResettable {
        logger.debug("executor will not be reused: \(reason)")
      }
      known = Template(bytes: bytes, info: info, image: image)
      state.withLock { state in
        if !state.templates.contains(where: { Self.same($0.bytes, bytes) }) {
          state.templates.append(known)
          if state.templates.count > max(8, maximumIdleExecutors * 2) {
            state.templates.removeFirst()
          }
        }
      }
    }
    let executor = try Executor(
      bytes: bytes, limits: limits, logger: logger, info: known.info, image: known.image)
    state.withLock { $0.statistics.instantiated += 1 }
    return executor
  }

  /// Resets `executor` and keeps it, or drops it when it cannot be reset. A poisoned executor
  /// (it trapped, ran out of fuel or grew past its cap) is always dropped.
  func checkIn(_ executor: Executor) {
    let kept = !executor.poisoned && executor.reset()
    let owned = Owned(executor: executor)
    let evicted = state.withLock { state -> [Owned] in
      guard kept else {
        state.statistics.refused += 1
        return []
      }
      state.idle.append(owned)
      state.statistics.kept += 1
      var bytes = Self.bytes(of: state.idle)
      var evicted: [Owned] = []
      while !state.idle.isEmpty,
        state.idle.count > maximumIdleExecutors || bytes > maximumIdleBytes
      {
        let first = state.idle.removeFirst()
        bytes -= first.executor.memoryByteCount
        evicted.append(first)
      }
      state.statistics.evicted += evicted.count
      return evicted
    }
    _ = evicted  // released here, outside the lock
  }

  /// The memory `idle` executors hold.
  private static func bytes(of idle: [Owned]) -> Int {
    idle.reduce(0) { $0 + $1.executor.memoryByteCount }
  }

  /// Byte equality by `memcmp` (the bytes are tens of KiB; `==` compares element by element).
  private static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    guard !a.isEmpty else { return true }
    return a.withUnsafeBytes { x in
      b.withUnsafeBytes { y in memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 }
    }
  }

  /// Pools are equal when they are the same pool.
  public static func == (lhs: PngineExecutorPool, rhs: PngineExecutorPool) -> Bool {
    lhs === rhs
  }

  /// Hashes the pool's identity.
  public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
