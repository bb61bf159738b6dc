import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol

/// A surface that records: it keeps the picture on screen, samples it at a constant video rate
/// on the display clock, encodes the samples as PNG files off the display thread, and keeps a
/// per-frame timeline for the report.
public final class RecordingSurface: RenderSurface {
  /// One presented frame, as the report lists it.
  public struct TimelineEntry: Codable, Sendable, Hashable {
    /// Display time, in seconds.
    public var time: Double
    /// Engine mode.
    public var mode: String
    /// Base animation.
    public var animation: String
    /// Base frame index.
    public var index: Int
    /// Overlay ids drawn.
    public var overlays: [String]
    /// The chunk (`m<message>/c<index>`), while speaking.
    public var chunk: String?
    /// The overlay frame within the chunk, while speaking.
    public var frame: Int?
    /// The chunk's audio position when the frame was drawn, in seconds.
    public var audioPosition: Double?
  }

  /// What one written video frame shows of speech: the chunk and overlay frame whose mouth is
  /// in it (frames without a mouth are not listed).
  public struct VideoMouth: Sendable, Hashable {
    /// The video frame's number (it shows at `number / videoRate` s in the video).
    public var number: Int
    /// The chunk of the mouth.
    public var chunk: ChunkID
    /// The overlay frame within the chunk: it belongs at `overlayIndex / 30` s of its audio.
    public var overlayIndex: Int

    /// Creates an entry.
    public init(number: Int, chunk: ChunkID, overlayIndex: Int) {
      self.number = number
      self.chunk = chunk
      self.overlayIndex = overlayIndex
    }
  }

  private struct State {
    var mouths: [VideoMouth] = []
    var motion = VideoMotion()
    var lastVideoContent: DrawnFrame?
    var latest: RenderedFrame?
    var nextVideoFrame = 0
    var origin: Double?
    var timeline: [TimelineEntry] = []
    var written = 0
  }

  /// Video frames per second.
  public let videoRate: Double
  /// Where the PNG frames go (`frame_%05d.png`).
  public let directory: URL
  private let state = Locked(State())
  private let queue = DispatchQueue(label: "liva.recorder")
  private let group = DispatchGroup()
  private let codec: SystemImageCodec = {
    var codec = SystemImageCodec()
    codec.pngFavoursSpeed = true  // a frame every 1/30 s must not fall behind
    return codec
  }()

  /// Creates a recorder writing `frame_%05d.png` files into `directory` at `videoRate`.
  public init(directory: URL, videoRate: Double = 30) throws {
    self.directory = directory
    self.videoRate = videoRate
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  }

  /// Keeps the frame as the picture on screen and adds it to the timeline.
  public func present(_ frame: RenderedFrame) {
    let content = frame.content
    let entry = TimelineEntry(
      time: frame.time, mode: content.mode.rawValue, animation: content.animation.rawValue,
      index: content.index, overlays: content.overlays.map(\.key),
      chunk: content.chunk?.description, frame: content.overlayIndex,
      audioPosition: frame.audioPosition)
    state.withLock { state in
      state.latest = frame
      state.timeline.append(entry)
      if state.origin == nil { state.origin = frame.time }
    }
  }

  /// Call on every display tick (after the player's): writes the video frames due by `time`,
  /// each showing the picture on screen then.
  public func sample(at time: Double) {
    let due = state.withLock { state -> [(Int, RenderedFrame)] in
      guard let origin = state.origin, let latest = state.latest else { return [] }
      var due: [(Int, RenderedFrame)] = []
      while origin + Double(state.nextVideoFrame) / videoRate <= time + 1e-9 {
        let content = latest.content
        if let chunk = content.chunk, let index = content.overlayIndex, !content.overlays.isEmpty {
          state.mouths.append(
            VideoMouth(number: state.nextVideoFrame, chunk: chunk, overlayIndex: index))
        }
        if let previous = state.lastVideoContent { state.motion.add(previous, content) }
        state.lastVideoContent = content
        due.append((state.nextVideoFrame, latest))
        state.nextVideoFrame += 1
      }
      return due
    }
    for (number, frame) in due {
      group.enter()
      queue.async { [directory, codec, group, state] in
        defer { group.leave() }
        guard
          let image = try? RGBAImage(
            width: frame.width, height: frame.height, pixels: frame.pixels),
          let data = try? codec.encode(image, as: .png)
        else { return }
        let url = directory.appendingPathComponent(String(format: "frame_%05d.png", number))
        if (try? data.write(to: url)) != nil { state.withLock { $0.written += 1 } }
      }
    }
  }

  /// Waits until every frame handed to the encoder is on disk; returns how many were written.
  public func finish() -> Int {
    group.wait()
    return state.withLock { $0.written }
  }

  /// How evenly the base animation moves in the written video (see ``VideoMotion``).
  public var videoMotion: VideoMotion { state.withLock { $0.motion } }

  /// The mouths in the written video frames, in order.
  public var videoMouths: [VideoMouth] { state.withLock { $0.mouths } }

  /// Every presented frame so far.
  public var timeline: [TimelineEntry] { state.withLock { $0.timeline } }

  /// Display time of the first presented frame (the video's time zero).
  public var origin: Double? { state.withLock { $0.origin } }
}

/// How the base animation moves from one written video frame to the next, while it plays at the
/// video's rate (30 fps: transitions, talking, finishing, returning): each video frame should
/// show the next frame of the animation (or the previous one, on a walk back). A frame shown
/// twice is a repeat, a frame missing a skip; the two together are judder.
public struct VideoMotion: Codable, Sendable, Hashable {
  /// Consecutive video frames compared.
  public var compared = 0
  /// Video frames showing the same base frame as the one before.
  public var repeats = 0
  /// Video frames more than one base frame away from the one before, in the same animation.
  public var skips = 0

