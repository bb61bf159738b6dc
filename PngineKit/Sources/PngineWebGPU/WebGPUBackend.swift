import CPngineWGPU
import CWGPU
import PngineKit

/// The WebGPU backend on wgpu-native (Vulkan through lavapipe on a Linux machine without a
/// GPU, Metal on Apple): executes PNGine's command stream and reads the canvas back, or
/// presents it on a surface.
///
/// Headless (``init(width:height:)``), the canvas (texture id `0xFFFE`) is an offscreen
/// ``canvasFormatName`` texture of the size given at creation, read back by ``readCanvas()``.
/// On a surface (``init(surface:width:height:)``: a `CAMetalLayer`, an X11 window), the canvas
/// is the surface's current texture, acquired per frame (``acquireCanvas()``) and shown by
/// ``present()``; its format is the surface's (``SurfaceFormatChoice``). Either way pipelines
/// whose targets name no format target the canvas format (``canvasFormat``), as upstream's
/// pipelines target the preferred canvas format. Every command is first checked
/// (``CommandChecker``); creations run inside WebGPU error scopes, so a WGSL compile error or
/// a rejected descriptor is a ``PngineError`` naming that command; errors in passes surface
/// when the frame's encoder is finished and are reported at its `submit`. A lost device is
/// ``PngineError/Code/deviceLost`` on the next command.
///
/// The device is shared (``PngineDevice``): every call that reaches wgpu holds the device's
/// lock, so animations on other threads never run inside this one's error scopes. The backend
/// itself is not `Sendable`: its tables and the frame being encoded stay with the one thread
/// (or lock, or actor) that owns it.
///
/// The work is split by what it decides: this file holds the state, the creation and the
/// error handling; `+Commands` carries out each checked command; `+Descriptors` translates the
/// stream's descriptors into wgpu's; `+Canvas` is the surface and the read-back;
/// `GPUResourceTables` holds what the stream made.
///
/// ## What aborts wgpu-native, and what guards it
///
/// A PNG is untrusted input, and wgpu-native answers some bad values by aborting the process
/// (a Rust panic) rather than with an error a scope could catch. Each such route is closed
/// before the call:
/// - **A null handle** where one is wanted (`expect("invalid …")` in wgpu-native): every
///   object is looked up through `handle(_:_:_:_:call:)`, which throws
///   ``PngineError/Code/resourceNotFound`` instead; a bind group's layout (explicit or taken
///   from a pipeline) is required the same way.
/// - **Unknown flag bits or enum values** (buffer and texture usages, shader-stage visibility,
///   colour write masks, formats, dimensions): ``CommandChecker`` refuses them against
///   WebGPU's sets (``GPUValueRules``); names map through `WGPUNames`, which throws on an
///   unknown one.
/// - **Shader text** that is not UTF-8, or whose error the compiler cannot format (multi-byte
///   characters in code), or nests deep enough to exhaust its stack: ``ShaderSource`` refuses
///   it, and blanks non-ASCII characters in comments.
/// - **Queue writes** (`wgpuQueueWriteBuffer`) outside the buffer, unaligned, or into a buffer
///   without COPY_DST: refused by the checker.
/// - **A submit** (`wgpuQueueSubmit`) of a command buffer wgpu rejected, or on a lost device:
///   the frame's error scope is popped first (a rejected buffer is never submitted), and the
///   device's loss is asked right before, callbacks delivered (`pg_gpu_refresh_lost`); the
///   read-back's submit too.
/// - **Surface configuration** a window no longer supports: its capabilities are asked first.
/// - **Sizes and counts** past the device's limits and the animation's GPU memory budget:
///   ``GPULimits``.
/// An object WebGPU rejected is released at once and its id stays undefined for the checker
/// too, so no later command can reach it.
public final class WebGPUBackend: GPUBackend {
  /// The offscreen canvas format: `rgba8unorm`, read back as is.
  public static let canvasFormatName = "rgba8unorm"
  /// The canvas width (a surface's changes with ``resize(width:height:)``).
  public internal(set) var width: UInt32
  /// The canvas height (a surface's changes with ``resize(width:height:)``).
  public internal(set) var height: UInt32
  /// The adapter, e.g. `llvmpipe (LLVM 15.0.7, 256 bits) (Vulkan)`.
  public var adapterName: String { gpuDevice.adapterName }
  /// The device this backend draws with, shared with every other animation its provider
  /// serves (see ``PngineDevice``).
  public let gpuDevice: PngineDevice
  /// The canvas format: `rgba8unorm` offscreen, the surface's chosen format on a surface
  /// (see ``SurfaceFormatChoice/format(from:)``).
  public let canvasFormat: WGPUTextureFormat
  /// Whether the canvas is a surface's texture (presented) rather than an offscreen one.
  public var isSurface: Bool { surface != nil }

