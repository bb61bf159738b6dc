import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Logging

// PlayerCore: what the owner reports after drawing.
extension PlayerCore {
  /// What became of a ``Effect/draw(_:at:audioPosition:firstFrame:)`` (or of a frame drawn
  /// when it was decoded).
  public enum RenderOutcome: Sendable {
    /// Presented. `audioPosition`: its chunk's audio position at that time (nil outside
    /// speech or when that chunk's audio is not playing); `frameBytes`: the base frame's size.
    case presented(DrawnFrame, at: Double, audioPosition: Double?, frameBytes: Int)
    /// Not drawn: its base frame was not in memory.
    case baseFrameMissing(DrawnFrame, at: Double)
    /// Not drawn: one of its overlays had left the store.
    case overlayMissing(at: Double)
  }

  /// The owner's one report after carrying out an input's or a tick's effects: what became of
  /// the frames it was asked to draw, and for a tick, the wall-clock seconds it took from the
  /// clock's reading to the last effect carried out. `sinceStart`: wall-clock seconds since
  /// the player was made (read for the first frame only).
  public mutating func rendered(
    _ outcomes: [RenderOutcome], tickTook: Double? = nil,
    sinceStart: @autoclosure () -> Double
  ) -> [Effect] {
    if let tickTook {
      accounting.longestRenderStall = max(accounting.longestRenderStall, tickTook)
    }
    var effects: [Effect] = []
    for outcome in outcomes { effects += rendered(outcome, sinceStart: sinceStart()) }
    return finish(effects)
  }

  mutating func rendered(_ outcome: RenderOutcome, sinceStart: @autoclosure () -> Double)
    -> [Effect]
  {
    switch outcome {
    case .presented(let frame, let time, let audioPosition, let bytes):
      frameBytes = bytes
      missed = nil
      engine.framePresented()
      accounting.framesPresented += 1
      accounting.freezes.presented(at: time)
      if accounting.timeToFirstFrame == nil { accounting.timeToFirstFrame = sinceStart() }
      if let audioPosition, let index = frame.overlayIndex, !frame.overlays.isEmpty {
        accounting.lipSync.record(audioPosition - Double(index) / speakingFPS)
      }
      return []
    case .baseFrameMissing(let frame, let time):
      accounting.baseFrameMisses += 1
      accounting.freezes.held(at: time, cause: .baseFrameMiss)
      missed = frame.chunk == nil ? frame : nil
      // Outside speech the engine shows it again at its next slot rather than skipping it.
      engine.frameNotPresented(frame)
      windowDue = true
      return [
        .log(
          .debug, "base frame not in memory: held",
          ["frame": "\(frame.animation)#\(frame.index)"])
      ]
    case .overlayMissing(let time):
      accounting.overlayMisses += 1
      accounting.freezes.held(at: time, cause: .overlayMiss)
      return []
    }
  }

  /// Whether a frame was presented yet.
  public var hasPresented: Bool { accounting.framesPresented > 0 }
}
