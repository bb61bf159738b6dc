import LIVAEngine
import LIVAMedia
import LIVAPlatform
import LIVAProtocol

// LIVAPlayer: giving memory back under pressure.
extension LIVAPlayer {
  /// Frees memory under pressure at the level ``LifecyclePolicy`` says: the steps of
  /// ``PurgeStep/steps(for:)``. What is dropped is decoded again when needed, off the render
  /// thread; a frame not back in time is a hold, never a blank.
  public func purgeMemory(_ level: LifecyclePolicy.PurgeLevel) {
    purgeMemory(PurgeStep.steps(for: level))
  }

  /// Frees memory under pressure, the steps in the order given: the frame pool's buffers,
  /// images no queued or playing chunk uses (played, or never claimed), decoded base frames
  /// outside the window ahead, or every decoded base frame but the one on screen and idle
  /// frame 0.
  public func purgeMemory(_ steps: [PurgeStep]) {
    for step in steps {
      switch step {
      case .framePoolSpares:
        compositor.withLock { $0.pool.releaseBuffers() }
      case .playedOverlays:
        overlays.purgeUnclaimed()
      case .decodedFramesBehind:
        baseFrames.purgeMemory(keeping: windowFrames)
      case .decodedFrames:
        let onScreen = state.withLock { $0.core.engine.lastDrawnFrame }
        baseFrames.purgeMemory(
          keeping: [BaseFrameRef(animation: .idleForward, index: 0)]
            + (onScreen.map { [BaseFrameRef(animation: $0.animation, index: $0.index)] } ?? []))
      }
    }
    logger.info("[LIVA] memory purged", metadata: ["steps": "\(steps)"])
  }
}
