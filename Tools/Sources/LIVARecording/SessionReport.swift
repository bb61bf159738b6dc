import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol

/// The outcome of a session, as `report.json` writes it and the command prints it.
public struct SessionReport: Codable, Sendable {
  /// Waits at chunk boundaries for a late chunk: graceful waits, counted apart from freezes.
  public struct BoundaryWaits: Codable, Sendable {
    /// Holds of the last frame at a chunk boundary that ended within the grace (the next
    /// chunk came, or the mouth closed and the body moved on), as the display saw them
    /// (``FreezeDetector/boundaryWaits``).
    public var holds: Int
    /// The longest of those holds, in milliseconds.
    public var longestHoldMilliseconds: Double
    /// Waits that outlasted the grace: the mouth closed and the body kept moving
    /// (``LIVAEngine/EngineMetrics/boundaryWaits``).
    public var graceful: Int
    /// Frames drawn without a mouth during those waits.
    public var frames: Int
  }

  /// One chunk's audio as the output played it.
  public struct AudioSegment: Codable, Sendable, Hashable {
    /// The chunk (`m<message>/c<index>`).
    public var chunk: String
    /// When it started, in seconds since the first presented frame.
    public var start: Double
    /// Seconds into the chunk it started at.
    public var offset: Double
    /// Seconds of the chunk's audio (its MP3 duration), when known.
    public var duration: Double?
    /// When it was stopped (interrupted), in seconds since the first presented frame.
    public var stoppedAt: Double?
  }

  /// Percentiles of the lip-sync error, in milliseconds.
  public struct LipSync: Codable, Sendable {
    /// Overlay frames measured.
    public var samples: Int
    /// Median absolute error; nil (null in JSON) without samples.
    public var p50Milliseconds: Double?
    /// 95th percentile of the absolute error; nil (null in JSON) without samples.
    public var p95Milliseconds: Double?
    /// Largest absolute error; nil (null in JSON) without samples.
    public var maxMilliseconds: Double?

    /// The percentiles of `stats`, in milliseconds.
    public init(_ stats: SyncErrorStats) {
      samples = stats.count
      p50Milliseconds = stats.percentile(0.5).map { $0 * 1000 }
      p95Milliseconds = stats.percentile(0.95).map { $0 * 1000 }
      maxMilliseconds = stats.count == 0 ? nil : stats.maxAbsolute * 1000
    }
  }

  /// What the backend planned, when it is known (the demo's own backend): the mouths of each
  /// chunk, one list per message it streamed whole. A recording is checked against it: every
  /// planned mouth shown, every chunk heard.
  public var plannedMouthsPerChunk: [[Int]]?
  /// Messages the backend began to speak but did not stream whole (cut by a newer message or a
  /// fault), when it is known.
  public var messagesCutByBackend: Int?
  /// Milliseconds from client creation to its first frame.
  public var timeToFirstFrameMilliseconds: Double?
  /// Whether the client's cache held the avatar already.
  public var warmCache: Bool
  /// Frames drawn by the engine.
  public var framesDrawn: Int
  /// Frames drawn with mouths.
  public var overlayFramesDrawn: Int
  /// Holds by reason, per frame slot.
  public var holds: [String: Int]
  /// Discontinuities in the base frames.
  public var pops: Int
  /// Mouths drawn on a base frame other than their own (must be 0).
  public var desyncs: Int
  /// Mouths skipped (not ready in time, invalid).
  public var skippedOverlays: Int
  /// Mouths whose time had passed before they could be drawn.
  public var lateFrames: Int
  /// Display ticks that came late.
  public var lateTicks: Int
  /// The longest time one tick took to handle, in milliseconds.
  public var longestRenderStallMilliseconds: Double
  /// Base frames not in memory when needed.
  public var baseFrameMisses: Int
  /// Lip-sync measured from the written media (``OutputLipSync``): for each mouth, the audio
  /// track's position in its chunk at the first video frame showing it, minus its own time.
  public var lipSync: LipSync
  /// The player's own reading: the audio position it read when it drew each mouth, minus the
  /// mouth's time. Near zero by construction (it chose the mouth from that reading).
  public var lipSyncAtDraw: LipSync
  /// How evenly the base animation moved in the written video (repeats and skips at 30 fps).
  public var videoMotion: VideoMotion
  /// Freezes (picture stuck for longer than the threshold while it should have moved), with
  /// their start (display seconds), duration and cause.
  public var freezes: [Freeze]
  /// The shortest stretch counted as a freeze, in milliseconds.
  public var freezeThresholdMilliseconds: Double
  /// The longest freeze, in milliseconds (0 without any).
  public var longestFreezeMilliseconds: Double
  /// Frames presented in each second since the first display tick (the last 600 seconds:
  /// entry 0 is second ``framesPerSecondStart``).
  public var framesPerSecond: [Int]
  /// The second since the first display tick that ``framesPerSecond`` starts at.
  public var framesPerSecondStart: Int
  /// Waits at chunk boundaries for a late chunk (not freezes).
  public var boundaryWaits: BoundaryWaits
  /// Mouths shown while no audio played, measured from the presented frames and the audio
  /// segments (``SilentMouth``).
  public var silentMouth: SilentMouth
  /// Every chunk's audio as it was played, in order.
  public var audioSegments: [AudioSegment]
  /// Protocol rejections by what they cost and their code (`frame.outOfRange`, …).
  public var rejections: [String: Int]
  /// Speech slots drawn without their mouth (failed, rejected or missing images).
  public var mouthlessFrames: Int
  /// Speech events dropped as belonging to an interrupted message.
  public var staleEvents: Int
  /// Peak resident memory of the process, in MiB.
  public var peakMemoryMiB: Double
  /// Chunks played, and messages received.
  public var chunksPlayed: Int
  /// Video frames written.
  public var videoFrames: Int
  /// Every presented frame.
  public var timeline: [RecordingSurface.TimelineEntry]

