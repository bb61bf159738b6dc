import LIVAEngine
import LIVAProtocol

/// The audio device's clock as the display sees it, and where each chunk's audio goes on it:
/// the decisions an audio output over a real device (AVAudioEngine with an `AVAudioPlayerNode`)
/// has to make, as a pure value. It never reads a clock; its owner feeds it the device's
/// readings and carries out the ``Action``s.
///
/// - **Two clocks.** The display clock (seconds, e.g. `CACurrentMediaTime`) and the player's
///   sample clock (frames rendered by the player node, which stops while the node is paused).
///   ``anchor(displayTime:sampleTime:)`` ties them together with a fresh reading
///   (`AVAudioTime`'s host time and `playerTime(forNodeTime:)`); between readings the sample
///   clock runs at ``sampleRate`` while the player runs.
/// - **Output latency.** A sample rendered at display time `t` is heard at
///   `t + outputLatency` (the session's output latency plus its I/O buffer: 5–20 ms on the
///   speaker, 150–250 ms over Bluetooth). Positions are of what is *heard*, so the lips follow
///   the sound, not the renderer.
/// - **Starting.** A chunk started now is scheduled ``schedulingLead`` ahead of the renderer and
///   heard `outputLatency` later; until then its position stays at its offset, so the mouth
///   waits for the sound instead of running ahead of it.
/// - **Back to back.** The engine starts a chunk when the one before has been *heard* to its
///   end, which is `outputLatency` after its last sample was rendered: too late for a gapless
///   join. So the next chunk is handed over as soon as its audio is there
///   (``enqueue(_:totalFrames:)``) and scheduled at the exact sample where the one before ends:
///   no gap, no overlap. It is reported by ``position(at:)`` only once the engine starts it.
/// - **Pause and interruption.** ``pause(at:)`` pauses the node (its sample clock stops);
///   ``resume(at:)`` plays on from the same sample. An interruption (a phone call) stops the
///   audio engine and its scheduled buffers; when it ends the chunk is scheduled again from the
///   position it was heard at, on a fresh sample clock.
public struct AudioTimeline: Sendable {
  /// What the owner must do to the audio device.
  public enum Action: Sendable, Hashable {
    /// Schedule `frames` frames of `chunk`'s audio, starting `skip` frames into it, at sample
    /// time `at` of the player node.
    case schedule(chunk: ChunkID, at: Int64, skip: Int64, frames: Int64)
    /// Stop the player node and drop what it has scheduled.
    case stopPlayer
    /// Pause the player node (its sample clock stops).
    case pausePlayer
    /// Play the player node (again).
    case playPlayer
    /// Start the audio engine again (after an interruption) and play the player node.
    case restartEngine
  }

  /// One chunk placed on the sample clock.
  public struct Segment: Sendable, Hashable {
    /// The chunk.
    public var chunk: ChunkID
    /// The sample time its first scheduled frame plays at.
    public var start: Int64
    /// Frames scheduled.
    public var frames: Int64
    /// Seconds into the chunk the first scheduled frame is.
    public var offset: Double
    /// Whether the engine started it (a chunk handed over ahead is not reported before).
    public var started: Bool
  }

  private struct Anchor: Sendable, Hashable {
    var display: Double
    var sample: Double
    var running: Bool
  }

  /// Frames per second of the device.
  public let sampleRate: Double
  /// Seconds from rendering a sample to hearing it.
  public var outputLatency: Double
  /// How far ahead of the renderer a chunk is scheduled when it cannot start on time (default
  /// 10 ms).
  public var schedulingLead: Double = 0.01
  /// The chunks placed, the playing one last (older ones are dropped as they end).
  public private(set) var segments: [Segment] = []
  /// Whether an interruption is going on.
  public private(set) var interrupted = false
  private var current: Anchor
  private var previous: Anchor?
  private var paused = false

  /// A timeline whose sample clock reads `sampleTime` at display time `displayTime`.
  public init(
    sampleRate: Double, outputLatency: Double, displayTime: Double, sampleTime: Double = 0
  ) {
    self.sampleRate = sampleRate
    self.outputLatency = outputLatency
    current = Anchor(display: displayTime, sample: sampleTime, running: true)
  }

  // MARK: Readings

  /// A fresh reading of the device: the player's sample clock reads `sampleTime` at display
  /// time `displayTime`.
  public mutating func anchor(displayTime: Double, sampleTime: Double) {
    guard displayTime >= current.display else { return }
    previous = current
    current = Anchor(display: displayTime, sample: sampleTime, running: current.running)
  }

  /// The player's sample clock at display time `time` (frozen while paused or interrupted).
  public func sampleTime(at time: Double) -> Double {
    let anchor = time >= current.display ? current : (previous ?? current)
    guard anchor.running else { return anchor.sample }
    return anchor.sample + (time - anchor.display) * sampleRate
  }

  /// The sample being heard at display time `time`.
  public func heardSample(at time: Double) -> Double {
    sampleTime(at: time - outputLatency)
  }