  var gpu: OpaquePointer { gpuDevice.context }
  let device: WGPUDevice
  let queue: WGPUQueue
  // Offscreen: the canvas, its view and the read-back buffer (nil on a surface).
  let canvas: WGPUTexture?
  let canvasView: WGPUTextureView?
  let readback: WGPUBuffer?
  let paddedRow: Int
  // On a surface: the surface, how it is configured, and the frame's texture while held.
  let surface: WGPUSurface?
  var surfaceUsage = WGPUTextureUsage(0)
  var surfaceAlpha = WGPUCompositeAlphaMode_Auto
  var frameTexture: WGPUTexture?
  var frameView: WGPUTextureView?
  var frameStatus: SurfaceTextureStatus?
  // Textures made at the canvas size (no size in their descriptor), remade on a resize.
  var canvasSized: [UInt16: WGPUTextureDescriptor] = [:]
  var viewSources: [UInt16: UInt16] = [:]

  var checker: CommandChecker
  /// The objects the stream made, by id.
  var tables = GPUResourceTables()

  var encoder: WGPUCommandEncoder?
  var renderPass: WGPURenderPassEncoder?
  var computePass: WGPUComputePassEncoder?
  var currentPipeline: UInt16?
  var pendingDepthOps: (load: UInt8, store: UInt8)?
  var pendingDepthClear: Float?

  /// Makes the canvas on the device of `devices` (by default the one every animation in the
  /// process shares: see ``PngineDevice``).
  /// - Throws: ``PngineError/Code/gpuUnavailable`` without an adapter or device.
  /// - Parameters:
  ///   - limits: what every command is checked against first (see ``GPULimits``); each
  ///     backend has its own budget, whoever else shares its device.
  ///   - devices: where the device comes from.
  public init(
    width: UInt32, height: UInt32, limits: GPULimits = GPULimits(),
    devices: PngineDeviceProvider = .shared
  ) throws(PngineError) {
    try Self.checkSize(width, height, at: .init())
    checker = CommandChecker(limits: limits, canvasWidth: width, canvasHeight: height)
    let gpuDevice = try devices.device()
    self.gpuDevice = gpuDevice
    self.width = width
    self.height = height
    device = gpuDevice.device
    queue = gpuDevice.queue
    surface = nil
    canvasFormat = WGPUTextureFormat_RGBA8Unorm
    let paddedRow = (Int(width) * 4 + 255) / 256 * 256
    self.paddedRow = paddedRow
    let format = canvasFormat
    (canvas, canvasView, readback) = gpuDevice.withDevice {
      var texture = pg_texture_descriptor_init()
      texture.size = WGPUExtent3D(width: width, height: height, depthOrArrayLayers: 1)
      texture.format = format
      texture.usage =
        WGPUTextureUsage_RenderAttachment | WGPUTextureUsage_CopySrc | WGPUTextureUsage_CopyDst
        | WGPUTextureUsage_TextureBinding
      let canvas = wgpuDeviceCreateTexture(gpuDevice.device, &texture)
      let canvasView = wgpuTextureCreateView(canvas, nil)
      var buffer = pg_buffer_descriptor_init()
      buffer.size = UInt64(paddedRow * Int(height))
      buffer.usage = WGPUBufferUsage_CopyDst | WGPUBufferUsage_MapRead
      return (canvas, canvasView, wgpuDeviceCreateBuffer(gpuDevice.device, &buffer))
    }
  }

