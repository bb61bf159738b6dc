/// What one executor call (`init`, or one frame) may cost the host, beyond the runtime's own
/// limits (``RuntimeLimits``: fuel per frame, memory pages, command buffer length).
///
/// The animation checks every budget on the decoded command buffer before it copies anything
/// out of the executor's memory. A call over a budget throws
/// ``PngineError/Code/budgetExceeded`` naming the budget, the call and the command that passed
/// it; the animation then stops (its executor is unloaded, later frames throw
/// ``PngineError/Code/executorStopped`` until the next load) and the app goes on.
public struct FrameBudgets: Sendable, Hashable {
  /// The most bytes of blobs (WGSL, descriptors, `write_buffer` data, …) one call may have
  /// copied out of the executor's memory, summed over its commands: a blob that several
  /// commands point at counts once per command, as it is copied once per command. Default
  /// 64 MiB (the default memory cap: every byte of a full memory once); the fixtures copy at
  /// most a few KiB. The command buffer itself is capped by
  /// ``RuntimeLimits/maxCommandBufferLength``.
  public var maxCopiedBytesPerFrame: Int
  /// The most draw commands (`draw`, `draw_indexed` and their indirect forms) in one call's
  /// buffer. Default 10 000; the fixtures issue at most a handful.
  public var maxDrawsPerFrame: Int
  /// The most dispatch commands (`dispatch`, `dispatch_indirect`) in one call's buffer.
  /// Default 10 000; the fixtures issue at most a handful.
  public var maxDispatchesPerFrame: Int
  /// The most vertex-shader invocations one draw may ask for: vertices × instances for
  /// `draw`, indices × instances for `draw_indexed`. Default 2²⁴ (16.8 M): a GPU runs that in
  /// a few milliseconds, lavapipe (one CPU core here) in about a tenth of a second; the
  /// fixtures draw at most a few thousand. A draw of 2³²−1 instances ran past 30 s on
  /// lavapipe before this budget (and one `draw_indexed` of them crashed it).
  public var maxVerticesPerDraw: UInt64
  /// The most vertex-shader invocations of all one call's draws together. Default 2²⁶.
  public var maxVerticesPerFrame: UInt64
  /// The most workgroups one `dispatch` may ask for, x × y × z. Default 2²⁰ (a 4096 × 4096
  /// image in 8 × 8 tiles is 2¹⁸); the fixtures dispatch at most a few dozen.
  public var maxWorkgroupsPerDispatch: UInt64
  /// The most workgroups of all one call's dispatches together. Default 2²².
  public var maxWorkgroupsPerFrame: UInt64

  /// Makes budgets; the defaults suit real payloads.
  public init(
    maxCopiedBytesPerFrame: Int = 64 << 20, maxDrawsPerFrame: Int = 10_000,
    maxDispatchesPerFrame: Int = 10_000, maxVerticesPerDraw: UInt64 = 1 << 24,
    maxVerticesPerFrame: UInt64 = 1 << 26, maxWorkgroupsPerDispatch: UInt64 = 1 << 20,
    maxWorkgroupsPerFrame: UInt64 = 1 << 22
  ) {
    self.maxCopiedBytesPerFrame = maxCopiedBytesPerFrame
    self.maxDrawsPerFrame = maxDrawsPerFrame
    self.maxDispatchesPerFrame = maxDispatchesPerFrame
    self.maxVerticesPerDraw = maxVerticesPerDraw
    self.maxVerticesPerFrame = maxVerticesPerFrame
    self.maxWorkgroupsPerDispatch = maxWorkgroupsPerDispatch
    self.maxWorkgroupsPerFrame = maxWorkgroupsPerFrame
  }

  /// Checks `buffer` against the draw, dispatch, GPU work and copy budgets, before anything
  /// is copied or run: throws ``PngineError/Code/budgetExceeded`` at the first command over
  /// one. Sentinel blobs (`0xAAAAAAAA`, length 0) are never read and cost nothing.
  func check(_ buffer: CommandBuffer, call: String) throws(PngineError) {
    var copied = 0
    var draws = 0
    var dispatches = 0
    var vertices: UInt64 = 0
    var workgroups: UInt64 = 0
    for decoded in buffer.commands {
      func over(_ what: String, _ count: some BinaryInteger, _ budget: some BinaryInteger)
        -> PngineError
      {
        PngineError(
          .budgetExceeded,
          "\(call) goes over its budget of \(budget) \(what) per frame (\(count) so far)",
          location: .init(byteOffset: decoded.offset, opcode: decoded.opcode, call: call))
      }
      func one(_ what: String, _ count: UInt64, _ budget: UInt64) -> PngineError {
        PngineError(
          .budgetExceeded,
          "\(call) asks for \(count) \(what) in one command, over its budget of \(budget)",
          location: .init(byteOffset: decoded.offset, opcode: decoded.opcode, call: call))
      }
      // Vertex invocations of a direct draw (products of two u32 fit a u64).
      var drawn: UInt64?
      switch decoded.command {
      case .draw(let count, let instances, _, _): drawn = UInt64(count) * UInt64(instances)
      case .drawIndexed(let count, let instances, _, _, _):
        drawn = UInt64(count) * UInt64(instances)
      default: break
      }
      if let drawn {
        if drawn > maxVerticesPerDraw { throw one("vertices", drawn, maxVerticesPerDraw) }
        vertices += drawn
        if vertices > maxVerticesPerFrame { throw over("vertices", vertices, maxVerticesPerFrame) }
      }
      if case .dispatch(let x, let y, let z) = decoded.command {
        // x·y·z of three u32 can pass a u64: saturate.
        let (xy, o1) = UInt64(x).multipliedReportingOverflow(by: UInt64(y))
        let (xyz, o2) = xy.multipliedReportingOverflow(by: UInt64(z))
        let groups = o1 || o2 ? UInt64.max : xyz
        if groups > maxWorkgroupsPerDispatch {
          throw one("workgroups", groups, maxWorkgroupsPerDispatch)
        }
        workgroups += groups
        if workgroups > maxWorkgroupsPerFrame {
          throw over("workgroups", workgroups, maxWorkgroupsPerFrame)
        }
      }
      switch decoded.command {
      case .draw, .drawIndexed, .drawIndirect, .drawIndexedIndirect:
        draws += 1
        if draws > maxDrawsPerFrame { throw over("draws", draws, maxDrawsPerFrame) }
      case .dispatch, .dispatchIndirect:
        dispatches += 1
        if dispatches > maxDispatchesPerFrame {
          throw over("dispatches", dispatches, maxDispatchesPerFrame)
        }
      default:
        break
      }
      if let ref = decoded.command.blobs.first, !ref.isLegacySentinel {
        copied += Int(ref.length)
        if copied > maxCopiedBytesPerFrame {
          throw over("bytes copied from the executor's memory", copied, maxCopiedBytesPerFrame)
        }
      }
    }
  }
}
