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
///   join. So each chunk is handed over as soon as its audio is there
///   (``enqueue(_:totalFrames:at:)``) and scheduled at the exact sample where the chunk before
///   it ends: no gap, no overlap. Chunks join in order: one handed over before the chunk it
///   follows (or while nothing plays) waits in ``handedOver`` and is scheduled the moment that
///   chunk is. It is reported by ``position(at:)`` only once the engine starts it, and a start
///   never schedules a chunk twice.
/// - **Pause and interruption.** ``pause(at:)`` pauses the node (its sample clock stops);
///   ``resume(at:)`` plays on from the same sample. An interruption (a phone call) stops the
///   audio engine and its scheduled buffers; when it ends the player is stopped (its sample
///   clock starts again at 0), the engine restarted, and the chunk scheduled again from the
///   position it was heard at, followed by the chunks that were scheduled after it. A pause
///   during the interruption holds after it. ``stop(_:at:)`` also restarts the sample clock.
public struct AudioTimeline: Sendable {
  /// What the owner must do to the audio device.
  public enum Action: Sendable, Hashable {
    /// Schedule `frames` frames of `chunk`'s audio, starting `skip` frames into it, at sample
    /// time `at` of the player node.
    case schedule(chunk: ChunkID, at: Int64, skip: Int64, frames: Int64)
    /// Stop the player node and drop what it has scheduled; its sample clock starts again at 0
    /// when it plays.
    case stopPlayer
    /// Pause the player node (its sample clock stops).
    case pausePlayer
    /// Play the player node (again).
    case playPlayer
    /// After an interruption: stop the player node (what it had scheduled is dropped, its sample
    /// clock starts again at 0), start the audio engine again, and play the node.
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
  /// Chunks handed over but not scheduled yet, in the order they came: each waits for the chunk
  /// it follows to be scheduled (or for its own start).
  public var handedOver: [ChunkID] { waiting.map(\.chunk) }
  /// The chunk the engine started whose audio is still being decoded
  /// (``startPending(_:offset:at:)``).
  public var pendingStart: ChunkID? { pending?.chunk }
  /// At most this many chunks wait in ``handedOver``; older ones are dropped.
  public static let handedOverLimit = 8
  private var waiting: [(chunk: ChunkID, frames: Int64)] = []
  private var pending: (chunk: ChunkID, offset: Double)?
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
    // Started, its audio not here yet: the mouth waits at its offset.
    if let pending { return AudioClock(chunk: pending.chunk, position: pending.offset) }
    let heard = heardSample(at: time)
    guard let index = segments.lastIndex(where: { $0.started }) else { return nil }
    let segment = segments[index]
    let played = heard - Double(segment.start)
    guard played + 0.5 < Double(segment.frames) else { return nil }  // half a frame: rounding
    return AudioClock(chunk: segment.chunk, position: segment.offset + max(0, played) / sampleRate)
  }

  // MARK: Inputs

  /// Hands over the audio of `chunk` (of `totalFrames` frames) as soon as it is there: when the
  /// chunk it follows (the same message, the index before) is the last one scheduled and still
  /// being rendered, it is scheduled right where that one ends. Otherwise it waits in
  /// ``handedOver`` until that chunk is scheduled, or until its own
  /// ``start(_:totalFrames:offset:at:)``.
  public mutating func enqueue(_ chunk: ChunkID, totalFrames: Int64, at time: Double) -> [Action] {
    guard totalFrames > 0, !segments.contains(where: { $0.chunk == chunk }),
      !waiting.contains(where: { $0.chunk == chunk })
    else { return [] }
    waiting.append((chunk, totalFrames))
    if waiting.count > Self.handedOverLimit { waiting.removeFirst() }
    guard !interrupted, let last = segments.last,
      Double(last.start + last.frames) > sampleTime(at: time)
    else { return [] }
    return scheduleFollowers()
  }

  /// Schedules, one after the other, the waiting chunks that follow the last one scheduled.
  private mutating func scheduleFollowers() -> [Action] {
    var actions: [Action] = []
    while let last = segments.last,
      let index = waiting.firstIndex(where: { Self.follows($0.chunk, last.chunk) })
    {
      let next = waiting.remove(at: index)
      let start = last.start + last.frames
      segments.append(
        Segment(chunk: next.chunk, start: start, frames: next.frames, offset: 0, started: false))
      actions.append(.schedule(chunk: next.chunk, at: start, skip: 0, frames: next.frames))
    }
    return actions
  }

