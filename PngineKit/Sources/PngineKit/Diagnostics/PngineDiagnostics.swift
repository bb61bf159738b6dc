import Locking

/// A copy of one animation's counters at one moment.
public struct DiagnosticsSnapshot: Sendable, Hashable {
  /// Executor calls made (`init`, `frame`).
  public var calls: Int = 0
  /// Commands decoded.
  public var commands: Int = 0
  /// Render passes begun.
  public var renderPasses: Int = 0
  /// Compute passes begun.
  public var computePasses: Int = 0
  /// Draws (direct, indexed, indirect).
  public var draws: Int = 0
  /// Dispatches (direct and indirect).
  public var dispatches: Int = 0
  /// Pipelines created (render and compute).
  public var pipelines: Int = 0
  /// Bind groups created.
  public var bindGroups: Int = 0
  /// Frames that returned status 0 with a valid buffer.
  public var frames: Int = 0
  /// Blobs that were not read because they were the legacy split-mode sentinel.
  public var unresolvedBlobs: Int = 0
  /// Errors seen.
  public var errors: Int = 0
  /// The last error, if any.
  public var lastError: PngineError?

  /// Passes of both kinds.
  public var passes: Int { renderPasses + computePasses }

  /// Makes an all-zero snapshot.
  public init() {}
}

/// Per-animation counters, safe to read and update from any thread (one `Mutex`).
public final class PngineDiagnostics: Sendable {
  private let state = Locked(DiagnosticsSnapshot())

  /// Makes zeroed counters.
  public init() {}

  /// A consistent copy of every counter.
  public var snapshot: DiagnosticsSnapshot { state.withLock { $0 } }

  /// Counts one executor call.
  func recordCall() { state.withLock { $0.calls += 1 } }

  /// Counts what one buffer holds; `frame` says whether it came from a successful `frame`.
  func record(_ buffer: CommandBuffer, frame: Bool, unresolvedBlobs: Int) {
    var d = DiagnosticsSnapshot()
    d.commands = buffer.commands.count
    d.unresolvedBlobs = unresolvedBlobs
    for c in buffer.commands {
      switch c.command {
      case .beginRenderPass: d.renderPasses += 1
      case .beginComputePass: d.computePasses += 1
      case .draw, .drawIndexed, .drawIndirect, .drawIndexedIndirect: d.draws += 1
      case .dispatch, .dispatchIndirect: d.dispatches += 1
      case .createRenderPipeline, .createComputePipeline: d.pipelines += 1
      case .createBindGroup: d.bindGroups += 1
      default: break
      }
    }
    state.withLock {
      $0.commands += d.commands
      $0.renderPasses += d.renderPasses
      $0.computePasses += d.computePasses
      $0.draws += d.draws
      $0.dispatches += d.dispatches
      $0.pipelines += d.pipelines
      $0.bindGroups += d.bindGroups
      $0.unresolvedBlobs += d.unresolvedBlobs
      if frame { $0.frames += 1 }
    }
  }

  /// Records an error as the last one. The animation records its own (payload, executor,
  /// commands); a renderer records the GPU's here too, so every layer's errors are counted.
  public func record(_ error: PngineError) {
    state.withLock {
      $0.errors += 1
      $0.lastError = error
    }
  }

  /// Sets every counter back to zero.
  public func reset() { state.withLock { $0 = DiagnosticsSnapshot() } }
}
