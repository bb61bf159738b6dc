import PngineKit

/// An animation drawn by WebGPU headless: the payload's executor (``PngineAnimation``) feeds
/// a ``WebGPUBackend`` whose canvas is read back after each frame.
///
/// The canvas size is fixed at creation (canvas-bound textures are made at that size). Not
/// `Sendable`: the GPU handles stay with the thread that owns the renderer.
public final class PngineRenderer {
  /// The animation (executor, diagnostics).
  public let animation: PngineAnimation
  /// The GPU backend.
  public let backend: WebGPUBackend
  /// What loading found.
  public let report: LoadReport
  /// Frames rendered so far.
  public private(set) var framesRendered = 0

  /// Loads `png` and executes its `init` commands on a new GPU device.
  public init(
    png: [UInt8], width: UInt32, height: UInt32,
    configuration: PngineConfiguration = PngineConfiguration()
  ) throws(PngineError) {
    animation = PngineAnimation(configuration: configuration)
    backend = try WebGPUBackend(width: width, height: height)
    report = try animation.load(png: png)
    try backend.execute(
      report.initOutput, inputs: FrameInputs(time: 0, width: width, height: height))
  }

  /// Runs `frame(time, w, h)` and executes its commands (no read-back).
  public func draw(time: Float) throws(PngineError) {
    let output = try animation.frame(time: time, width: backend.width, height: backend.height)
    try backend.execute(
      output, inputs: FrameInputs(time: time, width: backend.width, height: backend.height))
    framesRendered += 1
  }

  /// Draws a frame at `time` and reads the canvas back.
  public func render(time: Float) throws(PngineError) -> RGBAImage {
    try draw(time: time)
    return try backend.readCanvas()
  }
}
