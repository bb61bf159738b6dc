import CPngineWGPU
import CWGPU
import PngineKit

// The canvas: the surface's texture per frame (acquire, present, resize) and the offscreen
// canvas read back.
extension WebGPUBackend {
  /// A surface on `source` made on `device`'s instance, with the format chosen from what it
  /// offers this adapter (``SurfaceFormatChoice/format(from:)``), the alpha modes and the
  /// texture usages it supports. Called holding the device.
  static func makeSurface(_ source: SurfaceSource, on device: PngineDevice) throws(PngineError)
    -> (WGPUSurface, WGPUTextureFormat, [WGPUCompositeAlphaMode], WGPUTextureUsage)
  {
    let gpu = device.context
    var message = [CChar](repeating: 0, count: 1024)
    let made: WGPUSurface?
    switch source {
    case .metalLayer(let layer):
      made = pg_surface_create(gpu, PG_SURFACE_METAL_LAYER, layer, 0, &message, message.count)
    case .xlibWindow(let display, let window):
      made = pg_surface_create(
        gpu, PG_SURFACE_XLIB_WINDOW, display, window, &message, message.count)
    }
    guard let surface = made else {
      throw PngineError(.surfaceFailed, text(message), location: .init(call: "surface"))
    }
    let offered = capabilities(gpu, surface)
    guard let offered, let format = SurfaceFormatChoice.format(from: offered.formats) else {
      pg_surface_release(gpu, surface)
      throw PngineError(
        .surfaceFailed, "the surface offers no format for this adapter",
        location: .init(call: "surface"))
    }
    return (surface, format, offered.alphas, offered.usages)
  }

  // MARK: Presenting (a surface)

  /// The canvas texture and view for a command: the offscreen ones, or the surface's current
  /// texture, acquired now if the frame has none yet (a stream that draws to the canvas in
  /// `init`, or a caller that did not call ``acquireCanvas()``).
  func canvasTarget(_ decoded: DecodedCommand, call: String) throws(PngineError)
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

  /// What `surface` offers this context's adapter: its formats (in its order of preference),
  /// alpha modes and texture usages; nil when wgpu cannot say (the window or layer is gone).
  static func capabilities(_ gpu: OpaquePointer, _ surface: WGPUSurface) -> (
    formats: [WGPUTextureFormat], alphas: [WGPUCompositeAlphaMode], usages: WGPUTextureUsage
  )? {
    var formats = [WGPUTextureFormat](repeating: WGPUTextureFormat_Undefined, count: 64)
    var alphas = [WGPUCompositeAlphaMode](repeating: WGPUCompositeAlphaMode_Auto, count: 8)
    var formatCount = formats.count
    var alphaCount = alphas.count
    var usages = WGPUTextureUsage(0)
    guard
      pg_surface_capabilities(gpu, surface, &formats, &formatCount, &alphas, &alphaCount, &usages)
        == 0
    else { return nil }
    return (Array(formats[..<formatCount]), Array(alphas[..<alphaCount]), usages)
  }