  /// Where the chunk being heard is at display time `time`: its offset until it is heard, its
  /// position while it is, nil once it has been heard to its end (or when nothing was started).
  public func position(at time: Double) -> AudioClock? {
    let heard = heardSample(at: time)
    guard let index = segments.lastIndex(where: { $0.started }) else { return nil }
    let segment = segments[index]
    let played = heard - Double(segment.start)
    guard played + 0.5 < Double(segment.frames) else { return nil }  // half a frame: rounding
    return AudioClock(chunk: segment.chunk, position: segment.offset + max(0, played) / sampleRate)
  }

  // MARK: Inputs

  /// Hands over the audio of `chunk` (of `totalFrames` frames), the next one to play, as soon as
  /// it is there: while a chunk is still being rendered it is scheduled right where that one
  /// ends. Otherwise nothing happens until ``start(_:totalFrames:offset:at:)``.
  public mutating func enqueue(_ chunk: ChunkID, totalFrames: Int64, at time: Double) -> [Action] {
    guard !interrupted, totalFrames > 0, !segments.contains(where: { $0.chunk == chunk }),
      let last = segments.last, Double(last.start + last.frames) > sampleTime(at: time)
    else { return [] }
    let start = last.start + last.frames
    segments.append(
      Segment(chunk: chunk, start: start, frames: totalFrames, offset: 0, started: false))
    return [.schedule(chunk: chunk, at: start, skip: 0, frames: totalFrames)]
  }

  /// Starts `chunk` (of `totalFrames` frames) now, display time `time`, `offset` seconds into
  /// it. A chunk handed over by ``enqueue(_:totalFrames:at:)`` is already in place: it only
  /// starts being reported.
  public mutating func start(
    _ chunk: ChunkID, totalFrames: Int64, offset: Double, at time: Double
  ) -> [Action] {
    let heard = heardSample(at: time)
    if let index = segments.firstIndex(where: { $0.chunk == chunk && !$0.started }),
      segments[index].offset == 0, offset == 0
    {
      segments[index].started = true
      segments.removeAll { $0.chunk != chunk && Double($0.start + $0.frames) <= heard }
      return []
    }
    let skip = min(totalFrames, max(0, Int64((offset * sampleRate).rounded())))
    let frames = totalFrames - skip
    guard frames > 0 else { return [] }
    var at = sampleTime(at: time) + schedulingLead * sampleRate
    if let last = segments.last { at = max(at, Double(last.start + last.frames)) }
    let start = Int64(at.rounded())
    segments.removeAll { Double($0.start + $0.frames) <= heard }
    segments.append(
      Segment(chunk: chunk, start: start, frames: frames, offset: offset, started: true))
    return [.schedule(chunk: chunk, at: start, skip: skip, frames: frames)]
  }

  /// Stops `chunk` (an interrupted message): the player drops everything scheduled.
  public mutating func stop(_ chunk: ChunkID, at time: Double) -> [Action] {
    guard segments.contains(where: { $0.chunk == chunk }) else { return [] }
    segments.removeAll()
    return [.stopPlayer]
  }

  /// Pauses: the sample clock stops where it is.
  public mutating func pause(at time: Double) -> [Action] {
    guard !paused, !interrupted else { return [] }
    paused = true
    freeze(at: time)
    return [.pausePlayer]
  }

  /// Resumes after ``pause(at:)``: the sample clock goes on from the same sample.
  public mutating func resume(at time: Double) -> [Action] {
    guard paused, !interrupted else {
      paused = false
      return []
    }
    paused = false
    thaw(at: time)
    return [.playPlayer]
  }

  /// The system stopped the audio engine (a call, another app's audio): everything scheduled
  /// is gone. The position heard now is kept.
  public mutating func interruptionBegan(at time: Double) -> [Action] {
    guard !interrupted else { return [] }
    interrupted = true
    freeze(at: time)
    return []
  }

  /// The interruption ended: the engine starts again on a fresh sample clock reading
  /// `sampleTime`, and the chunk that was being heard is scheduled again from where it was
  /// heard (unless paused meanwhile: then on ``resume(at:)``).
  public mutating func interruptionEnded(at time: Double, sampleTime: Double = 0) -> [Action] {
    guard interrupted else { return [] }
    interrupted = false
    let heard = position(at: time)
    let total = segments.last(where: \.started).map {
      Int64(($0.offset * sampleRate).rounded()) + $0.frames
    }
    segments.removeAll()
    previous = nil
    current = Anchor(display: time, sample: sampleTime, running: !paused)
    var actions: [Action] = [.restartEngine]
    if paused { actions.append(.pausePlayer) }
    if let heard, let total {
      actions += start(heard.chunk, totalFrames: total, offset: heard.position, at: time)
    }
    return actions
  }

  private mutating func freeze(at time: Double) {
    let sample = sampleTime(at: time)
    previous = current
    current = Anchor(display: time, sample: sample, running: false)
  }

  private mutating func thaw(at time: Double) {
    previous = current
    current = Anchor(display: time, sample: current.sample, running: true)
  }
}
