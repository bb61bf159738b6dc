import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Locking

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