  /// Makes a surface on `source` for the device of `devices` (by default the one every
  /// animation in the process shares: see ``PngineDevice``) and configures it at
  /// `width × height`: the format from ``SurfaceFormatChoice/format(from:)``, usage
  /// render attachment (plus copy source and destination where the surface allows them, for
  /// the stream's canvas copies), present mode FIFO, the alpha mode from
  /// ``SurfaceFormatChoice/alphaMode(from:transparent:)``. Nothing is drawn until a frame.
  /// - Throws: ``PngineError/Code/gpuUnavailable`` without an adapter or device; ``PngineError/Code/surfaceFailed`` when the surface cannot be made or offers
  ///   no format; ``PngineError/Code/invalidArgument`` for a size outside 1…8192.
  /// - Parameters:
  ///   - limits: what every command is checked against first (see ``GPULimits``).
  ///   - transparent: whether what the canvas leaves transparent shows what is behind it (the
  ///     alpha mode from ``SurfaceFormatChoice/alphaMode(from:transparent:)``).
  ///   - devices: where the device comes from.
  public init(
    surface source: SurfaceSource, width: UInt32, height: UInt32, limits: GPULimits = GPULimits(),
    transparent: Bool = false, devices: PngineDeviceProvider = .shared
  ) throws(PngineError) {
    try Self.checkSize(width, height, at: .init())
    checker = CommandChecker(limits: limits, canvasWidth: width, canvasHeight: height)
    let gpuDevice = try devices.device()
    let (surface, format, alphas, usages) = try gpuDevice.withDevice {
      () throws(PngineError) in try Self.makeSurface(source, on: gpuDevice)
    }
    self.gpuDevice = gpuDevice
    self.width = width
    self.height = height
    device = gpuDevice.device
    queue = gpuDevice.queue
    self.surface = surface
    canvasFormat = format
    canvas = nil
    canvasView = nil
    readback = nil
    paddedRow = 0
    surfaceUsage =
      WGPUTextureUsage_RenderAttachment
      | (usages & (WGPUTextureUsage_CopySrc | WGPUTextureUsage_CopyDst))
    surfaceAlpha = SurfaceFormatChoice.alphaMode(from: alphas, transparent: transparent)
    try locked { () throws(PngineError) in try configureSurface(.init(call: "surface")) }
  }

  deinit {
    let held = HeldObjects(self)
    // On a device given up, a hung submit may still be inside wgpu: the releases wait behind
    // it on the device's thread rather than block whoever lets this backend go.
    if gpuDevice.isGivenUp {
      gpuDevice.afterWork { held.release() }
    } else {
      gpuDevice.withDevice { held.release() }
    }
  }

  /// Runs `body` holding the device's lock (see ``PngineDevice``).
  func locked<Result>(_ body: () throws(PngineError) -> Result) throws(PngineError)
    -> Result
  {
    try gpuDevice.withDevice(body)
  }

  /// Destroys the device, as a driver reset or an unplugged GPU would: every later command
  /// of this backend, and of every other animation on its device, fails with
  /// ``PngineError/Code/deviceLost`` (``PngineDevice/destroy()``). For tests of device loss.
  public func loseDevice() {
    gpuDevice.destroy()
  }

  // MARK: Executing

  /// Executes one call's commands (see ``GPUBackend``), holding the device for the call.
  public func execute(
    _ commands: [DecodedCommand], blobs: [Int: Blob], call: String, inputs: FrameInputs
  ) throws(PngineError) {
    try locked { () throws(PngineError) in
      try executeLocked(commands, blobs: blobs, call: call, inputs: inputs)
    }
  }

  func executeLocked(
    _ commands: [DecodedCommand], blobs: [Int: Blob], call: String, inputs: FrameInputs
  ) throws(PngineError) {
    do throws(PngineError) {
      for (index, decoded) in commands.enumerated() {
        try checkLost(decoded.location(call: call))
        let blob = blobs[index]
        // What the command defines counts only once the GPU made it: on a failure the
        // checker is as before, so no later command can name an object that does not exist.
        let before = checker
        try checker.check(decoded, blob: blob, call: call)
        do throws(PngineError) {
          try apply(decoded, blob: blob, call: call, inputs: inputs)
        } catch {
          checker = before
          throw error
        }
      }
    } catch {
      abandonFrame()
      throw error
    }
    guard pg_gpu_uncaptured_flag(gpu) != 0 else { return }
    var message = [CChar](repeating: 0, count: 4096)
    if pg_gpu_take_uncaptured(gpu, &message, message.count) != 0 {
      throw PngineError(.gpuValidation, text(message), location: .init(call: call))
    }
  }