  /// Configures the surface at the current size, after asking whether it still can be: a
  /// rejected configuration is fatal in wgpu-native (a panic, not an error scope), so a
  /// surface whose window is gone (the adapter no longer supports it, or its format is no
  /// longer offered) is a ``PngineError/Code/surfaceFailed`` instead.
  func configureSurface(_ at: PngineError.Location) throws(PngineError) {
    guard let surface else { return }
    guard let offered = Self.capabilities(gpu, surface), offered.formats.contains(canvasFormat),
      offered.usages & surfaceUsage == surfaceUsage
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
  static func checkSize(_ width: UInt32, _ height: UInt32, at: PngineError.Location)
    throws(PngineError)
  {
    guard width > 0, height > 0, width <= 8192, height <= 8192 else {
      throw PngineError(
        .invalidArgument, "canvas size \(width)x\(height) is outside 1…8192", location: at)
    }
  }

  func releaseFrameTexture() {
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

  func acquireCanvasLocked() throws(PngineError) -> SurfaceTextureStatus {
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

  func presentLocked() throws(PngineError) {
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

  func resizeLocked(width newWidth: UInt32, height newHeight: UInt32) throws(PngineError) {
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

  func remakeCanvasSized(_ at: PngineError.Location) throws(PngineError) {
    guard !canvasSized.isEmpty else { return }
    pg_gpu_push_scope(gpu)
    var remade = Set<UInt16>()
    for (id, descriptor) in canvasSized {
      guard let old = tables.textures[id] else { continue }
      var d = descriptor
      d.size.width = width
      d.size.height = height
      guard let texture = wgpuDeviceCreateTexture(device, &d),
        let view = wgpuTextureCreateView(texture, nil)
      else { continue }
      wgpuTextureViewRelease(old.view)
      wgpuTextureRelease(old.texture)
      tables.textures[id] = (texture, view, old.format)
      remade.insert(id)
    }
    var remadeViews = Set<UInt16>()
    for (viewId, textureId) in viewSources where remade.contains(textureId) {
      guard let t = tables.textures[textureId], let view = wgpuTextureCreateView(t.texture, nil)
      else { continue }
      if let old = tables.textureViews[viewId] { wgpuTextureViewRelease(old) }
      tables.textureViews[viewId] = view
      remadeViews.insert(viewId)
    }
    for (id, recipe) in tables.bindGroupRecipes {
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
      if let old = tables.bindGroups[id] { wgpuBindGroupRelease(old) }
      tables.bindGroups[id] = group
    }
    if !remade.isEmpty {
      for g in tables.reboundGroups.values { wgpuBindGroupRelease(g) }
      tables.reboundGroups = [:]
    }
    var message = [CChar](repeating: 0, count: 4096)
    if pg_gpu_pop_scope(gpu, &message, message.count) != 0 {
      try checkLost(at)
      throw PngineError(
        .gpuValidation, "remaking the canvas-sized tables.textures: \(text(message))", location: at)
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

  func readCanvasLocked() throws(PngineError) -> RGBAImage {
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
    // The copy's submit and the map wait, on the device's thread within the time limit; the
    // rows are read into memory that thread owns, so an overrun leaves nothing of ours to it.
    let work = SubmitWork(gpu: gpu, queue: queue, commands: commands)
    let (row, rows, padded) = (Int(width) * 4, Int(height), paddedRow)
    let target = ReadTarget(buffer: readback)
    let read = gpuDevice.runBounded(timeout: checker.limits.submitTimeout) {
      () -> Result<[UInt8], ReadFailure> in
      var list: [WGPUCommandBuffer?] = [work.commands]
      wgpuQueueSubmit(work.queue, 1, &list)
      wgpuCommandBufferRelease(work.commands)
      var pixels = [UInt8](repeating: 0, count: row * rows)
      var message = [CChar](repeating: 0, count: 1024)
      let status = pixels.withUnsafeMutableBytes {
        pg_gpu_read_rows(
          work.gpu, target.buffer, padded, row, rows, $0.baseAddress, &message, message.count)
      }
      return status == 0 ? .success(pixels) : .failure(ReadFailure(message: text(message)))
    }
    guard let read else { throw timedOut(.init(call: "readCanvas")) }
    let pixels: [UInt8]
    switch read {
    case .success(let read): pixels = read
    case .failure(let failure):
      try checkLost(PngineError.Location(call: "readCanvas"))
      throw PngineError(.renderFailed, failure.message, location: .init(call: "readCanvas"))
    }
    return RGBAImage(width: Int(width), height: Int(height), pixels: pixels)
  }
}

/// The read-back buffer, handed to the device's thread for one read.
struct ReadTarget: @unchecked Sendable {
  let buffer: WGPUBuffer
}

/// Why the canvas could not be read back (wgpu's message).
struct ReadFailure: Error {
  let message: String
}
