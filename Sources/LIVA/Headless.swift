import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Locking

/// A display link on a virtual clock: ticks happen only when the owner calls ``tick(at:)``
/// or ``run(from:to:hz:)``. For tests and offline rendering.
public final class VirtualDisplayLink: DisplayLink {
  private let handler = Locked<(@Sendable (Double) -> Void)?>(nil)

  /// Creates a stopped link.
  public init() {}

  /// Stores the handler; nothing ticks until ``tick(at:)``.
  public func start(_ onTick: @escaping @Sendable (Double) -> Void) {
    handler.withLock { $0 = onTick }
  }

  /// Forgets the handler.
  public func stop() { handler.withLock { $0 = nil } }

  /// Delivers one tick at display time `time` (synchronously, on the caller's thread).
  public func tick(at time: Double) {
    let onTick = handler.withLock { $0 }
    onTick?(time)
  }

  /// Delivers ticks at `hz` from `start` (exclusive) to `end` (inclusive).
  public func run(from start: Double, to end: Double, hz: Double = 60) {
    var k = (start * hz).rounded(.down) + 1
    while k / hz <= end + 1e-9 {
      tick(at: k / hz)
      k += 1
    }
  }
}

/// A display link in real time: a dedicated thread ticking at a fixed rate (60 Hz by default)
/// on the monotonic clock, in seconds since the link was created.
public final class RealTimeDisplayLink: DisplayLink {
  /// Ticks per second.
  public let hz: Double
  private let origin = ContinuousClock.now
  private let running = Locked<Int>(0)

  /// Creates a link ticking `hz` times per second once started.
  public init(hz: Double = 60) { self.hz = max(1, hz) }

  /// Seconds since the link was created, on the monotonic clock.
  public var now: Double {
    let elapsed = ContinuousClock.now - origin
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
  }

  /// Starts the ticking thread. Ticks are due on a fixed grid of periods from the first, as a
  /// display's refresh is; when a handler runs long, the ticks it overran are skipped, not
  /// delivered in a burst (``nextDue(after:now:period:)``).
  public func start(_ onTick: @escaping @Sendable (Double) -> Void) {
    let generation = running.withLock { value -> Int in
      value += 1
      return value
    }
    let period = 1 / hz
    let thread = Thread { [self] in
      var due = now
      while running.withLock({ $0 == generation }) {
        let wait = due - now
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        guard running.withLock({ $0 == generation }) else { return }
        let time = now
        onTick(time)
        due = Self.nextDue(after: due, now: now, period: period)
      }
    }
    thread.name = "LIVA display link"
    thread.start()
  }

  /// When the tick after the one due at `due` is due, read at `now` (once that tick's handler
  /// returned): one period later, or, when that time has passed too, the first point of the
  /// grid after `now`.
  static func nextDue(after due: Double, now: Double, period: Double) -> Double {
    let next = due + period
    guard next < now else { return next }
    return next + (((now - next) / period).rounded(.down) + 1) * period
  }

  /// Stops the thread after its current tick.
  public func stop() { running.withLock { $0 += 1 } }
}

/// An audio output that keeps time without a sound device: a started chunk plays for its MP3
/// duration at `1 + clockSkew` times real time. It records what was played, so a recorder
/// can write the audio track (with `keepsAudio` false it records when and what, without the
/// MP3 bytes, so that a long session does not hold all of its audio).
public final class HeadlessAudioOutput: AudioOutput {
  /// One chunk's audio as it was played.
  public struct Segment: Sendable {
    /// The chunk.
    public var chunk: ChunkID
    /// The MP3 bytes (empty when the output does not keep audio).
    public var audio: Data
    /// Display time it started at.
    public var start: Double
    /// Seconds into the chunk it started at.
    public var offset: Double
    /// Seconds of the chunk's audio (from its MP3 frame headers), when known.
    public var duration: Double?
    /// Display time it was stopped at, when interrupted.
    public var stoppedAt: Double?
  }

  private struct Playing {
    var index: Int
    var pausedAt: Double?
    var pausedTotal = 0.0
  }

  private struct State {
    var segments: [Segment] = []
    var playing: Playing?
  }

  /// How much faster (positive) or slower (negative) than real time the audio clock runs,
  /// e.g. `0.01` for 1 % fast. Lets tests check that the lips follow the sound.
  public let clockSkew: Double
  /// Whether each segment keeps its MP3 bytes (a recorder needs them for the audio track).
  public let keepsAudio: Bool
  private let state = Locked(State())

  /// Creates an output whose clock runs `1 + clockSkew` times real time; `keepsAudio`: whether
  /// ``segments`` keep the MP3 bytes played.
  public init(clockSkew: Double = 0, keepsAudio: Bool = true) {
    self.clockSkew = clockSkew
    self.keepsAudio = keepsAudio
  }

  /// Starts a chunk (replacing any playing one: chunks are sequential).
  public func start(_ chunk: ChunkID, audio: Data, offset: Double, at time: Double) {
    let duration = (try? MP3Timing(parsing: audio)).map(\.duration)
    state.withLock { state in
      state.segments.append(
        Segment(
          chunk: chunk, audio: keepsAudio ? audio : Data(), start: time, offset: offset,
          duration: duration))
      state.playing = Playing(index: state.segments.count - 1)
    }
  }

  /// Stops the chunk if it is the one playing.
  public func stop(_ chunk: ChunkID, at time: Double) {
    state.withLock { state in
      guard let playing = state.playing, state.segments[playing.index].chunk == chunk else {
        return
      }
      state.segments[playing.index].stoppedAt = time
      state.playing = nil
    }
  }

  /// Freezes the audio clock.
  public func pause(at time: Double) {
    state.withLock { state in
      if state.playing?.pausedAt == nil { state.playing?.pausedAt = time }
    }
  }

  /// Lets the audio clock run again.
  public func resume(at time: Double) {
    state.withLock { state in
      guard let pausedAt = state.playing?.pausedAt else { return }
      state.playing?.pausedTotal += max(0, time - pausedAt)
      state.playing?.pausedAt = nil
    }
  }

  /// The playing chunk's position, or nil once it has played to its end.
  public func position(at time: Double) -> AudioClock? {
    state.withLock { state in
      guard let playing = state.playing else { return nil }
      let segment = state.segments[playing.index]
      let now = playing.pausedAt ?? time
      let position =
        segment.offset + max(0, now - segment.start - playing.pausedTotal) * (1 + clockSkew)
      if let duration = segment.duration, position >= duration { return nil }
      return AudioClock(chunk: segment.chunk, position: position)
    }
  }

  /// Everything played so far, in order.
  public var segments: [Segment] { state.withLock { $0.segments } }
}

/// A surface that hands every frame to a closure (a recorder, a test).
public final class CallbackSurface: RenderSurface {
  private let onFrame: @Sendable (RenderedFrame) -> Void

  /// How many frames `onFrame` may still hold when the next one comes (see
  /// ``RenderSurface/retainedFrames``).
  public let retainedFrames: Int

  /// Creates a surface calling `onFrame` for every presented frame, on the display thread.
  /// `retaining`: how many of the frames it was given `onFrame` may keep at a time (0: it
  /// keeps none; the default 2 holds the latest two).
  public init(retaining: Int = 2, _ onFrame: @escaping @Sendable (RenderedFrame) -> Void) {
    self.retainedFrames = max(0, retaining)
    self.onFrame = onFrame
  }

  /// Passes the frame on.
  public func present(_ frame: RenderedFrame) { onFrame(frame) }
}
