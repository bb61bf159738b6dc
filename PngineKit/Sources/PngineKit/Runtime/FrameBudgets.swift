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

  /// Makes budgets; the defaults suit real payloads.
  public init(
    maxCopiedBytesPerFrame: Int = 64 << 20, maxDrawsPerFrame: Int = 10_000,
    maxDispatchesPerFrame: Int = 10_000
  ) {
    self.maxCopiedBytesPerFrame = maxCopiedBytesPerFrame
    self.maxDrawsPerFrame = maxDrawsPerFrame
    self.maxDispatchesPerFrame = maxDispatchesPerFrame
  }

  /// Checks `buffer` against the draw, dispatch and copy budgets, before anything is copied:
  /// throws ``PngineError/Code/budgetExceeded`` at the first command over one.
  /// Sentinel blobs (`0xAAAAAAAA`, length 0) are never read and cost nothing.
  func check(_ buffer: CommandBuffer, call: String) throws(PngineError) {
    var copied = 0
    var draws = 0
    var dispatches = 0
    for decoded in buffer.commands {
      func over(_ what: String, _ count: Int, _ budget: Int) -> PngineError {
        PngineError(
          .budgetExceeded,
          "\(call) goes over its budget of \(budget) \(what) per frame (\(count) so far)",
          location: .init(byteOffset: decoded.offset, opcode: decoded.opcode, call: call))
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