  private static func follows(_ chunk: ChunkID, _ previous: ChunkID) -> Bool {
    chunk.message == previous.message && chunk.index == previous.index + 1
  }

  /// The engine started `chunk`, `offset` seconds in, but its audio is still being decoded: until
  /// ``start(_:totalFrames:offset:at:)`` (with the same offset) its position stays at `offset`,
  /// so the mouth waits for the sound.
  public mutating func startPending(_ chunk: ChunkID, offset: Double, at time: Double) {
    pending = (chunk, offset)
  }

  /// The pending start's audio could not be decoded: the chunk goes on without sound, and its
  /// position is no longer held (the engine's own clock takes over).
  public mutating func abandonPending(_ chunk: ChunkID) {
    if pending?.chunk == chunk { pending = nil }
  }

  /// Starts `chunk` (of `totalFrames` frames) now, display time `time`, `offset` seconds into
  /// it. A chunk already scheduled (handed over by ``enqueue(_:totalFrames:at:)``) only starts
  /// being reported, whatever the offset: its sound is already playing, and the position says
  /// where. The chunks handed over after it are scheduled behind it.
  public mutating func start(
    _ chunk: ChunkID, totalFrames: Int64, offset: Double, at time: Double
  ) -> [Action] {
    if pending?.chunk == chunk || pending.map({ !Self.follows(chunk, $0.chunk) }) == true {
      pending = nil
    }
    // What waited for another message, or for an earlier chunk, will not be its continuation.
    waiting.removeAll { $0.chunk.message != chunk.message || $0.chunk.index <= chunk.index }
    let heard = heardSample(at: time)
    if let index = segments.firstIndex(where: { $0.chunk == chunk && !$0.started }) {
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
    return [.schedule(chunk: chunk, at: start, skip: skip, frames: frames)] + scheduleFollowers()
  }

  /// Stops `chunk` (an interrupted message): the player drops everything scheduled, and its
  /// sample clock starts again at 0 (it plays again at once unless paused or interrupted).
  public mutating func stop(_ chunk: ChunkID, at time: Double) -> [Action] {
    waiting.removeAll { $0.chunk.message == chunk.message }
    if pending?.chunk == chunk { pending = nil }
    guard segments.contains(where: { $0.chunk == chunk }) else { return [] }
    segments.removeAll()
    let running = !paused && !interrupted
    previous = nil
    current = Anchor(display: time, sample: 0, running: running)
    return running ? [.stopPlayer, .playPlayer] : [.stopPlayer]
  }

  /// Pauses: the sample clock stops where it is.
  public mutating func pause(at time: Double) -> [Action] {
    guard !paused else { return [] }
    // During an interruption the engine is stopped already; the pause holds when it ends.
    guard !interrupted else {
      paused = true
      return []
    }
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

  /// The interruption ended: the player is stopped and the engine started again on a fresh
  /// sample clock reading `sampleTime`, and the chunk that was being heard is scheduled again
  /// from where it was heard, the chunks scheduled after it behind it (paused meanwhile: they
  /// wait, scheduled, for ``resume(at:)``).
  public mutating func interruptionEnded(at time: Double, sampleTime: Double = 0) -> [Action] {
    guard interrupted else { return [] }
    interrupted = false
    let heard = position(at: time)
    let total = segments.last(where: \.started).map {
      Int64(($0.offset * sampleRate).rounded()) + $0.frames
    }
    // Scheduled ahead, not started: handed over again, to follow the chunk rescheduled.
    let ahead = segments.filter { !$0.started && $0.offset == 0 }.map { ($0.chunk, $0.frames) }
    waiting = ahead + waiting.filter { entry in !ahead.contains { $0.0 == entry.chunk } }
    segments.removeAll()
    previous = nil
    current = Anchor(display: time, sample: sampleTime, running: !paused)
    var actions: [Action] = [.restartEngine]
    if paused { actions.append(.pausePlayer) }
    if pending == nil, let heard, let total {
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