  /// Throws ``PngineError/Code/deviceLost`` when the device is gone. `refresh`: deliver
  /// pending callbacks first (before a submit, which wgpu-native makes fatal on a lost device).
  func checkLost(_ at: PngineError.Location, refresh: Bool = false) throws(PngineError) {
    if gpuDevice.isGivenUp {
      throw PngineError(
        .deviceLost, "the GPU device was given up: a submit on it overran its time limit",
        location: at)
    }
    guard (refresh ? pg_gpu_refresh_lost(gpu) : pg_gpu_lost_flag(gpu)) != 0 else { return }
    var message = [CChar](repeating: 0, count: 1024)
    if pg_gpu_is_lost(gpu, &message, message.count) != 0 {
      throw PngineError(.deviceLost, "the GPU device was lost: \(text(message))", location: at)
    }
  }

  /// The error of a submit that overran ``GPULimits/submitTimeout`` (the device is given up).
  func timedOut(_ at: PngineError.Location) -> PngineError {
    let limit = checker.limits.submitTimeout
    return PngineError(
      .gpuTimeout,
      "the GPU did not finish the frame's work within \(limit); the device was given up, "
        + "and the animation stops (its work may be unbounded per invocation: a loop over a "
        + "whole buffer in every shader call)",
      location: at)
  }

  /// Runs `body` inside an error scope and hands what it made to `keep` only when WebGPU
  /// accepted it; an object WebGPU rejected is released at once and never kept, so that no
  /// later command can reach it (the checker forgets its id too, see ``execute``). A GPU
  /// error becomes `code` naming `decoded`; no object at all is
  /// ``PngineError/Code/gpuValidation``.
  @discardableResult
  func scoped<Handle>(
    _ decoded: DecodedCommand, call: String, code: PngineError.Code,
    keep: (Handle) -> Void = { _ in }, release: (Handle) -> Void,
    make body: () throws(PngineError) -> Handle?
  ) throws(PngineError) -> Handle {
    pg_gpu_push_scope(gpu)
    let value: Handle?
    do {
      value = try body()
    } catch {
      var sink = [CChar](repeating: 0, count: 16)
      _ = pg_gpu_pop_scope(gpu, &sink, sink.count)
      throw error
    }
    var message = [CChar](repeating: 0, count: 8192)
    if pg_gpu_pop_scope(gpu, &message, message.count) != 0 {
      if let value { release(value) }
      try checkLost(decoded.location(call: call))
      throw PngineError(
        code, "\(decoded.command): \(text(message))", location: decoded.location(call: call))
    }
    guard let value else {
      try checkLost(decoded.location(call: call))
      throw PngineError(
        .gpuValidation, "\(decoded.command): wgpu made no object",
        location: decoded.location(call: call))
    }
    keep(value)
    return value
  }

  /// ``scoped(_:call:code:keep:release:make:)`` on a thread whose stack is sized for the
  /// shader compiler (``LargeStack``): shader modules and pipelines, whose creation runs naga
  /// (its parser and validator for a module, its SPIR-V writer for a pipeline). The error scope
  /// is pushed and popped on that thread too (wgpu keeps error scopes per thread).
  @discardableResult
  func scopedOnCompilerStack<Handle>(
    _ decoded: DecodedCommand, call: String, code: PngineError.Code,
    keep: (Handle) -> Void = { _ in }, release: (Handle) -> Void,
    make body: () throws(PngineError) -> Handle?
  ) throws(PngineError) -> Handle {
    let outcome: Result<Handle, PngineError>? = LargeStack.run(
      stackBytes: checker.limits.shaderCompilerStackBytes
    ) {
      do throws(PngineError) {
        return .success(
          try scoped(decoded, call: call, code: code, keep: keep, release: release, make: body))
      } catch {
        return .failure(error)
      }
    }
    guard let outcome else {
      throw PngineError(
        code, "\(decoded.command): no thread could be started to compile it on",
        location: decoded.location(call: call))
    }
    return try outcome.get()
  }