  /// Builds a report from a player's metrics, a recorder's timeline and the audio played
  /// (`audioSegments`, on an output whose clock ran `1 + audioClockSkew` times real time).
  public init(
    metrics: PlayerMetrics, warmCache: Bool, timeline: [RecordingSurface.TimelineEntry],
    videoFrames: Int, outputLipSync: SyncErrorStats, videoMotion: VideoMotion = VideoMotion(),
    audioSegments: [HeadlessAudioOutput.Segment] = [], audioClockSkew: Double = 0
  ) {
    self.videoMotion = videoMotion
    freezes = metrics.freezes.freezes
    longestFreezeMilliseconds = metrics.freezes.longest * 1000
    freezeThresholdMilliseconds = metrics.freezes.threshold * 1000
    framesPerSecond = metrics.freezes.framesPerSecond
    framesPerSecondStart = metrics.freezes.framesPerSecondStart
    boundaryWaits = BoundaryWaits(
      holds: metrics.freezes.boundaryWaitCount,
      longestHoldMilliseconds: (metrics.freezes.boundaryWaits.map(\.duration).max() ?? 0) * 1000,
      graceful: metrics.engine.boundaryWaits, frames: metrics.engine.boundaryWaitFrames)
    silentMouth = SilentMouth.measure(
      timeline: timeline, segments: audioSegments, clockSkew: audioClockSkew)
    let origin = timeline.first?.time ?? 0
    self.audioSegments = audioSegments.map {
      AudioSegment(
        chunk: $0.chunk.description, start: $0.start - origin, offset: $0.offset,
        duration: $0.duration, stoppedAt: $0.stoppedAt.map { $0 - origin })
    }
    let engine = metrics.engine
    timeToFirstFrameMilliseconds = metrics.timeToFirstFrame.map { $0 * 1000 }
    self.warmCache = warmCache
    framesDrawn = engine.framesDrawn
    overlayFramesDrawn = engine.overlayFramesDrawn
    holds = Dictionary(uniqueKeysWithValues: engine.holds.map { ($0.key.rawValue, $0.value) })
    pops = engine.pops
    desyncs = engine.desyncs
    skippedOverlays = engine.skippedOverlays
    lateFrames = engine.lateFrames
    lateTicks = metrics.lateTicks
    longestRenderStallMilliseconds = metrics.longestRenderStall * 1000
    baseFrameMisses = metrics.baseFrameMisses
    lipSync = LipSync(outputLipSync)
    lipSyncAtDraw = LipSync(metrics.lipSync)
    rejections = metrics.rejections
    mouthlessFrames = engine.mouthlessFrames
    staleEvents = metrics.staleEvents
    peakMemoryMiB = Self.peakMemoryMiB()
    chunksPlayed = metrics.chunkReports.count
    self.videoFrames = videoFrames
    self.timeline = timeline
  }

  /// The peak resident set size of this process, in MiB (0 where unknown).
  public static func peakMemoryMiB() -> Double {
    #if os(Linux)
      var usage = rusage()
      guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
      return Double(usage.ru_maxrss) / 1024  // kilobytes on Linux
    #else
      var usage = rusage()
      guard getrusage(RUSAGE_SELF, &usage) == 0 else { return 0 }
      return Double(usage.ru_maxrss) / 1_048_576  // bytes on Apple platforms
    #endif
  }

  /// A short human summary.
  public var summary: String {
    func ms(_ value: Double?) -> String { value.map { String(format: "%.1f ms", $0) } ?? "n/a" }
    let holdText = holds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
      separator: ", ")
    return """
      time to first frame  \(ms(timeToFirstFrameMilliseconds)) (\(warmCache ? "warm" : "cold") cache)
      frames drawn         \(framesDrawn) (\(overlayFramesDrawn) with mouths), \(videoFrames) video frames
      holds                \(holdText.isEmpty ? "none" : holdText)
      pops / desyncs       \(pops) / \(desyncs)
      skipped / late       \(skippedOverlays) skipped, \(lateFrames) late mouths
      late ticks           \(lateTicks); longest render stall \(ms(longestRenderStallMilliseconds))
      lip-sync (output)    p50 \(ms(lipSync.p50Milliseconds)), p95 \(ms(lipSync.p95Milliseconds)), max \(ms(lipSync.maxMilliseconds)) over \(lipSync.samples) mouths in the video
      lip-sync (at draw)   p95 \(ms(lipSyncAtDraw.p95Milliseconds)) over \(lipSyncAtDraw.samples) mouths
      freezes              \(freezes.count) over \(ms(freezeThresholdMilliseconds)), longest \(ms(longestFreezeMilliseconds)); frames per second \(framesPerSecond.map(String.init).joined(separator: " "))
      boundary waits       \(boundaryWaits.holds) holds (longest \(ms(boundaryWaits.longestHoldMilliseconds))), \(boundaryWaits.graceful) with the mouth closed (\(boundaryWaits.frames) frames)
      silent mouth         longest \(ms(silentMouth.longestMilliseconds)), \(ms(silentMouth.totalMilliseconds)) in all
      audio                \(audioSegments.count) chunks played: \(audioSegments.map(\.chunk).joined(separator: " "))
      video motion         \(videoMotion.repeats) repeats, \(videoMotion.skips) skips over \(videoMotion.compared) frames at 30 fps
      rejected             \(rejections.isEmpty ? "nothing" : rejections.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")); \(mouthlessFrames) mouthless slots, \(staleEvents) stale events
      peak memory          \(String(format: "%.0f", peakMemoryMiB)) MiB
      chunks played        \(chunksPlayed)
      """
  }
}
