import Foundation
import LIVAEngine
import LIVAMedia
import LIVAPlatform
import LIVAProtocol
import Logging

/// Accounting of a player, as a value: start-up, ticks, stalls, the engine's metrics and the
/// lip-sync error of every overlay frame drawn.
public struct PlayerMetrics: Sendable {
  /// Seconds from the player's creation to its first presented frame (wall clock).
  public var timeToFirstFrame: Double?
  /// Display ticks handled.
  public var ticks = 0
  /// Ticks that came more than 1.5 display periods after the previous one.
  public var lateTicks = 0
  /// The longest time one tick took to handle (engine, compositing, presenting), in seconds.
  public var longestRenderStall = 0.0
  /// Frames presented.
  public var framesPresented = 0
  /// Draws whose base frame was not decoded in memory (the picture was held instead).
  public var baseFrameMisses = 0
  /// Draws held because an overlay image left the store after the engine was told it was ready.
  public var overlayMisses = 0
  /// Images the ingest pipeline shed under backpressure.
  public var shedImages = 0
  /// Images that failed to decode.
  public var failedImages = 0
  /// Decoded overlay images pushed out of the store while a queued chunk still needed them
  /// (a chunk whose distinct mouths alone outgrow the store): mouths lost.
  public var evictedQueuedImages = 0
  /// Events that failed validation and were dropped (each logged).
  public var rejectedEvents = 0
  /// Every protocol rejection, by what it cost and its code (`"event.missingField"`,
  /// `"frame.outOfRange"`, `"field.wrongType"`, …): whole events, single frames (their mouth
  /// only), single field values (informational fields read tolerantly). Each was logged.
  public var rejections: [String: Int] = [:]
  /// Speech events dropped because they belong to an interrupted message (a chunk whose
  /// `master_chunk_index` is older than the open message, or the `audio_end` after it).
  public var staleEvents = 0
  /// Speech events dropped as re-sends of what was already received (a backend that retries).
  public var duplicateEvents = 0
  /// Chunks dropped because the chunk 0 of their message never came.
  public var orphanChunks = 0
  /// Chunk plans (`receive_audio`) received.
  public var chunksReceived = 0
  /// `audio_end` events received.
  public var audioEndsReceived = 0
  /// The accounting of every chunk played to its end, in order (the last 1,000).
  public var chunkReports: [ChunkReport] = []
  /// Lip-sync, the one measure of it in the SDK: for each overlay frame presented while its
  /// chunk's audio was playing, the audio position then minus the frame's own time (frame `k`
  /// belongs at `k / 30` s). Taken where the frame reaches the surface, with the audio clock
  /// read for that frame; the engine decides on the same clock but keeps no second measure.
  public var lipSync = SyncErrorStats()
  /// Freezes (the picture stuck longer than the threshold while it should have moved) and
  /// frames presented per second since the first tick.
  public var freezes = FreezeDetector()
  /// The engine's own metrics.
  public var engine = EngineMetrics()

  /// Empty metrics.
  public init() {}
}