  /// Creates empty counts.
  public init() {}

  mutating func add(_ previous: DrawnFrame, _ next: DrawnFrame) {
    let fullRate: Set<EngineMode> = [.transition, .talking, .finishing, .returning, .animation]
    guard fullRate.contains(previous.mode), fullRate.contains(next.mode),
      previous.animation == next.animation
    else { return }
    compared += 1
    let step = abs(next.index - previous.index)
    if step == 0 { repeats += 1 } else if step > 1 { skips += 1 }
  }
}

/// Lip-sync as the written media show it: for each mouth, the first video frame it appears in,
/// against the recorded audio track at that frame's time (where its chunk's audio was placed
/// in the track, from what was played). Frame `k` of a chunk belongs at `k / 30` s of that
/// chunk's audio; the error is the track's position in the chunk then, minus `k / 30`.
public enum OutputLipSync {
  /// Measures `mouths` (from ``RecordingSurface/videoMouths``) against the audio `segments`
  /// laid into a track whose time zero is the video's (`origin` on the display clock), each
  /// starting at its start rounded to the millisecond, as the track writer places them.
  public static func measure(
    mouths: [RecordingSurface.VideoMouth], segments: [HeadlessAudioOutput.Segment],
    origin: Double, videoRate: Double = 30, speakingFPS: Double = 30
  ) -> SyncErrorStats {
    var stats = SyncErrorStats()
    var seen = Set<String>()
    for mouth in mouths {
      guard seen.insert("\(mouth.chunk)#\(mouth.overlayIndex)").inserted,
        let segment = segments.last(where: { $0.chunk == mouth.chunk })
      else { continue }
      let placed = max(0, ((segment.start - origin) * 1000).rounded()) / 1000
      let videoTime = Double(mouth.number) / videoRate
      let position = segment.offset + (videoTime - placed)
      let end = segment.stoppedAt.map { $0 - segment.start + segment.offset }
      guard position >= segment.offset, end.map({ position <= $0 }) ?? true else { continue }
      stats.record(position - Double(mouth.overlayIndex) / speakingFPS)
    }
    return stats
  }
}

/// Mouths shown while no audio plays, measured from what was presented and what was played
/// (not from the engine's counters): each presented frame with a mouth is on screen until the
/// next presented frame; each audio segment plays from its start for the rest of its MP3
/// duration (at the output's clock rate) or until it was stopped. The stretches of mouth on
/// screen outside every segment, contiguous ones joined, are the silent mouths.
public struct SilentMouth: Codable, Sendable, Hashable {
  /// The longest stretch of a mouth on screen with no audio playing, in milliseconds.
  public var longestMilliseconds: Double
  /// All such stretches together, in milliseconds.
  public var totalMilliseconds: Double
  /// Stretches longer than ``threshold`` milliseconds.
  public var stretchesOverThreshold: Int
  /// The threshold used for ``stretchesOverThreshold``, in milliseconds (a frame slot: shorter
  /// stretches are the rounding of chunk ends to display ticks).
  public var threshold: Double

  /// Creates a measurement.
  public init(
    longestMilliseconds: Double, totalMilliseconds: Double, stretchesOverThreshold: Int,
    threshold: Double
  ) {
    self.longestMilliseconds = longestMilliseconds
    self.totalMilliseconds = totalMilliseconds
    self.stretchesOverThreshold = stretchesOverThreshold
    self.threshold = threshold
  }

  /// Measures the presented `timeline` against the played audio `segments` (display times).
  /// A segment whose duration is unknown counts as playing until it was stopped (or forever).
  ///
  /// - Parameters:
  ///   - clockSkew: the audio output's clock runs `1 + clockSkew` times real time.
  ///   - end: the display time the last presented frame left the screen (default: one frame
  ///     slot at 30 fps after it was presented).
  public static func measure(
    timeline: [RecordingSurface.TimelineEntry], segments: [HeadlessAudioOutput.Segment],
    clockSkew: Double = 0, end: Double? = nil, threshold: Double = 1000.0 / 30
  ) -> SilentMouth {
    let sounds = segments.map { segment -> (start: Double, end: Double) in
      var stop = Double.infinity
      if let duration = segment.duration {
        stop = segment.start + max(0, duration - segment.offset) / (1 + clockSkew)
      }
      if let stopped = segment.stoppedAt { stop = min(stop, stopped) }
      return (segment.start, stop)
    }.sorted { $0.start < $1.start }
    var stretches: [Double] = []
    var run = 0.0
    func close() {
      if run > 0 { stretches.append(run) }
      run = 0
    }
    for (i, entry) in timeline.enumerated() {
      let leaves = i + 1 < timeline.count ? timeline[i + 1].time : (end ?? entry.time + 1.0 / 30)
      guard !entry.overlays.isEmpty, leaves > entry.time else {
        close()
        continue
      }
      var cursor = entry.time
      for sound in sounds where sound.end > cursor && sound.start < leaves {
        if sound.start > cursor {
          run += sound.start - cursor
          close()
        } else {
          close()
        }
        cursor = max(cursor, sound.end)
        if cursor >= leaves { break }
      }
      if cursor < leaves { run += leaves - cursor }
    }
    close()
    return SilentMouth(
      longestMilliseconds: (stretches.max() ?? 0) * 1000,
      totalMilliseconds: stretches.reduce(0, +) * 1000,
      stretchesOverThreshold: stretches.filter { $0 * 1000 > threshold }.count,
      threshold: threshold)
  }
}

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