  /// The handle of `id` in `table`, or ``PngineError/Code/resourceNotFound``: wgpu-native
  /// aborts on a null handle where it wants one, so none is ever passed.
  func handle<Handle>(
    _ table: [UInt16: Handle], _ id: UInt16, _ kind: ResourceKind, _ decoded: DecodedCommand,
    call: String
  ) throws(PngineError) -> Handle {
    guard let value = table[id] else {
      throw PngineError(
        .resourceNotFound, "\(decoded.command): \(kind) \(id) has no GPU object",
        location: decoded.location(call: call))
    }
    return value
  }

  func bytes(_ blob: Blob?) -> [UInt8] {
    if case .bytes(let b)? = blob { return b }
    return []
  }

  func encoderForPass(_ decoded: DecodedCommand, call: String) throws(PngineError)
    -> WGPUCommandEncoder
  {
    if let encoder { return encoder }
    guard let made = wgpuDeviceCreateCommandEncoder(device, nil) else {
      throw PngineError(
        .gpuValidation, "\(decoded.command): no command encoder",
        location: decoded.location(call: call))
    }
    encoder = made
    pg_gpu_push_scope(gpu)
    return made
  }

  /// After a failed command: closes the open pass and drops the frame's encoder (its commands
  /// are not submitted), so that the next call starts clean.
  func abandonFrame() {
    defer {
      currentPipeline = nil
      checker.abandonPass()
    }
    if gpuDevice.isGivenUp {
      // Nothing more reaches wgpu here: the releases wait behind the hung work.
      let held = HeldObjects(
        gpu: gpu, renderPass: renderPass, computePass: computePass, encoder: encoder)
      gpuDevice.afterWork { held.release() }
      (renderPass, computePass, encoder) = (nil, nil, nil)
      return
    }
    if let p = renderPass {
      wgpuRenderPassEncoderEnd(p)
      wgpuRenderPassEncoderRelease(p)
      renderPass = nil
    }
    if let p = computePass {
      wgpuComputePassEncoderEnd(p)
      wgpuComputePassEncoderRelease(p)
      computePass = nil
    }
    if let e = encoder {
      wgpuCommandEncoderRelease(e)
      encoder = nil
      var sink = [CChar](repeating: 0, count: 16)
      _ = pg_gpu_pop_scope(gpu, &sink, sink.count)
    }
  }

}

/// What a backend holds in wgpu, taken out of it to be released: under the device's lock, or
/// on a device given up, on the device's thread after the hung work.
struct HeldObjects: @unchecked Sendable {
  let gpu: OpaquePointer
  var renderPass: WGPURenderPassEncoder?
  var computePass: WGPUComputePassEncoder?
  var encoder: WGPUCommandEncoder?
  var tables = GPUResourceTables()
  var readback: WGPUBuffer?
  var canvasView: WGPUTextureView?
  var canvas: WGPUTexture?
  var frameView: WGPUTextureView?
  var frameTexture: WGPUTexture?
  var surface: WGPUSurface?

  init(
    gpu: OpaquePointer, renderPass: WGPURenderPassEncoder?, computePass: WGPUComputePassEncoder?,
    encoder: WGPUCommandEncoder?
  ) {
    self.gpu = gpu
    self.renderPass = renderPass
    self.computePass = computePass
    self.encoder = encoder
  }

  init(_ backend: WebGPUBackend) {
    self.init(
      gpu: backend.gpu, renderPass: backend.renderPass, computePass: backend.computePass,
      encoder: backend.encoder)
    tables = backend.tables
    readback = backend.readback
    canvasView = backend.canvasView
    canvas = backend.canvas
    frameView = backend.frameView
    frameTexture = backend.frameTexture
    surface = backend.surface
  }

  /// Releases each object once, users before what they use.
  func release() {
    if let renderPass { wgpuRenderPassEncoderRelease(renderPass) }
    if let computePass { wgpuComputePassEncoderRelease(computePass) }
    if let encoder { wgpuCommandEncoderRelease(encoder) }
    var tables = tables
    tables.releaseAll()
    if let readback { wgpuBufferRelease(readback) }
    if let canvasView { wgpuTextureViewRelease(canvasView) }
    if let canvas { wgpuTextureRelease(canvas) }
    if let frameView { wgpuTextureViewRelease(frameView) }
    if let frameTexture { wgpuTextureRelease(frameTexture) }
    if let surface { pg_surface_release(gpu, surface) }
  }
}
