import CPngineWGPU
import CWGPU
import PngineKit

// The command interpreter: each checked command carried out on wgpu, and the frame's submit.
extension WebGPUBackend {
  func apply(
    _ decoded: DecodedCommand, blob: Blob?, call: String, inputs: FrameInputs
  ) throws(PngineError) {
    switch decoded.command {
    case .createBuffer(let id, let size, let usage):
      guard tables.buffers[id] == nil else { return }
      var d = pg_buffer_descriptor_init()
      // WebGPU wants sizes in multiples of 4 for mapped or written buffers.
      d.size = (UInt64(size) + 3) / 4 * 4
      d.usage = usage == 0 ? WGPUBufferUsage_CopyDst : WGPUBufferUsage(usage)
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { tables.buffers[id] = $0 },
        release: { wgpuBufferRelease($0) },
        make: {
          wgpuDeviceCreateBuffer(device, &d)
        })
    case .createTexture(let id, _):
      guard tables.textures[id] == nil else { return }
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
      tables.textures[id] = (texture, view, format)
      if t.width == nil || t.height == nil { canvasSized[id] = d }
    case .createSampler(let id, _):
      guard tables.samplers[id] == nil else { return }
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
        decoded, call: call, code: .gpuValidation, keep: { tables.samplers[id] = $0 },
        release: { wgpuSamplerRelease($0) },
        make: {
          wgpuDeviceCreateSampler(device, &d)
        })
    case .createShader(let id, _):
      guard tables.shaders[id] == nil else { return }
      // Checked already (CommandChecker): this is the text as it may be compiled.
      let code: [UInt8]
      switch ShaderSource.prepare(bytes(blob), limits: checker.limits) {
      case .success(let prepared): code = prepared
      case .failure(let refusal):
        throw PngineError(
          .shaderCompile, "\(decoded.command): refused before compiling: \(refusal)",
          location: decoded.location(call: call))
      }
      try scopedOnCompilerStack(
        decoded, call: call, code: .shaderCompile, keep: { tables.shaders[id] = $0 },
        release: { wgpuShaderModuleRelease($0) },
        make: {
          code.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { c in
              pg_gpu_create_wgsl(gpu, c.baseAddress, c.count)
            }
          }
        })
    case .createRenderPipeline(let id, _):
      guard tables.renderPipelines[id] == nil else { return }
      let d = try RenderPipelineDescriptor(decoding: bytes(blob))
      try scopedOnCompilerStack(
        decoded, call: call, code: .pipelineCreate, keep: { tables.renderPipelines[id] = $0 },
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
      guard tables.computePipelines[id] == nil else { return }
      let c = try ComputePipelineDescriptor(decoding: bytes(blob))
      let layout = try c.layout.map { (l) throws(PngineError) in
        try handle(tables.pipelineLayouts, l, .pipelineLayout, decoded, call: call)
      }
      let module = try handle(tables.shaders, c.shader, .shader, decoded, call: call)
      try scopedOnCompilerStack(
        decoded, call: call, code: .pipelineCreate, keep: { tables.computePipelines[id] = $0 },
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
      guard tables.bindGroups[id] == nil else { return }
      let d = try BindGroupDescriptor(decoding: bytes(blob))
      let layout = try bindGroupLayout(layoutId, group: d.group, decoded, call: call)
      defer { layout.release() }
      let entries = try bindGroupEntries(d, decoded, call: call)
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { tables.bindGroups[id] = $0 },
        release: { wgpuBindGroupRelease($0) },
        make: {
          makeBindGroup(entries, layout: layout.handle)
        })
      tables.bindGroupRecipes[id] = (layoutId, d)
    case .createTextureView(let id, let texture, _):
      guard tables.textureViews[id] == nil else { return }
      let t = try handle(tables.textures, texture, .texture, decoded, call: call)
      // Upstream's view descriptor (TLV 0x09) is not decoded yet: a default view.
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { tables.textureViews[id] = $0 },
        release: { wgpuTextureViewRelease($0) },
        make: { wgpuTextureCreateView(t.texture, nil) })
      viewSources[id] = texture
    case .createBindGroupLayout(let id, _):
      guard tables.bindGroupLayouts[id] == nil else { return }
      let d = try BindGroupLayoutDescriptor(decoding: bytes(blob))
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { tables.bindGroupLayouts[id] = $0 },
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
      guard tables.pipelineLayouts[id] == nil else { return }
      let d = try PipelineLayoutDescriptor(decoding: bytes(blob))
      var layouts: [WGPUBindGroupLayout?] = []
      for l in d.bindGroupLayouts {
        layouts.append(
          try handle(tables.bindGroupLayouts, l, .bindGroupLayout, decoded, call: call))
      }
      try scoped(
        decoded, call: call, code: .gpuValidation, keep: { tables.pipelineLayouts[id] = $0 },
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
          : try handle(tables.textures, c.texture, .texture, decoded, call: call).view
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
            : try handle(tables.textures, r, .texture, decoded, call: call).view
        }
        attachments.append(a)
      }
      var pass = pg_render_pass_descriptor_init()
      pass.colorAttachmentCount = attachments.count
      pass.colorAttachments = UnsafePointer(arena.array(attachments))
      if depth != CommandChecker.none {
        let t = try handle(tables.textures, depth, .texture, decoded, call: call)
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
          p, try handle(tables.renderPipelines, id, .pipeline, decoded, call: call))
      } else if let p = computePass {
        wgpuComputePassEncoderSetPipeline(
          p, try handle(tables.computePipelines, id, .pipeline, decoded, call: call))
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
        let buffer = try handle(tables.buffers, id, .buffer, decoded, call: call)
        wgpuRenderPassEncoderSetVertexBuffer(p, UInt32(slot), buffer, 0, UInt64.max)
      }
    case .setIndexBuffer(let id, let format):
      if let p = renderPass {
        wgpuRenderPassEncoderSetIndexBuffer(
          p, try handle(tables.buffers, id, .buffer, decoded, call: call),
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
          p, try handle(tables.buffers, b, .buffer, decoded, call: call), UInt64(o))
      }
    case .drawIndexedIndirect(let b, let o):
      if let p = renderPass {
        wgpuRenderPassEncoderDrawIndexedIndirect(
          p, try handle(tables.buffers, b, .buffer, decoded, call: call), UInt64(o))
      }
    case .dispatch(let x, let y, let z):
      if let p = computePass { wgpuComputePassEncoderDispatchWorkgroups(p, x, y, z) }
    case .dispatchIndirect(let b, let o):
      if let p = computePass {
        wgpuComputePassEncoderDispatchWorkgroupsIndirect(
          p, try handle(tables.buffers, b, .buffer, decoded, call: call), UInt64(o))
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
      let buffer = try handle(tables.buffers, id, .buffer, decoded, call: call)
      // WebGPU writes whole 4-byte words; the tail is padded with zeros.
      let padded =
        data.count % 4 == 0 ? data : data + [UInt8](repeating: 0, count: 4 - data.count % 4)
      padded.withUnsafeBytes {
        wgpuQueueWriteBuffer(queue, buffer, UInt64(offset), $0.baseAddress, $0.count)
      }
    case .writeTimeUniform(let id, let offset, let size):
      let buffer = try handle(tables.buffers, id, .buffer, decoded, call: call)
      let data = inputs.timeUniformBytes(size: Int(size))
      data.withUnsafeBytes {
        wgpuQueueWriteBuffer(queue, buffer, UInt64(offset), $0.baseAddress, $0.count)
      }
    case .writePointerUniform(let id, let offset, let size):
      // The frame's pointer: upstream's 12 floats (all zero at rest, headless).
      let buffer = try handle(tables.buffers, id, .buffer, decoded, call: call)
      let data = inputs.pointer.uniformBytes(size: Int(size))
      data.withUnsafeBytes {
        wgpuQueueWriteBuffer(queue, buffer, UInt64(offset), $0.baseAddress, $0.count)
      }
    case .copyBufferToBuffer(let s, let so, let d, let dof, let size):
      let source = try handle(tables.buffers, s, .buffer, decoded, call: call)
      let destination = try handle(tables.buffers, d, .buffer, decoded, call: call)
      wgpuCommandEncoderCopyBufferToBuffer(
        try encoderForPass(decoded, call: call), source, UInt64(so), destination, UInt64(dof),
        UInt64(size))
    case .copyTextureToTexture(let s, let d, let w, let h):
      var src = pg_texel_copy_texture_info_init()
      src.texture =
        s == CommandChecker.canvas
        ? try canvasTarget(decoded, call: call).texture
        : try handle(tables.textures, s, .texture, decoded, call: call).texture
      var dst = pg_texel_copy_texture_info_init()
      dst.texture =
        d == CommandChecker.canvas
        ? try canvasTarget(decoded, call: call).texture
        : try handle(tables.textures, d, .texture, decoded, call: call).texture
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

  func submit(_ decoded: DecodedCommand, call: String) throws(PngineError) {
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
    // On the device's thread, waited for up to the limit: a CPU driver runs the frame's
    // work inside the submit, and nothing else could end it (see GPULimits.submitTimeout).
    let work = SubmitWork(gpu: gpu, queue: queue, commands: commands)
    let rejection = gpuDevice.runBounded(timeout: checker.limits.submitTimeout) {
      () -> String? in
      pg_gpu_push_scope(work.gpu)
      var list: [WGPUCommandBuffer?] = [work.commands]
      wgpuQueueSubmit(work.queue, 1, &list)
      wgpuCommandBufferRelease(work.commands)
      var message = [CChar](repeating: 0, count: 8192)
      return pg_gpu_pop_scope(work.gpu, &message, message.count) != 0 ? text(message) : nil
    }
    guard let rejection else {
      throw timedOut(decoded.location(call: call))
    }
    if let rejection {
      try checkLost(decoded.location(call: call))
      throw PngineError(
        .gpuValidation, "the frame was rejected at submit: \(rejection)",
        location: decoded.location(call: call))
    }
  }
}

/// What a submit on the device's thread needs: C handles, used there only while the caller
/// holds the device's lock and waits (or, after a timeout, by that thread alone).
struct SubmitWork: @unchecked Sendable {
  let gpu: OpaquePointer
  let queue: WGPUQueue
  let commands: WGPUCommandBuffer
}
