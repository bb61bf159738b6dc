import Foundation
import LIVAEngine
import LIVAProtocol

/// A source of display ticks: calls its handler once per screen refresh with the display time
/// in seconds (any monotonic clock). `CADisplayLink` on Apple; ``RealTimeDisplayLink`` or
/// ``VirtualDisplayLink`` headless.
public protocol DisplayLink: AnyObject, Sendable {
  /// Starts ticking; the handler is called on the link's own thread, one call at a time.
  func start(_ onTick: @escaping @Sendable (Double) -> Void)
  /// Stops ticking. No handler call starts after this returns.
  func stop()
}

/// Plays the MP3 audio of speech chunks, started by the engine's actions, and reports where the
/// playing chunk is so the engine can keep the lips on the sound.
///
/// Times are display times (the same clock as the ``DisplayLink``'s ticks).
public protocol AudioOutput: AnyObject, Sendable {
  /// Starts `chunk`'s audio at display time `time`, `offset` seconds into it.
  func start(_ chunk: ChunkID, audio: Data, offset: Double, at time: Double)
  /// Stops `chunk`'s audio at once (interrupt).
  func stop(_ chunk: ChunkID, at time: Double)
  /// Pauses whatever is playing.
  func pause(at time: Double)
  /// Resumes after ``pause(at:)``.
  func resume(at time: Double)
  /// Where the playing chunk's audio is at display time `time`, or nil when nothing plays.
  func position(at time: Double) -> AudioClock?
  /// The audio of the chunk that will play next, as soon as it is there (before its
  /// ``start(_:audio:offset:at:)``): an output with latency schedules it right after the
  /// chunk before, with no gap. Optional: the default does nothing.
  func prepare(_ chunk: ChunkID, audio: Data, at time: Double)
}

extension AudioOutput {
  /// Does nothing: an output without latency starts each chunk when asked.
  public func prepare(_ chunk: ChunkID, audio: Data, at time: Double) {}
}

/// A composited frame, ready to show or record.
public struct RenderedFrame: Sendable {
  /// The display time of the tick that produced it.
  public var time: Double
  /// Width in pixels.
  public var width: Int
  /// Height in pixels.
  public var height: Int
  /// Straight (not premultiplied) RGBA, 8 bits per channel, rows top to bottom, no padding.
  ///
  /// From the player's frame pool: valid and unchanged for as long as you hold the frame
  /// (copy-on-write); drop frames you are done with so their buffers are reused in place.
  public var pixels: [UInt8]
  /// What the engine decided to draw (base animation and index, overlays, chunk, mode).
  public var content: DrawnFrame
  /// Where the frame's chunk audio was when the frame was drawn, if a chunk was playing.
  public var audioPosition: Double?

  /// Creates a frame.
  public init(
    time: Double, width: Int, height: Int, pixels: [UInt8], content: DrawnFrame,
    audioPosition: Double?
  ) {
    self.time = time
    self.width = width
    self.height = height
    self.pixels = pixels
    self.content = content
    self.audioPosition = audioPosition
  }
}

/// Where composited frames go: a view on Apple, a recorder headless.
public protocol RenderSurface: AnyObject, Sendable {
  /// Shows (or records) a new frame. Called on the display link's thread; must not block.
  func present(_ frame: RenderedFrame)

  /// How many presented frames the surface may still hold (keeps a reference to their
  /// `pixels`) when ``present(_:)`` is next called. The player keeps that many spare pixel
  /// buffers, so that it never writes into a frame the surface holds and never allocates per
  /// frame: 0 (the surface copies or converts the pixels before `present` returns) needs no
  /// spare buffer at all. The default, 2, suits a surface that shows one frame while handing
  /// the next to another thread. Holding more than declared stays correct (the pixels are
  /// copy-on-write) but costs an allocation per frame, which
  /// ``LIVAPlayer/framePoolAllocations`` counts.
  var retainedFrames: Int { get }
}

extension RenderSurface {
  /// 2: one frame on screen and one on its way there.
  public var retainedFrames: Int { 2 }
}
