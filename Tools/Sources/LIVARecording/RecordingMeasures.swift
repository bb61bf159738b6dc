import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol

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
