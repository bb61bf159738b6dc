import PngineKit

/// An animation drawn by WebGPU: the payload's executor (``PngineAnimation``) feeds a
/// ``WebGPUBackend`` whose canvas is read back after each frame (headless,
/// ``init(png:width:height:configuration:)`` and ``render(time:)``) or presented on a surface
/// (``init(png:surface:width:height:configuration:)`` and ``present(time:)``).
///
/// Headless, the canvas size is fixed at creation (canvas-bound textures are made at that
/// size); a surface's follows ``resize(width:height:)``. Not `Sendable`: the GPU handles stay
/// with the thread that owns the renderer.
public final class PngineRenderer {
  /// The animation (executor, diagnostics).
  public let animation: PngineAnimation
  /// The GPU backend.
  public let backend: WebGPUBackend
  /// What loading found.
  public let report: LoadReport
  /// Frames rendered so far.
  public private(set) var framesRendered = 0

  /// Loads `png` and executes its `init` commands on an offscreen canvas, on the device of
  /// `devices` (by default the one shared by every animation in the process: see
  /// ``PngineDevice``). `limits`: what its GPU commands are checked against, and how long a
  /// frame's GPU work may take (``GPULimits``).
  public convenience init(
    png: [UInt8], width: UInt32, height: UInt32,
    configuration: PngineConfiguration = PngineConfiguration(), limits: GPULimits = GPULimits(),
    devices: PngineDeviceProvider = .shared
  ) throws(PngineError) {
    try self.init(
      png: png,
      backend: try WebGPUBackend(width: width, height: height, limits: limits, devices: devices),
      configuration: configuration)
  }

  /// Loads `png` and executes its `init` commands on the device of `devices`, presenting to
  /// `surface` at `width × height` (a `CAMetalLayer`, an X11 window: see ``SurfaceSource``).
  /// Should `init` draw to the canvas, that texture is presented. `transparent`: what the
  /// canvas leaves transparent shows what is behind the layer (a premultiplied alpha mode).
  /// `limits`: as offscreen.
  public convenience init(
    png: [UInt8], surface: SurfaceSource, width: UInt32, height: UInt32,
    configuration: PngineConfiguration = PngineConfiguration(), limits: GPULimits = GPULimits(),
    transparent: Bool = false, devices: PngineDeviceProvider = .shared
  ) throws(PngineError) {
    try self.init(
      png: png,
      backend: try WebGPUBackend(
        surface: surface, width: width, height: height, limits: limits,
        transparent: transparent, devices: devices),
      configuration: configuration)
  }

  /// Loads `png` and executes its `init` commands on `backend` (presenting them on a surface;
  /// offscreen, presenting and discarding do nothing).
  private init(png: [UInt8], backend: WebGPUBackend, configuration: PngineConfiguration)
    throws(PngineError)
  {
    animation = PngineAnimation(configuration: configuration)
    self.backend = backend
    report = try animation.load(png: png)
    do {
      try backend.execute(
        report.initOutput,
        inputs: FrameInputs(time: 0, width: backend.width, height: backend.height))
      try backend.present()
    } catch {
      backend.discardCanvas()
      throw error
    }
  }

  /// On a surface: takes its current texture, runs `frame(time, w, h)` into it and presents
  /// it. When the surface has no texture (`timeout`, `outdated`, `lost`) it is reconfigured
  /// and the frame is ``SurfaceFrame/skipped(_:)`` without running the executor; a frame that
  /// fails is not presented (the error is thrown). Offscreen it draws and reports
  /// `presented(.optimal)` (read the canvas with ``WebGPUBackend/readCanvas()``).
  @discardableResult
  public func present(time: Float, pointer: PointerState = PointerState()) throws(PngineError)
    -> SurfaceFrame
  {
    let status = try backend.acquireCanvas()
    guard status.hasTexture else { return .skipped(status) }
    do {
      try draw(time: time, pointer: pointer)
      try backend.present()
    } catch {
      backend.discardCanvas()
      throw error
    }
    return .presented(status)
  }

  /// A new size for a surface's canvas: the surface is reconfigured and canvas-sized textures
  /// remade (see ``WebGPUBackend/resize(width:height:)``); the next frame is drawn at it.
  public func resize(width: UInt32, height: UInt32) throws(PngineError) {
    try backend.resize(width: width, height: height)
  }

  /// Runs `frame(time, w, h)` and executes its commands (no read-back); `pointer` is what
  /// `write_pointer_uniform` writes.
  public func draw(time: Float, pointer: PointerState = PointerState()) throws(PngineError) {
    let output = try animation.frame(time: time, width: backend.width, height: backend.height)
    do {
      try backend.execute(
        output,
        inputs: FrameInputs(
          time: time, width: backend.width, height: backend.height, pointer: pointer))
    } catch {
      // The animation counted its own errors; the GPU's are counted here.
      animation.diagnostics.record(error)
      throw error
    }
    framesRendered += 1
  }

  /// Draws a frame at `time` and reads the canvas back.
  public func render(time: Float, pointer: PointerState = PointerState()) throws(PngineError)
    -> RGBAImage
  {
    try draw(time: time, pointer: pointer)
    return try backend.readCanvas()
  }
}
