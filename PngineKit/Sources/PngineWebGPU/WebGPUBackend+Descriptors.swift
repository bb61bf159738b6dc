import CPngineWGPU
import CWGPU
import PngineKit

// Descriptor translation: the stream's bind groups, layouts and pipelines as wgpu structs.
extension WebGPUBackend {
  /// A bind group layout to make a group with; one taken from a pipeline is a new reference,
  /// released after use (``release()``).
  struct LayoutRef {
    var handle: WGPUBindGroupLayout
    var owned: Bool
    func release() { if owned { wgpuBindGroupLayoutRelease(handle) } }
  }

  /// A bind group's layout: an explicit layout (the id carries ``BindGroupDescriptor/layoutTag``)
  /// or group `group` of a pipeline's automatic one; nil when there is none (a null layout
  /// aborts wgpu-native).
  func bindGroupLayout(_ layoutId: UInt16, group: UInt32) -> LayoutRef? {
    if layoutId & BindGroupDescriptor.layoutTag != 0 {
      return tables.bindGroupLayouts[layoutId & ~BindGroupDescriptor.layoutTag].map {
        LayoutRef(handle: $0, owned: false)
      }
    }
    return pipelineLayout(of: layoutId, group: group)
  }

  func bindGroupLayout(
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

  func pipelineLayout(of pipeline: UInt16, group: UInt32) -> LayoutRef? {
    let made: WGPUBindGroupLayout?
    if let p = tables.renderPipelines[pipeline] {
      made = wgpuRenderPipelineGetBindGroupLayout(p, group)
    } else if let p = tables.computePipelines[pipeline] {
      made = wgpuComputePipelineGetBindGroupLayout(p, group)
    } else {
      made = nil
    }
    return made.map { LayoutRef(handle: $0, owned: true) }
  }

  /// A group's entries with their GPU objects, or nil when one has none.
  func bindGroupEntries(_ d: BindGroupDescriptor) -> [WGPUBindGroupEntry]? {
    var entries: [WGPUBindGroupEntry] = []
    for e in d.entries {
      var entry = pg_bind_group_entry_init()
      entry.binding = e.binding
      switch e.kind {
      case .buffer:
        guard let buffer = tables.buffers[e.resource] else { return nil }
        entry.buffer = buffer
        entry.offset = UInt64(e.offset)
        entry.size = e.size == 0 ? UInt64.max : UInt64(e.size)
      case .texture:
        guard let view = tables.textures[e.resource]?.view else { return nil }
        entry.textureView = view
      case .sampler:
        guard let sampler = tables.samplers[e.resource] else { return nil }
        entry.sampler = sampler
      case .textureView:
        guard let view = tables.textureViews[e.resource] else { return nil }
        entry.textureView = view
      }
      entries.append(entry)
    }
    return entries
  }

  func bindGroupEntries(_ d: BindGroupDescriptor, _ decoded: DecodedCommand, call: String)
    throws(PngineError) -> [WGPUBindGroupEntry]
  {
    guard let entries = bindGroupEntries(d) else {
      throw PngineError(
        .resourceNotFound, "\(decoded.command): an entry names a resource with no GPU object",
        location: decoded.location(call: call))
    }
    return entries
  }

  func makeBindGroup(_ entries: [WGPUBindGroupEntry], layout: WGPUBindGroupLayout)
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
  func bindGroup(_ id: UInt16, decoded: DecodedCommand, call: String) throws(PngineError)
    -> WGPUBindGroup
  {
    guard let recipe = tables.bindGroupRecipes[id], let current = currentPipeline,
      recipe.layout & BindGroupDescriptor.layoutTag == 0, recipe.layout != current
    else { return try handle(tables.bindGroups, id, .bindGroup, decoded, call: call) }
    let key = UInt32(id) << 16 | UInt32(current)
    if let group = tables.reboundGroups[key] { return group }
    let layout = try bindGroupLayout(current, group: recipe.descriptor.group, decoded, call: call)
    defer { layout.release() }
    let entries = try bindGroupEntries(recipe.descriptor, decoded, call: call)
    return try scoped(
      decoded, call: call, code: .gpuValidation, keep: { tables.reboundGroups[key] = $0 },
      release: { wgpuBindGroupRelease($0) },
      make: { makeBindGroup(entries, layout: layout.handle) })
  }

  func layoutEntry(_ e: BindGroupLayoutDescriptor.Entry) throws(PngineError)
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

  func renderPipelineDescriptor(
    _ d: RenderPipelineDescriptor, arena: Arena, _ decoded: DecodedCommand, call: String
  ) throws(PngineError) -> WGPURenderPipelineDescriptor {
    var p = pg_render_pipeline_descriptor_init()
    if let l = d.layoutId {
      p.layout = try handle(tables.pipelineLayouts, l, .pipelineLayout, decoded, call: call)
    }
    let vertexShader = d.vertex.shader ?? 0
    p.vertex.module = try handle(tables.shaders, vertexShader, .shader, decoded, call: call)
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
      fragment.module = try handle(
        tables.shaders, f.shader ?? vertexShader, .shader, decoded, call: call)
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
}
