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
/// Not `Sendable`: wgpu handles are not thread-safe by contract, so the backend and all its
/// handles stay with the one thread (or lock, or actor) that owns it.
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
  public private(set) var width: UInt32
  /// The canvas height (a surface's changes with ``resize(width:height:)``).
  public private(set) var height: UInt32
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

  private var gpu: OpaquePointer { gpuDevice.context }
  private let device: WGPUDevice
  private let queue: WGPUQueue
  // Offscreen: the canvas, its view and the read-back buffer (nil on a surface).
  private let canvas: WGPUTexture?
  private let canvasView: WGPUTextureView?
  private let readback: WGPUBuffer?
  private let paddedRow: Int
  // On a surface: the surface, how it is configured, and the frame's texture while held.
  private let surface: WGPUSurface?
  private var surfaceUsage = WGPUTextureUsage(0)
  private var surfaceAlpha = WGPUCompositeAlphaMode_Auto
  private var frameTexture: WGPUTexture?
  private var frameView: WGPUTextureView?
  private var frameStatus: SurfaceTextureStatus?
  // Textures made at the canvas size (no size in their descriptor), remade on a resize.
  private var canvasSized: [UInt16: WGPUTextureDescriptor] = [:]
  private var viewSources: [UInt16: UInt16] = [:]

  private var checker: CommandChecker
  private var buffers: [UInt16: WGPUBuffer] = [:]
  private var textures:
    [UInt16: (texture: WGPUTexture, view: WGPUTextureView, format: WGPUTextureFormat)] = [:]
  private var textureViews: [UInt16: WGPUTextureView] = [:]
  private var samplers: [UInt16: WGPUSampler] = [:]
  private var shaders: [UInt16: WGPUShaderModule] = [:]
  private var renderPipelines: [UInt16: WGPURenderPipeline] = [:]
  private var computePipelines: [UInt16: WGPUComputePipeline] = [:]
  private var bindGroupLayouts: [UInt16: WGPUBindGroupLayout] = [:]
  private var pipelineLayouts: [UInt16: WGPUPipelineLayout] = [:]
  private var bindGroups: [UInt16: WGPUBindGroup] = [:]
  private var bindGroupRecipes: [UInt16: (layout: UInt16, descriptor: BindGroupDescriptor)] = [:]
  // Auto-layout bind groups rebuilt for another pipeline, by (group id, pipeline id).
  private var reboundGroups: [UInt32: WGPUBindGroup] = [:]

  private var encoder: WGPUCommandEncoder?
  private var renderPass: WGPURenderPassEncoder?
  private var computePass: WGPUComputePassEncoder?
  private var currentPipeline: UInt16?
  private var pendingDepthOps: (load: UInt8, store: UInt8)?
  private var pendingDepthClear: Float?

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
    let made: Result<(WGPUSurface, WGPUTextureFormat, [WGPUCompositeAlphaMode], WGPUTextureUsage),
      PngineError> = gpuDevice.withDevice {
      let gpu = gpuDevice.context
      var message = [CChar](repeating: 0, count: 1024)
      let surface: WGPUSurface?
      switch source {
      case .metalLayer(let layer):
        surface = pg_surface_create(gpu, PG_SURFACE_METAL_LAYER, layer, 0, &message, message.count)
      case .xlibWindow(let display, let window):
        surface = pg_surface_create(
          gpu, PG_SURFACE_XLIB_WINDOW, display, window, &message, message.count)
      }
      guard let surface else {
        return .failure(
          PngineError(.surfaceFailed, text(message), location: .init(call: "surface")))
      }
      var formats = [WGPUTextureFormat](repeating: WGPUTextureFormat_Undefined, count: 64)
      var alphas = [WGPUCompositeAlphaMode](repeating: WGPUCompositeAlphaMode_Auto, count: 8)
      var formatCount = formats.count
      var alphaCount = alphas.count
      var usages = WGPUTextureUsage(0)
      let status = pg_surface_capabilities(
        gpu, surface, &formats, &formatCount, &alphas, &alphaCount, &usages)
      guard status == 0,
        let format = SurfaceFormatChoice.format(from: Array(formats[..<formatCount]))
      else {
        pg_surface_release(gpu, surface)
        return .failure(
          PngineError(
            .surfaceFailed, "the surface offers no format for this adapter",
            location: .init(call: "surface")))
      }
      return .success((surface, format, Array(alphas[..<alphaCount]), usages))
    }
    let (surface, format, alphas, usages) = try made.get()
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
    gpuDevice.withDevice { releaseAll() }
  }

  /// Runs `body` holding the device's lock (see ``PngineDevice``).
  private func locked<Result>(_ body: () throws(PngineError) -> Result) throws(PngineError)
    -> Result
  {
    try gpuDevice.withDevice(body)
  }

  private func releaseAll() {
    if let p = renderPass { wgpuRenderPassEncoderRelease(p) }
    if let p = computePass { wgpuComputePassEncoderRelease(p) }
    if let e = encoder { wgpuCommandEncoderRelease(e) }
    for g in reboundGroups.values { wgpuBindGroupRelease(g) }
    for g in bindGroups.values { wgpuBindGroupRelease(g) }
    for p in renderPipelines.values { wgpuRenderPipelineRelease(p) }
    for p in computePipelines.values { wgpuComputePipelineRelease(p) }
    for l in pipelineLayouts.values { wgpuPipelineLayoutRelease(l) }
    for l in bindGroupLayouts.values { wgpuBindGroupLayoutRelease(l) }
    for s in shaders.values { wgpuShaderModuleRelease(s) }
    for s in samplers.values { wgpuSamplerRelease(s) }
    for v in textureViews.values { wgpuTextureViewRelease(v) }
    for t in textures.values {
      wgpuTextureViewRelease(t.view)
      wgpuTextureRelease(t.texture)
    }
    for b in buffers.values { wgpuBufferRelease(b) }
    if let readback { wgpuBufferRelease(readback) }
    if let canvasView { wgpuTextureViewRelease(canvasView) }
    if let canvas { wgpuTextureRelease(canvas) }
    releaseFrameTexture()
    if let surface { pg_surface_release(gpu, surface) }
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

  private func executeLocked(
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
  private func checkLost(_ at: PngineError.Location, refresh: Bool = false) throws(PngineError) {
    guard (refresh ? pg_gpu_refresh_lost(gpu) : pg_gpu_lost_flag(gpu)) != 0 else { return }
    var message = [CChar](repeating: 0, count: 1024)
    if pg_gpu_is_lost(gpu, &message, message.count) != 0 {
      throw PngineError(.deviceLost, "the GPU device was lost: \(text(message))", location: at)
    }
  }

  /// Runs `body` inside an error scope and hands what it made to `keep` only when WebGPU
  /// accepted it; an object WebGPU rejected is released at once and never kept, so that no
  /// later command can reach it (the checker forgets its id too, see ``execute``). A GPU
  /// error becomes `code` naming `decoded`; no object at all is
  /// ``PngineError/Code/gpuValidation``.
  @discardableResult
  private func scoped<Handle>(
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

  /// The handle of `id` in `table`, or ``PngineError/Code/resourceNotFound``: wgpu-native
  /// aborts on a null handle where it wants one, so none is ever passed.
  private func handle<Handle>(
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

  private func bytes(_ blob: Blob?) -> [UInt8] {
    if case .bytes(let b)? = blob { return b }
    return []
  }

  private func encoderForPass(_ decoded: DecodedCommand, call: String) throws(PngineError)
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
  private func abandonFrame() {
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
    currentPipeline = nil
    checker.abandonPass()
  }

  private func apply(
    _ decoded: DecodedCommand, blob: Blob?, call: String, inputs: FrameInputs
  ) throws(PngineError) {
    switch decoded.command {
    case .createBuffer(let id, let size, let usage):
      guard buffers[id] == nil else { return }
      var d = pg_buffer_descriptor_init()
      // WebGPU wants sizes in multiples of 4 for mapped or written buffers.
      d.size = (UInt64(size) + 3) / 4 * 4
      d.usage = usage == 0 ? WGPUBufferUsage_CopyDst : WGPUBufferUsage(usage)
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { buffers[id] = $0 },
        release: { wgpuBufferRelease($0) },
        make: {
          wgpuDeviceCreateBuffer(device, &d)
        })
    case .createTexture(let id, _):
      guard textures[id] == nil else { return }
      let t = try TextureDescriptor(decoding: bytes(blob))
      var d = pg_texture_descriptor_init()
      d.size = WGPUExtent3D(
        width: t.width ?? width, height: t.height ?? height,
        depthOrArrayLayers: t.depthOrArrayLayers)
      d.mipLevelCount = t.mipLevelCount
      d.sampleCount = t.sampleCount
      d.dimension =
        [WGPUTextureDimension_1D, WGPUTextureDimension_2D, WGPUTextureDimension_3D][
          Int(t.dimension)]
      d.format =
        try t.format.flatMap(TextureFormatCode.name).map(WGPUNames.textureFormat) ?? canvasFormat
      d.usage = WGPUTextureUsage(t.usage)
      let format = d.format
      let texture = try scoped(
        decoded, call: call, code: .gpuValidation, release: { wgpuTextureRelease($0) },
        make: {
          wgpuDeviceCreateTexture(device, &d)
        })
      guard let view = wgpuTextureCreateView(texture, nil) else {
        wgpuTextureRelease(texture)
        throw PngineError(
          .gpuValidation, "\(decoded.command): no view of the texture",
          location: decoded.location(call: call))
      }
      textures[id] = (texture, view, format)
      if t.width == nil || t.height == nil { canvasSized[id] = d }
    case .createSampler(let id, _):
      guard samplers[id] == nil else { return }
      let s = try SamplerDescriptor(decoding: bytes(blob))
      let address = [
        WGPUAddressMode_ClampToEdge, WGPUAddressMode_Repeat, WGPUAddressMode_MirrorRepeat,
      ]
      var d = pg_sampler_descriptor_init()
      d.addressModeU = address[min(Int(s.addressModes[0]), 2)]
      d.addressModeV = address[min(Int(s.addressModes[1]), 2)]
      d.addressModeW = address[min(Int(s.addressModes[2]), 2)]
      d.magFilter = s.magFilter == 1 ? WGPUFilterMode_Linear : WGPUFilterMode_Nearest
      d.minFilter = s.minFilter == 1 ? WGPUFilterMode_Linear : WGPUFilterMode_Nearest
      d.mipmapFilter =
        s.mipmapFilter == 1 ? WGPUMipmapFilterMode_Linear : WGPUMipmapFilterMode_Nearest
      d.lodMinClamp = s.lodMinClamp
      d.lodMaxClamp = s.lodMaxClamp
      d.compare = s.compare.map { WGPUNames.compare(code: $0) } ?? WGPUCompareFunction_Undefined
      d.maxAnisotropy = s.maxAnisotropy
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { samplers[id] = $0 },
        release: { wgpuSamplerRelease($0) },
        make: {
          wgpuDeviceCreateSampler(device, &d)
        })
    case .createShader(let id, _):
      guard shaders[id] == nil else { return }
      // Checked already (CommandChecker): this is the text as it may be compiled.
      let code: [UInt8]
      switch ShaderSource.prepare(bytes(blob), limits: checker.limits) {
      case .success(let prepared): code = prepared
      case .failure(let refusal):
        throw PngineError(
          .shaderCompile, "\(decoded.command): refused before compiling: \(refusal)",
          location: decoded.location(call: call))
      }
      try scoped(
        decoded, call: call, code: .shaderCompile, keep: { shaders[id] = $0 },
        release: { wgpuShaderModuleRelease($0) },
        make: {
          code.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { c in
              pg_gpu_create_wgsl(gpu, c.baseAddress, c.count)
            }
          }
        })
    case .createRenderPipeline(let id, _):
      guard renderPipelines[id] == nil else { return }
      let d = try RenderPipelineDescriptor(decoding: bytes(blob))
      try scoped(
        decoded, call: call, code: .pipelineCreate, keep: { renderPipelines[id] = $0 },
        release: { wgpuRenderPipelineRelease($0) },
        make: {
          () throws(PngineError) -> WGPURenderPipeline? in
          let arena = Arena()
          var descriptor = try renderPipelineDescriptor(d, arena: arena, decoded, call: call)
          return withExtendedLifetime(arena) {
            wgpuDeviceCreateRenderPipeline(device, &descriptor)
          }
        })
    case .createComputePipeline(let id, _):
      guard computePipelines[id] == nil else { return }
      let c = try ComputePipelineDescriptor(decoding: bytes(blob))
      let layout = try c.layout.map { (l) throws(PngineError) in
        try handle(pipelineLayouts, l, .pipelineLayout, decoded, call: call)
      }
      let module = try handle(shaders, c.shader, .shader, decoded, call: call)
      try scoped(
        decoded, call: call, code: .pipelineCreate, keep: { computePipelines[id] = $0 },
        release: { wgpuComputePipelineRelease($0) },
        make: {
          let arena = Arena()
          var d = pg_compute_pipeline_descriptor_init()
          d.layout = layout
          d.compute.module = module
          d.compute.entryPoint = arena.string(c.entryPoint)
          return withExtendedLifetime(arena) { wgpuDeviceCreateComputePipeline(device, &d) }
        })
    case .createBindGroup(let id, let layoutId, _):
      guard bindGroups[id] == nil else { return }
      let d = try BindGroupDescriptor(decoding: bytes(blob))
      let layout = try bindGroupLayout(layoutId, group: d.group, decoded, call: call)
      defer { layout.release() }
      let entries = try bindGroupEntries(d, decoded, call: call)
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { bindGroups[id] = $0 },
        release: { wgpuBindGroupRelease($0) },
        make: {
          makeBindGroup(entries, layout: layout.handle)
        })
      bindGroupRecipes[id] = (layoutId, d)
    case .createTextureView(let id, let texture, _):
      guard textureViews[id] == nil else { return }
      let t = try handle(textures, texture, .texture, decoded, call: call)
      // Upstream's view descriptor (TLV 0x09) is not decoded yet: a default view.
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { textureViews[id] = $0 },
        release: { wgpuTextureViewRelease($0) },
        make: { wgpuTextureCreateView(t.texture, nil) })
      viewSources[id] = texture
    case .createBindGroupLayout(let id, _):
      guard bindGroupLayouts[id] == nil else { return }
      let d = try BindGroupLayoutDescriptor(decoding: bytes(blob))
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { bindGroupLayouts[id] = $0 },
        release: { wgpuBindGroupLayoutRelease($0) },
        make: {
          () throws(PngineError) -> WGPUBindGroupLayout? in
          let arena = Arena()
          var layout = pg_bind_group_layout_descriptor_init()
          var entries: [WGPUBindGroupLayoutEntry] = []
          for e in d.entries { entries.append(try layoutEntry(e)) }
          layout.entryCount = entries.count
          layout.entries = UnsafePointer(arena.array(entries))
          return withExtendedLifetime(arena) { wgpuDeviceCreateBindGroupLayout(device, &layout) }
        })
    case .createPipelineLayout(let id, _):
      guard pipelineLayouts[id] == nil else { return }
      let d = try PipelineLayoutDescriptor(decoding: bytes(blob))
      var layouts: [WGPUBindGroupLayout?] = []
      for l in d.bindGroupLayouts {
        layouts.append(try handle(bindGroupLayouts, l, .bindGroupLayout, decoded, call: call))
      }
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { pipelineLayouts[id] = $0 },
        release: { wgpuPipelineLayoutRelease($0) },
        make: {
          let arena = Arena()
          var layout = pg_pipeline_layout_descriptor_init()
          layout.bindGroupLayoutCount = layouts.count
          layout.bindGroupLayouts = UnsafePointer(arena.array(layouts))
          return withExtendedLifetime(arena) { wgpuDeviceCreatePipelineLayout(device, &layout) }
        })
    case .createQuerySet, .createImageBitmap, .createRenderBundle:
      throw PngineError(
        .invalidArgument, "\(decoded.command): not supported by the WebGPU backend yet",
        location: decoded.location(call: call))
    case .beginRenderPass(let colors, let depth, let resolve):
      let enc = try encoderForPass(decoded, call: call)
      let arena = Arena()
      var attachments: [WGPURenderPassColorAttachment] = []
      for c in colors where c.texture != CommandChecker.none {
        var a = pg_render_pass_color_attachment_init()
        a.view =
          c.texture == CommandChecker.canvas
          ? try canvasTarget(decoded, call: call).view
          : try handle(textures, c.texture, .texture, decoded, call: call).view
        a.loadOp = c.load == 1 ? WGPULoadOp_Clear : WGPULoadOp_Load
        a.storeOp = c.store == 0 ? WGPUStoreOp_Store : WGPUStoreOp_Discard
        switch c.clear {
        case .unorm8(let r, let g, let b, let al)?:
          a.clearValue = WGPUColor(
            r: Double(r) / 255, g: Double(g) / 255, b: Double(b) / 255, a: Double(al) / 255)
        case .float(let r, let g, let b, let al)?:
          a.clearValue = WGPUColor(r: Double(r), g: Double(g), b: Double(b), a: Double(al))
        case nil: a.clearValue = WGPUColor(r: 0, g: 0, b: 0, a: 0)
        }
        if let r = resolve, r != CommandChecker.none {
          a.resolveTarget =
            r == CommandChecker.canvas
            ? try canvasTarget(decoded, call: call).view
            : try handle(textures, r, .texture, decoded, call: call).view
        }
        attachments.append(a)
      }
      var pass = pg_render_pass_descriptor_init()
      pass.colorAttachmentCount = attachments.count
      pass.colorAttachments = UnsafePointer(arena.array(attachments))
      if depth != CommandChecker.none {
        let t = try handle(textures, depth, .texture, decoded, call: call)
        var ds = pg_render_pass_depth_stencil_attachment_init()
        ds.view = t.view
        ds.depthLoadOp = (pendingDepthOps?.load ?? 1) == 1 ? WGPULoadOp_Clear : WGPULoadOp_Load
        ds.depthStoreOp =
          (pendingDepthOps?.store ?? 0) == 0 ? WGPUStoreOp_Store : WGPUStoreOp_Discard
        ds.depthClearValue = pendingDepthClear ?? 1
        if t.format == WGPUTextureFormat_Depth24PlusStencil8
          || t.format == WGPUTextureFormat_Depth32FloatStencil8
        {
          ds.stencilLoadOp = WGPULoadOp_Clear
          ds.stencilStoreOp = WGPUStoreOp_Store
        }
        pass.depthStencilAttachment = UnsafePointer(arena.put(ds))
        pendingDepthOps = nil
        pendingDepthClear = nil
      }
      renderPass = withExtendedLifetime(arena) { wgpuCommandEncoderBeginRenderPass(enc, &pass) }
      currentPipeline = nil
    case .beginComputePass:
      computePass = wgpuCommandEncoderBeginComputePass(try encoderForPass(decoded, call: call), nil)
      currentPipeline = nil
    case .setPipeline(let id):
      if let p = renderPass {
        wgpuRenderPassEncoderSetPipeline(
          p, try handle(renderPipelines, id, .pipeline, decoded, call: call))
      } else if let p = computePass {
        wgpuComputePassEncoderSetPipeline(
          p, try handle(computePipelines, id, .pipeline, decoded, call: call))
      }
      currentPipeline = id
    case .setBindGroup(let slot, let id):
      let group = try bindGroup(id, decoded: decoded, call: call)
      if let p = renderPass {
        wgpuRenderPassEncoderSetBindGroup(p, UInt32(slot), group, 0, nil)
      } else if let p = computePass {
        wgpuComputePassEncoderSetBindGroup(p, UInt32(slot), group, 0, nil)
      }
    case .setVertexBuffer(let slot, let id):
      if let p = renderPass {
        let buffer = try handle(buffers, id, .buffer, decoded, call: call)
        wgpuRenderPassEncoderSetVertexBuffer(p, UInt32(slot), buffer, 0, UInt64.max)
      }
    case .setIndexBuffer(let id, let format):
      if let p = renderPass {
        wgpuRenderPassEncoderSetIndexBuffer(
          p, try handle(buffers, id, .buffer, decoded, call: call),
          format == 1 ? WGPUIndexFormat_Uint32 : WGPUIndexFormat_Uint16, 0,
          UInt64.max)
      }
    case .draw(let v, let i, let fv, let fi):
      if let p = renderPass { wgpuRenderPassEncoderDraw(p, v, i, fv, fi) }
    case .drawIndexed(let c, let i, let fi, let bv, let fin):
      if let p = renderPass { wgpuRenderPassEncoderDrawIndexed(p, c, i, fi, bv, fin) }
    case .drawIndirect(let b, let o):
      if let p = renderPass {
        wgpuRenderPassEncoderDrawIndirect(
          p, try handle(buffers, b, .buffer, decoded, call: call), UInt64(o))
      }
    case .drawIndexedIndirect(let b, let o):
      if let p = renderPass {
        wgpuRenderPassEncoderDrawIndexedIndirect(
          p, try handle(buffers, b, .buffer, decoded, call: call), UInt64(o))
      }
    case .dispatch(let x, let y, let z):
      if let p = computePass { wgpuComputePassEncoderDispatchWorkgroups(p, x, y, z) }
    case .dispatchIndirect(let b, let o):
      if let p = computePass {
        wgpuComputePassEncoderDispatchWorkgroupsIndirect(
          p, try handle(buffers, b, .buffer, decoded, call: call), UInt64(o))
      }
    case .setViewport(let x, let y, let w, let h, let minD, let maxD):
      if let p = renderPass {
        wgpuRenderPassEncoderSetViewport(p, Float(x), Float(y), Float(w), Float(h), minD, maxD)
      }
    case .setScissorRect(let x, let y, let w, let h):
      if let p = renderPass { wgpuRenderPassEncoderSetScissorRect(p, x, y, w, h) }
    case .setStencilReference(let v):
      if let p = renderPass { wgpuRenderPassEncoderSetStencilReference(p, v) }
    case .setBlendConstant(let r, let g, let b, let a):
      var color = WGPUColor(r: Double(r), g: Double(g), b: Double(b), a: Double(a))
      if let p = renderPass { wgpuRenderPassEncoderSetBlendConstant(p, &color) }
    case .setPassDepthStencilOps(let dl, let ds, _, _): pendingDepthOps = (dl, ds)
    case .setPassClearValues(let depth, _): pendingDepthClear = depth
    case .endPass:
      if let p = renderPass {
        wgpuRenderPassEncoderEnd(p)
        wgpuRenderPassEncoderRelease(p)
        renderPass = nil
      } else if let p = computePass {
        wgpuComputePassEncoderEnd(p)
        wgpuComputePassEncoderRelease(p)
        computePass = nil
      }
      currentPipeline = nil
    case .writeBuffer(let id, let offset, _):
      let data = bytes(blob)
      guard !data.isEmpty else { return }
      let buffer = try handle(buffers, id, .buffer, decoded, call: call)
      // WebGPU writes whole 4-byte words; the tail is padded with zeros.
      let padded =
        data.count % 4 == 0 ? data : data + [UInt8](repeating: 0, count: 4 - data.count % 4)
      padded.withUnsafeBytes {
        wgpuQueueWriteBuffer(queue, buffer, UInt64(offset), $0.baseAddress, $0.count)
      }
    case .writeTimeUniform(let id, let offset, let size):
      let buffer = try handle(buffers, id, .buffer, decoded, call: call)
      let data = inputs.timeUniformBytes(size: Int(size))
      data.withUnsafeBytes {
        wgpuQueueWriteBuffer(queue, buffer, UInt64(offset), $0.baseAddress, $0.count)
      }
    case .writePointerUniform(let id, let offset, let size):
      // The frame's pointer: upstream's 12 floats (all zero at rest, headless).
      let buffer = try handle(buffers, id, .buffer, decoded, call: call)
      let data = inputs.pointer.uniformBytes(size: Int(size))
      data.withUnsafeBytes {
        wgpuQueueWriteBuffer(queue, buffer, UInt64(offset), $0.baseAddress, $0.count)
      }
    case .copyBufferToBuffer(let s, let so, let d, let dof, let size):
      let source = try handle(buffers, s, .buffer, decoded, call: call)
      let destination = try handle(buffers, d, .buffer, decoded, call: call)
      wgpuCommandEncoderCopyBufferToBuffer(
        try encoderForPass(decoded, call: call), source, UInt64(so), destination, UInt64(dof),
        UInt64(size))
    case .copyTextureToTexture(let s, let d, let w, let h):
      var src = pg_texel_copy_texture_info_init()
      src.texture =
        s == CommandChecker.canvas
        ? try canvasTarget(decoded, call: call).texture
        : try handle(textures, s, .texture, decoded, call: call).texture
      var dst = pg_texel_copy_texture_info_init()
      dst.texture =
        d == CommandChecker.canvas
        ? try canvasTarget(decoded, call: call).texture
        : try handle(textures, d, .texture, decoded, call: call).texture
      var extent = WGPUExtent3D(
        width: w == 0 ? width : UInt32(w), height: h == 0 ? height : UInt32(h),
        depthOrArrayLayers: 1)
      wgpuCommandEncoderCopyTextureToTexture(
        try encoderForPass(decoded, call: call), &src, &dst, &extent)
    case .submit:
      try submit(decoded, call: call)
    case .end:
      break
    default:
      throw PngineError(
        .invalidArgument, "\(decoded.command): not supported by the WebGPU backend yet",
        location: decoded.location(call: call))
    }
  }

  private func submit(_ decoded: DecodedCommand, call: String) throws(PngineError) {
    guard let enc = encoder else { return }
    encoder = nil
    let commands = wgpuCommandEncoderFinish(enc, nil)
    wgpuCommandEncoderRelease(enc)
    // The frame's scope holds what was wrong with its passes (wgpu reports them when the
    // encoder finishes). A rejected command buffer is never submitted: wgpu-native treats
    // submitting one as fatal and aborts the process.
    var message = [CChar](repeating: 0, count: 8192)
    if pg_gpu_pop_scope(gpu, &message, message.count) != 0 {
      if let commands { wgpuCommandBufferRelease(commands) }
      try checkLost(decoded.location(call: call))
      throw PngineError(
        .gpuValidation, "the frame's passes were rejected, not submitted: \(text(message))",
        location: decoded.location(call: call))
    }
    // wgpu-native aborts on a submit it rejects, a lost device's included: asked just before.
    guard let commands else {
      throw PngineError(
        .gpuValidation, "the frame's encoder gave no command buffer",
        location: decoded.location(call: call))
    }
    do {
      try checkLost(decoded.location(call: call), refresh: true)
    } catch {
      wgpuCommandBufferRelease(commands)
      throw error
    }
    pg_gpu_push_scope(gpu)
    var list: [WGPUCommandBuffer?] = [commands]
    wgpuQueueSubmit(queue, 1, &list)
    wgpuCommandBufferRelease(commands)
    if pg_gpu_pop_scope(gpu, &message, message.count) != 0 {
      try checkLost(decoded.location(call: call))
      throw PngineError(
        .gpuValidation, "the frame was rejected at submit: \(text(message))",
        location: decoded.location(call: call))
    }
  }

  /// A bind group layout to make a group with; one taken from a pipeline is a new reference,
  /// released after use (``release()``).
  private struct LayoutRef {
    var handle: WGPUBindGroupLayout
    var owned: Bool
    func release() { if owned { wgpuBindGroupLayoutRelease(handle) } }
  }

  /// A bind group's layout: an explicit layout (the id carries ``BindGroupDescriptor/layoutTag``)
  /// or group `group` of a pipeline's automatic one; nil when there is none (a null layout
  /// aborts wgpu-native).
  private func bindGroupLayout(_ layoutId: UInt16, group: UInt32) -> LayoutRef? {
    if layoutId & BindGroupDescriptor.layoutTag != 0 {
      return bindGroupLayouts[layoutId & ~BindGroupDescriptor.layoutTag].map {
        LayoutRef(handle: $0, owned: false)
      }
    }
    return pipelineLayout(of: layoutId, group: group)
  }

  private func bindGroupLayout(
    _ layoutId: UInt16, group: UInt32, _ decoded: DecodedCommand, call: String
  ) throws(PngineError) -> LayoutRef {
    guard group < UInt32(checker.limits.maxBindGroups) else {
      throw PngineError(
        .invalidDescriptor,
        "\(decoded.command): group \(group) exceeds the \(checker.limits.maxBindGroups) bind groups",
        location: decoded.location(call: call))
    }
    guard let layout = bindGroupLayout(layoutId, group: group) else {
      throw PngineError(
        .resourceNotFound, "\(decoded.command): no layout for group \(group) of \(layoutId)",
        location: decoded.location(call: call))
    }
    return layout
  }

  private func pipelineLayout(of pipeline: UInt16, group: UInt32) -> LayoutRef? {
    let made: WGPUBindGroupLayout?
    if let p = renderPipelines[pipeline] {
      made = wgpuRenderPipelineGetBindGroupLayout(p, group)
    } else if let p = computePipelines[pipeline] {
      made = wgpuComputePipelineGetBindGroupLayout(p, group)
    } else {
      made = nil
    }
    return made.map { LayoutRef(handle: $0, owned: true) }
  }

  /// A group's entries with their GPU objects, or nil when one has none.
  private func bindGroupEntries(_ d: BindGroupDescriptor) -> [WGPUBindGroupEntry]? {
    var entries: [WGPUBindGroupEntry] = []
    for e in d.entries {
      var entry = pg_bind_group_entry_init()
      entry.binding = e.binding
      switch e.kind {
      case .buffer:
        guard let buffer = buffers[e.resource] else { return nil }
        entry.buffer = buffer
        entry.offset = UInt64(e.offset)
        entry.size = e.size == 0 ? UInt64.max : UInt64(e.size)
      case .texture:
        guard let view = textures[e.resource]?.view else { return nil }
        entry.textureView = view
      case .sampler:
        guard let sampler = samplers[e.resource] else { return nil }
        entry.sampler = sampler
      case .textureView:
        guard let view = textureViews[e.resource] else { return nil }
        entry.textureView = view
      }
      entries.append(entry)
    }
    return entries
  }

  private func bindGroupEntries(_ d: BindGroupDescriptor, _ decoded: DecodedCommand, call: String)
    throws(PngineError) -> [WGPUBindGroupEntry]
  {
    guard let entries = bindGroupEntries(d) else {
      throw PngineError(
        .resourceNotFound, "\(decoded.command): an entry names a resource with no GPU object",
        location: decoded.location(call: call))
    }
    return entries
  }

  private func makeBindGroup(_ entries: [WGPUBindGroupEntry], layout: WGPUBindGroupLayout)
    -> WGPUBindGroup?
  {
    let arena = Arena()
    var descriptor = pg_bind_group_descriptor_init()
    descriptor.layout = layout
    descriptor.entryCount = entries.count
    descriptor.entries = UnsafePointer(arena.array(entries))
    return withExtendedLifetime(arena) { wgpuDeviceCreateBindGroup(device, &descriptor) }
  }

  /// The group to bind: an auto-layout group made for another pipeline is rebuilt (once) for
  /// the current one, as upstream's host does.
  private func bindGroup(_ id: UInt16, decoded: DecodedCommand, call: String) throws(PngineError)
    -> WGPUBindGroup
  {
    guard let recipe = bindGroupRecipes[id], let current = currentPipeline,
      recipe.layout & BindGroupDescriptor.layoutTag == 0, recipe.layout != current
    else { return try handle(bindGroups, id, .bindGroup, decoded, call: call) }
    let key = UInt32(id) << 16 | UInt32(current)
    if let group = reboundGroups[key] { return group }
    let layout = try bindGroupLayout(current, group: recipe.descriptor.group, decoded, call: call)
    defer { layout.release() }
    let entries = try bindGroupEntries(recipe.descriptor, decoded, call: call)
    return try scoped(
      decoded, call: call, code: .gpuValidation, keep: { reboundGroups[key] = $0 },
      release: { wgpuBindGroupRelease($0) },
      make: { makeBindGroup(entries, layout: layout.handle) })
  }

  private func layoutEntry(_ e: BindGroupLayoutDescriptor.Entry) throws(PngineError)
    -> WGPUBindGroupLayoutEntry
  {
    var entry = pg_bind_group_layout_entry_init()
    entry.binding = e.binding
    entry.visibility = WGPUShaderStage(e.visibility)
    if let b = e.buffer {
      let types: [String: WGPUBufferBindingType] = [
        "uniform": WGPUBufferBindingType_Uniform, "storage": WGPUBufferBindingType_Storage,
        "read-only-storage": WGPUBufferBindingType_ReadOnlyStorage,
      ]
      entry.buffer.type = types[b.type ?? "uniform"] ?? WGPUBufferBindingType_Uniform
      entry.buffer.hasDynamicOffset = (b.hasDynamicOffset ?? false) ? 1 : 0
      entry.buffer.minBindingSize = b.minBindingSize ?? 0
    }
    if let s = e.sampler {
      let types: [String: WGPUSamplerBindingType] = [
        "filtering": WGPUSamplerBindingType_Filtering,
        "non-filtering": WGPUSamplerBindingType_NonFiltering,
        "comparison": WGPUSamplerBindingType_Comparison,
      ]
      entry.sampler.type = types[s.type ?? "filtering"] ?? WGPUSamplerBindingType_Filtering
    }
    if let t = e.texture {
      let types: [String: WGPUTextureSampleType] = [
        "float": WGPUTextureSampleType_Float,
        "unfilterable-float": WGPUTextureSampleType_UnfilterableFloat,
        "depth": WGPUTextureSampleType_Depth, "sint": WGPUTextureSampleType_Sint,
        "uint": WGPUTextureSampleType_Uint,
      ]
      entry.texture.sampleType = types[t.sampleType ?? "float"] ?? WGPUTextureSampleType_Float
      entry.texture.viewDimension = try WGPUNames.viewDimension(t.viewDimension)
      entry.texture.multisampled = (t.multisampled ?? false) ? 1 : 0
    }
    if let s = e.storageTexture {
      let access: [String: WGPUStorageTextureAccess] = [
        "write-only": WGPUStorageTextureAccess_WriteOnly,
        "read-only": WGPUStorageTextureAccess_ReadOnly,
        "read-write": WGPUStorageTextureAccess_ReadWrite,
      ]
      entry.storageTexture.access =
        access[s.access ?? "write-only"] ?? WGPUStorageTextureAccess_WriteOnly
      entry.storageTexture.format = try WGPUNames.textureFormat(s.format)
      entry.storageTexture.viewDimension = try WGPUNames.viewDimension(s.viewDimension)
    }
    return entry
  }

  private func renderPipelineDescriptor(
    _ d: RenderPipelineDescriptor, arena: Arena, _ decoded: DecodedCommand, call: String
  ) throws(PngineError) -> WGPURenderPipelineDescriptor {
    var p = pg_render_pipeline_descriptor_init()
    if let l = d.layoutId {
      p.layout = try handle(pipelineLayouts, l, .pipelineLayout, decoded, call: call)
    }
    let vertexShader = d.vertex.shader ?? 0
    p.vertex.module = try handle(shaders, vertexShader, .shader, decoded, call: call)
    p.vertex.entryPoint = arena.string(d.vertex.entryPoint)
    var layouts: [WGPUVertexBufferLayout] = []
    for b in d.vertex.buffers ?? [] {
      var layout = pg_vertex_buffer_layout_init()
      layout.arrayStride = b.arrayStride
      layout.stepMode =
        b.stepMode == "instance" ? WGPUVertexStepMode_Instance : WGPUVertexStepMode_Vertex
      var attributes: [WGPUVertexAttribute] = []
      for a in b.attributes {
        var attribute = pg_vertex_attribute_init()
        attribute.shaderLocation = a.shaderLocation
        attribute.offset = a.offset
        attribute.format = try WGPUNames.vertexFormat(a.format)
        attributes.append(attribute)
      }
      layout.attributeCount = attributes.count
      layout.attributes = UnsafePointer(arena.array(attributes))
      layouts.append(layout)
    }
    p.vertex.bufferCount = layouts.count
    p.vertex.buffers = UnsafePointer(arena.array(layouts))
    if let f = d.fragment {
      var fragment = pg_fragment_state_init()
      fragment.module = try handle(shaders, f.shader ?? vertexShader, .shader, decoded, call: call)
      fragment.entryPoint = arena.string(f.entryPoint)
      var targets: [WGPUColorTargetState] = []
      let specified =
        f.targets
        ?? [
          RenderPipelineDescriptor.Target(
            format: f.targetFormat == "preferredCanvasFormat" ? nil : f.targetFormat)
        ]
      for t in specified {
        var target = pg_color_target_state_init()
        target.format = try t.format.map(WGPUNames.textureFormat) ?? canvasFormat
        if let m = t.writeMask { target.writeMask = WGPUColorWriteMask(m) }
        if let b = t.blend {
          var blend = pg_blend_state_init()
          blend.color.operation = try WGPUNames.blendOperation(b.color.operation)
          blend.color.srcFactor = try WGPUNames.blendFactor(b.color.srcFactor, default: "one")
          blend.color.dstFactor = try WGPUNames.blendFactor(b.color.dstFactor, default: "zero")
          blend.alpha.operation = try WGPUNames.blendOperation(b.alpha.operation)
          blend.alpha.srcFactor = try WGPUNames.blendFactor(b.alpha.srcFactor, default: "one")
          blend.alpha.dstFactor = try WGPUNames.blendFactor(b.alpha.dstFactor, default: "zero")
          target.blend = UnsafePointer(arena.put(blend))
        }
        targets.append(target)
      }
      fragment.targetCount = targets.count
      fragment.targets = UnsafePointer(arena.array(targets))
      p.fragment = UnsafePointer(arena.put(fragment))
    }
    p.primitive.topology = try WGPUNames.topology(d.primitive?.topology)
    p.primitive.cullMode = try WGPUNames.cullMode(d.primitive?.cullMode)
    p.primitive.frontFace = try WGPUNames.frontFace(d.primitive?.frontFace)
    p.primitive.stripIndexFormat = try WGPUNames.indexFormat(d.primitive?.stripIndexFormat)
    if let ds = d.depthStencil {
      var state = pg_depth_stencil_state_init()
      state.format = try WGPUNames.textureFormat(ds.format)
      state.depthWriteEnabled =
        (ds.depthWriteEnabled ?? false) ? WGPUOptionalBool_True : WGPUOptionalBool_False
      state.depthCompare = try WGPUNames.compare(ds.depthCompare ?? "always")
      func face(_ f: RenderPipelineDescriptor.StencilFace?) throws(PngineError)
        -> WGPUStencilFaceState
      {
        var s = pg_stencil_face_state_init()
        s.compare = try WGPUNames.compare(f?.compare ?? "always")
        s.failOp = try WGPUNames.stencilOperation(f?.failOp)
        s.depthFailOp = try WGPUNames.stencilOperation(f?.depthFailOp)
        s.passOp = try WGPUNames.stencilOperation(f?.passOp)
        return s
      }
      state.stencilFront = try face(ds.stencilFront)
      state.stencilBack = try face(ds.stencilBack)
      state.stencilReadMask = ds.stencilReadMask ?? 0xFFFF_FFFF
      state.stencilWriteMask = ds.stencilWriteMask ?? 0xFFFF_FFFF
      state.depthBias = ds.depthBias ?? 0
      state.depthBiasSlopeScale = ds.depthBiasSlopeScale ?? 0
      state.depthBiasClamp = ds.depthBiasClamp ?? 0
      p.depthStencil = UnsafePointer(arena.put(state))
    }
    if let m = d.multisample {
      p.multisample.count = m.count ?? 1
      p.multisample.mask = m.mask ?? 0xFFFF_FFFF
      p.multisample.alphaToCoverageEnabled = (m.alphaToCoverageEnabled ?? false) ? 1 : 0
    }
    return p
  }

  // MARK: Presenting (a surface)

  /// The canvas texture and view for a command: the offscreen ones, or the surface's current
  /// texture, acquired now if the frame has none yet (a stream that draws to the canvas in
  /// `init`, or a caller that did not call ``acquireCanvas()``).
  private func canvasTarget(_ decoded: DecodedCommand, call: String) throws(PngineError)
    -> (texture: WGPUTexture?, view: WGPUTextureView?)
  {
    if surface == nil { return (canvas, canvasView) }
    if frameTexture == nil {
      let status = try acquireCanvas()
      guard status.hasTexture else {
        throw PngineError(
          .surfaceFailed,
          "\(decoded.command): the surface has no texture (\(status)); reconfigured",
          location: decoded.location(call: call))
      }
    }
    return (frameTexture, frameView)
  }

  /// Configures the surface at the current size, after asking whether it still can be: a
  /// rejected configuration is fatal in wgpu-native (a panic, not an error scope), so a
  /// surface whose window is gone (the adapter no longer supports it, or its format is no
  /// longer offered) is a ``PngineError/Code/surfaceFailed`` instead.
  private func configureSurface(_ at: PngineError.Location) throws(PngineError) {
    guard let surface else { return }
    var formats = [WGPUTextureFormat](repeating: WGPUTextureFormat_Undefined, count: 64)
    var alphas = [WGPUCompositeAlphaMode](repeating: WGPUCompositeAlphaMode_Auto, count: 8)
    var formatCount = formats.count
    var alphaCount = alphas.count
    var usages = WGPUTextureUsage(0)
    let status = pg_surface_capabilities(
      gpu, surface, &formats, &formatCount, &alphas, &alphaCount, &usages)
    guard status == 0, formats[..<formatCount].contains(canvasFormat),
      usages & surfaceUsage == surfaceUsage
    else {
      try checkLost(at)
      throw PngineError(
        .surfaceFailed,
        "the surface can no longer be configured (its window or layer is gone, or it no longer"
          + " offers \(SurfaceFormatChoice.name(of: canvasFormat)))", location: at)
    }
    pg_surface_configure(gpu, surface, canvasFormat, surfaceUsage, surfaceAlpha, width, height)
  }

  /// Throws ``PngineError/Code/invalidArgument`` for a canvas size outside 1…8192.
  private static func checkSize(_ width: UInt32, _ height: UInt32, at: PngineError.Location)
    throws(PngineError)
  {
    guard width > 0, height > 0, width <= 8192, height <= 8192 else {
      throw PngineError(
        .invalidArgument, "canvas size \(width)x\(height) is outside 1…8192", location: at)
    }
  }

  private func releaseFrameTexture() {
    if let v = frameView { wgpuTextureViewRelease(v) }
    if let t = frameTexture { wgpuTextureRelease(t) }
    frameView = nil
    frameTexture = nil
    frameStatus = nil
  }

  /// Takes the surface's current texture as the canvas for the coming commands (once per
  /// frame; again while one is held, it answers the held one's status). Offscreen: `optimal`,
  /// nothing to do.
  ///
  /// `optimal` and `suboptimal` come with the texture. `timeout`, `outdated` and `lost` come
  /// without one: the surface is reconfigured at the current size and the caller skips the
  /// frame (the next one tries again).
  /// - Throws: ``PngineError/Code/surfaceFailed`` for the `error` status (or an unknown one),
  ///   or when a surface without a texture can no longer be configured (its window is gone);
  ///   ``PngineError/Code/deviceLost`` when the device is gone.
  @discardableResult
  public func acquireCanvas() throws(PngineError) -> SurfaceTextureStatus {
    try locked { () throws(PngineError) in try acquireCanvasLocked() }
  }

  private func acquireCanvasLocked() throws(PngineError) -> SurfaceTextureStatus {
    let at = PngineError.Location(call: "acquireCanvas")
    try checkLost(at)
    guard let surface else { return .optimal }
    if let frameStatus { return frameStatus }
    var current = WGPUSurfaceTexture()
    wgpuSurfaceGetCurrentTexture(surface, &current)
    let status = SurfaceTextureStatus(rawStatus: current.status.rawValue)
    guard status.hasTexture, let texture = current.texture else {
      if let t = current.texture { wgpuTextureRelease(t) }
      if status.skipsFrame {
        do {
          try configureSurface(at)
        } catch {
          throw PngineError(
            error.code, "the surface answered \(status); \(error.message)", location: at)
        }
        return status
      }
      try checkLost(at)
      throw PngineError(
        .surfaceFailed, "the surface gave no texture: \(status)", location: at)
    }
    frameTexture = texture
    frameView = wgpuTextureCreateView(texture, nil)
    frameStatus = status
    return status
  }

  /// Shows the held surface texture (the frame's commands must have been submitted) and lets
  /// it go; a `suboptimal` surface is reconfigured after. Without a held texture, or
  /// offscreen, nothing happens.
  /// - Throws: ``PngineError/Code/surfaceFailed`` when wgpu refuses to present;
  ///   ``PngineError/Code/deviceLost`` when the device is gone.
  public func present() throws(PngineError) {
    try locked { () throws(PngineError) in try presentLocked() }
  }

  private func presentLocked() throws(PngineError) {
    guard let surface, frameTexture != nil else { return }
    let status = frameStatus
    let presented = wgpuSurfacePresent(surface)
    releaseFrameTexture()
    try checkLost(PngineError.Location(call: "present"))
    guard presented == WGPUStatus_Success else {
      try configureSurface(.init(call: "present"))
      throw PngineError(
        .surfaceFailed, "wgpuSurfacePresent failed (status \(presented.rawValue))",
        location: .init(call: "present"))
    }
    if status == .suboptimal { try configureSurface(.init(call: "present")) }
  }

  /// Lets the held surface texture go without presenting it (after a failed frame).
  public func discardCanvas() {
    gpuDevice.withDevice { releaseFrameTexture() }
  }

  /// A new canvas size for a surface (its window or layer was resized): reconfigures the
  /// surface, and remakes the textures that were made at the canvas size (a depth buffer)
  /// with the bind groups and views that use them, as upstream's host does on a resize.
  /// A held texture is dropped unpresented. The same size again does nothing.
  /// - Throws: ``PngineError/Code/invalidArgument`` offscreen (its size is fixed) or for a
  ///   size outside 1…8192; ``PngineError/Code/gpuValidation`` when a remade texture or bind
  ///   group is rejected.
  public func resize(width newWidth: UInt32, height newHeight: UInt32) throws(PngineError) {
    try locked { () throws(PngineError) in try resizeLocked(width: newWidth, height: newHeight) }
  }

  private func resizeLocked(width newWidth: UInt32, height newHeight: UInt32) throws(PngineError) {
    let at = PngineError.Location(call: "resize")
    guard surface != nil else {
      throw PngineError(.invalidArgument, "an offscreen canvas has a fixed size", location: at)
    }
    try Self.checkSize(newWidth, newHeight, at: at)
    try checkLost(at)
    guard newWidth != width || newHeight != height else { return }
    releaseFrameTexture()
    width = newWidth
    height = newHeight
    checker.canvasWidth = newWidth
    checker.canvasHeight = newHeight
    try configureSurface(at)
    try remakeCanvasSized(at)
  }

  private func remakeCanvasSized(_ at: PngineError.Location) throws(PngineError) {
    guard !canvasSized.isEmpty else { return }
    pg_gpu_push_scope(gpu)
    var remade = Set<UInt16>()
    for (id, descriptor) in canvasSized {
      guard let old = textures[id] else { continue }
      var d = descriptor
      d.size.width = width
      d.size.height = height
      guard let texture = wgpuDeviceCreateTexture(device, &d),
        let view = wgpuTextureCreateView(texture, nil)
      else { continue }
      wgpuTextureViewRelease(old.view)
      wgpuTextureRelease(old.texture)
      textures[id] = (texture, view, old.format)
      remade.insert(id)
    }
    var remadeViews = Set<UInt16>()
    for (viewId, textureId) in viewSources where remade.contains(textureId) {
      guard let t = textures[textureId], let view = wgpuTextureCreateView(t.texture, nil)
      else { continue }
      if let old = textureViews[viewId] { wgpuTextureViewRelease(old) }
      textureViews[viewId] = view
      remadeViews.insert(viewId)
    }
    for (id, recipe) in bindGroupRecipes {
      let uses = recipe.descriptor.entries.contains {
        ($0.kind == .texture && remade.contains($0.resource))
          || ($0.kind == .textureView && remadeViews.contains($0.resource))
      }
      guard uses, let layout = bindGroupLayout(recipe.layout, group: recipe.descriptor.group)
      else { continue }
      defer { layout.release() }
      guard let entries = bindGroupEntries(recipe.descriptor),
        let group = makeBindGroup(entries, layout: layout.handle)
      else { continue }
      if let old = bindGroups[id] { wgpuBindGroupRelease(old) }
      bindGroups[id] = group
    }
    if !remade.isEmpty {
      for g in reboundGroups.values { wgpuBindGroupRelease(g) }
      reboundGroups = [:]
    }
    var message = [CChar](repeating: 0, count: 4096)
    if pg_gpu_pop_scope(gpu, &message, message.count) != 0 {
      try checkLost(at)
      throw PngineError(
        .gpuValidation, "remaking the canvas-sized textures: \(text(message))", location: at)
    }
  }

  // MARK: Reading back

  /// Copies the canvas into memory: `width × height` RGBA8, rows top to bottom. Waits for the
  /// GPU.
  /// - Throws: ``PngineError/Code/invalidArgument`` on a surface (its frames are presented,
  ///   not read back).
  public func readCanvas() throws(PngineError) -> RGBAImage {
    try locked { () throws(PngineError) in try readCanvasLocked() }
  }

  private func readCanvasLocked() throws(PngineError) -> RGBAImage {
    try checkLost(PngineError.Location(call: "readCanvas"))
    guard let canvas, let readback else {
      throw PngineError(
        .invalidArgument, "the canvas is a surface: its frames are presented, not read back",
        location: .init(call: "readCanvas"))
    }
    let enc = wgpuDeviceCreateCommandEncoder(device, nil)
    var source = pg_texel_copy_texture_info_init()
    source.texture = canvas
    var destination = pg_texel_copy_buffer_info_init()
    destination.buffer = readback
    destination.layout.offset = 0
    destination.layout.bytesPerRow = UInt32(paddedRow)
    destination.layout.rowsPerImage = height
    var extent = WGPUExtent3D(width: width, height: height, depthOrArrayLayers: 1)
    wgpuCommandEncoderCopyTextureToBuffer(enc, &source, &destination, &extent)
    let commands = wgpuCommandEncoderFinish(enc, nil)
    wgpuCommandEncoderRelease(enc)
    guard let commands else {
      throw PngineError(
        .renderFailed, "no command buffer to read the canvas back",
        location: .init(call: "readCanvas"))
    }
    // wgpu-native aborts on a submit it rejects, a lost device's included: asked just before.
    do {
      try checkLost(PngineError.Location(call: "readCanvas"), refresh: true)
    } catch {
      wgpuCommandBufferRelease(commands)
      throw error
    }
    var list: [WGPUCommandBuffer?] = [commands]
    wgpuQueueSubmit(queue, 1, &list)
    wgpuCommandBufferRelease(commands)
    let row = Int(width) * 4
    var pixels = [UInt8](repeating: 0, count: row * Int(height))
    var message = [CChar](repeating: 0, count: 1024)
    let status = pixels.withUnsafeMutableBytes {
      pg_gpu_read_rows(
        gpu, readback, paddedRow, row, Int(height), $0.baseAddress, &message, message.count)
    }
    guard status == 0 else {
      try checkLost(PngineError.Location(call: "readCanvas"))
      throw PngineError(.renderFailed, text(message), location: .init(call: "readCanvas"))
    }
    return RGBAImage(width: Int(width), height: Int(height), pixels: pixels)
  }
}
