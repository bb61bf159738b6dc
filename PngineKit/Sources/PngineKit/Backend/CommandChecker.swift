/// The resource kinds of a command stream, one id space each.
public enum ResourceKind: String, Sendable, Hashable, CaseIterable {
  /// 0x01.
  case buffer
  /// 0x02.
  case texture
  /// 0x03.
  case sampler
  /// 0x04.
  case shader
  /// 0x05 and 0x06 share the pipeline id space.
  case pipeline
  /// 0x07.
  case bindGroup
  /// 0x08.
  case textureView
  /// 0x09.
  case querySet
  /// 0x0A.
  case bindGroupLayout
  /// 0x0B.
  case imageBitmap
  /// 0x0C.
  case pipelineLayout
  /// 0x0D.
  case renderBundle
}

/// What a stream has defined so far and what its open pass has set: the checks every backend
/// runs before touching a GPU, so that a bad id or a draw without a pipeline is a
/// ``PngineError`` naming the command, not a GPU crash or a silent no-op.
public struct CommandChecker: Sendable {
  /// Pipeline kinds (render or compute), by id.
  public enum PipelineKind: Sendable, Hashable {
    /// 0x05.
    case render
    /// 0x06.
    case compute
  }
  /// The open pass.
  public enum Pass: Sendable, Hashable {
    /// None open.
    case none
    /// A render pass.
    case render
    /// A compute pass.
    case compute
  }

  /// Defined ids per kind.
  public private(set) var defined: [ResourceKind: Set<UInt16>] = [:]
  /// Buffer sizes by id.
  public private(set) var bufferSizes: [UInt16: UInt32] = [:]
  /// Pipeline kinds by id.
  public private(set) var pipelineKinds: [UInt16: PipelineKind] = [:]
  /// The open pass.
  public private(set) var pass: Pass = .none
  /// The pipeline set in the open pass.
  public private(set) var pipeline: UInt16?
  /// Buffer usages by id, as created (0 read as COPY_DST).
  public private(set) var bufferUsages: [UInt16: UInt32] = [:]
  /// GPU bytes the defined buffers and textures take (textures estimated, see
  /// ``GPUValueRules/textureBytes(_:canvas:)``), against ``GPULimits/gpuByteBudget``.
  public private(set) var gpuBytes: UInt64 = 0
  /// What the host wrote into each buffer made for indirect arguments (usage INDIRECT, at
  /// most ``GPULimits/maxIndirectBufferBytes``), so that an indirect draw or dispatch is
  /// bounded as a direct one is. A buffer whose contents the GPU may write (usage STORAGE or
  /// QUERY_RESOLVE, a copy or a nested module's write into it) has none: its arguments are
  /// unknown.
  public private(set) var indirectContents: [UInt16: [UInt8]] = [:]
  /// The limits and budgets commands are checked against.
  public var limits: GPULimits
  /// The canvas size, which a texture without a size of its own takes.
  public var canvasWidth: UInt32
  /// The canvas size, which a texture without a size of its own takes.
  public var canvasHeight: UInt32

  /// Makes an empty checker.
  public init(
    limits: GPULimits = GPULimits(), canvasWidth: UInt32 = 512, canvasHeight: UInt32 = 512
  ) {
    self.limits = limits
    self.canvasWidth = canvasWidth
    self.canvasHeight = canvasHeight
  }

  /// WebGPU's buffer usages that decide who writes indirect arguments.
  static let storageUsage: UInt32 = 0x80
  static let indirectUsage: UInt32 = 0x100
  static let queryResolveUsage: UInt32 = 0x200

  /// The canvas texture id.
  public static let canvas: UInt16 = 0xFFFE
  /// "None".
  public static let none: UInt16 = 0xFFFF

  /// Whether `id` of `kind` is defined.
  public func has(_ kind: ResourceKind, _ id: UInt16) -> Bool {
    defined[kind]?.contains(id) ?? false
  }

  /// Forgets the open pass (after a failed command, so the next call starts outside a pass).
  public mutating func abandonPass() {
    pass = .none
    pipeline = nil
  }

  /// Checks one command against what came before and records what it defines.
  public mutating func check(
    _ decoded: DecodedCommand, blob: Blob?, call: String
  ) throws(PngineError) {
    let at = decoded.location(call: call)
    func fail(_ code: PngineError.Code, _ text: String) -> PngineError {
      PngineError(code, "\(decoded.command): \(text)", location: at)
    }
    func need(_ kind: ResourceKind, _ id: UInt16) throws(PngineError) {
      guard has(kind, id) else { throw fail(.resourceNotFound, "\(kind) \(id) is not defined") }
    }
    func bytes() throws(PngineError) -> [UInt8] {
      guard case .bytes(let b)? = blob, !b.isEmpty else {
        throw fail(.invalidDescriptor, "its descriptor is empty or was not resolved")
      }
      return b
    }
    func define(_ kind: ResourceKind, _ id: UInt16) {
      defined[kind, default: []].insert(id)
    }
    func inPass(_ wanted: Pass, _ what: String) throws(PngineError) {
      guard pass == wanted else {
        throw fail(.commandValidation, "\(what) outside a \(wanted) pass")
      }
    }
    func allocate(_ kind: ResourceKind, _ id: UInt16, _ bytes: UInt64) throws(PngineError) {
      guard !has(kind, id) else { return }  // a re-definition is skipped by the backends
      guard gpuBytes + bytes <= limits.gpuByteBudget else {
        throw fail(
          .budgetExceeded,
          "\(bytes) more GPU bytes would exceed the animation's budget of \(limits.gpuByteBudget) (\(gpuBytes) in use)"
        )
      }
      gpuBytes += bytes
    }
    /// A queue write or copy of `count` bytes at `offset` into buffer `id`, which needs
    /// `usage` (COPY_DST 0x8, COPY_SRC 0x4): wgpu-native aborts on a rejected queue write.
    func access(_ id: UInt16, offset: UInt32, count: UInt64, usage: UInt32) throws(PngineError) {
      try need(.buffer, id)
      guard let created = bufferUsages[id], created & usage != 0 else {
        throw fail(
          .commandValidation,
          "buffer \(id) lacks usage 0x\(String(usage, radix: 16)) (it has 0x\(String(bufferUsages[id] ?? 0, radix: 16)))"
        )
      }
      let size = GPUValueRules.allocatedSize(bufferSizes[id] ?? 0)
      guard offset % 4 == 0, count % 4 == 0, UInt64(offset) + count <= size else {
        throw fail(
          .commandValidation,
          "\(count) bytes at offset \(offset) do not fit buffer \(id) of \(size) bytes in 4-byte words"
        )
      }
    }
    /// The u32 arguments of an indirect command in buffer `id` at `offset`: checked to fit
    /// (INDIRECT usage, 4-byte aligned), then read from what the host wrote; nil when the GPU
    /// may have written them and ``GPULimits/allowsUnboundedIndirect`` lets that pass.
    func indirect(_ id: UInt16, offset: UInt32, count: Int) throws(PngineError) -> [UInt32]? {
      try need(.buffer, id)
      let usage = bufferUsages[id] ?? 0
      let size = UInt64(bufferSizes[id] ?? 0)
      guard usage & Self.indirectUsage != 0 else {
        throw fail(
          .commandValidation,
          "buffer \(id) lacks usage INDIRECT (it has 0x\(String(usage, radix: 16)))")
      }
      guard offset % 4 == 0, UInt64(offset) + UInt64(count * 4) <= size else {
        throw fail(
          .commandValidation,
          "\(count * 4) bytes of arguments at offset \(offset) do not fit buffer \(id) of \(size) bytes in 4-byte words"
        )
      }
      guard let contents = indirectContents[id] else {
        if limits.allowsUnboundedIndirect { return nil }
        throw fail(
          .budgetExceeded,
          "buffer \(id)'s arguments may be written by the GPU, so the work they ask for cannot be bounded (GPULimits.allowsUnboundedIndirect)"
        )
      }
      // Inside the buffer (checked above), so every word reads.
      let view = ByteView(contents)
      return (0..<count).map { view.u32le(Int(offset) + 4 * $0) ?? 0 }
    }
    /// Buffer `id`'s contents are no longer the host's alone.
    func unknown(_ id: UInt16) { indirectContents[id] = nil }
    switch decoded.command {
    case .createBuffer(let id, let size, let usage):
      let effective = GPUValueRules.effectiveBufferUsage(usage)
      if let problem = GPUValueRules.bufferUsageProblem(effective) {
        throw fail(.commandValidation, problem)
      }
      guard UInt64(size) <= limits.maxBufferSize else {
        throw fail(.limitExceeded, "size \(size) exceeds the limit of \(limits.maxBufferSize)")
      }
      try allocate(.buffer, id, GPUValueRules.allocatedSize(size))
      if !has(.buffer, id) {
        bufferSizes[id] = size
        bufferUsages[id] = effective
        let gpuWrites = Self.storageUsage | Self.queryResolveUsage
        if effective & Self.indirectUsage != 0, effective & gpuWrites == 0,
          Int(size) <= limits.maxIndirectBufferBytes
        {
          indirectContents[id] = [UInt8](repeating: 0, count: Int(size))
        }
      }
      define(.buffer, id)
    case .createTexture(let id, _):
      let t = try TextureDescriptor(decoding: try bytes())
      let canvas = (canvasWidth, canvasHeight)
      if let problem = GPUValueRules.textureProblem(t, canvas: canvas, limits: limits) {
        throw fail(.invalidDescriptor, problem)
      }
      try allocate(.texture, id, GPUValueRules.textureBytes(t, canvas: canvas))
      define(.texture, id)
    case .createSampler(let id, _):
      let s = try SamplerDescriptor(decoding: try bytes())
      if let problem = GPUValueRules.samplerProblem(s) { throw fail(.invalidDescriptor, problem) }
      define(.sampler, id)
    case .createShader(let id, _):
      if case .failure(let refusal) = ShaderSource.prepare(try bytes(), limits: limits) {
        throw fail(.shaderCompile, "refused before compiling: \(refusal)")
      }
      define(.shader, id)
    case .createRenderPipeline(let id, _):
      let d = try RenderPipelineDescriptor(decoding: try bytes())
      if let problem = GPUValueRules.renderPipelineProblem(d) {
        throw fail(.invalidDescriptor, problem)
      }
      for s in d.shaders { try need(.shader, s) }
      if let l = d.layoutId { try need(.pipelineLayout, l) }
      define(.pipeline, id)
      pipelineKinds[id] = .render
    case .createComputePipeline(let id, _):
      let d = try ComputePipelineDescriptor(decoding: try bytes())
      try need(.shader, d.shader)
      if let l = d.layout { try need(.pipelineLayout, l) }
      define(.pipeline, id)
      pipelineKinds[id] = .compute
    case .createBindGroup(let id, let layout, _):
      let d = try BindGroupDescriptor(decoding: try bytes())
      if layout & BindGroupDescriptor.layoutTag != 0 {
        try need(.bindGroupLayout, layout & ~BindGroupDescriptor.layoutTag)
      } else {
        try need(.pipeline, layout)
      }
      for e in d.entries {
        guard e.binding <= limits.maxBindingIndex else {
          throw fail(.invalidDescriptor, "binding \(e.binding) exceeds \(limits.maxBindingIndex)")
        }
        switch e.kind {
        case .buffer: try need(.buffer, e.resource)
        case .texture: try need(.texture, e.resource)
        case .sampler: try need(.sampler, e.resource)
        case .textureView: try need(.textureView, e.resource)
        }
      }
      define(.bindGroup, id)
    case .createTextureView(let id, let texture, _):
      try need(.texture, texture)
      define(.textureView, id)
    case .createQuerySet(let id, _): define(.querySet, id)
    case .createBindGroupLayout(let id, _):
      let d = try BindGroupLayoutDescriptor(decoding: try bytes())
      for e in d.entries {
        if let problem = GPUValueRules.layoutEntryProblem(e, limits: limits) {
          throw fail(.invalidDescriptor, problem)
        }
      }
      define(.bindGroupLayout, id)
    case .createImageBitmap(let id, _): define(.imageBitmap, id)
    case .createPipelineLayout(let id, _):
      let d = try PipelineLayoutDescriptor(decoding: try bytes())
      for l in d.bindGroupLayouts { try need(.bindGroupLayout, l) }
      define(.pipelineLayout, id)
    case .createRenderBundle(let id, _): define(.renderBundle, id)
    case .beginRenderPass(let colors, let depth, let resolve):
      guard pass == .none else { throw fail(.commandValidation, "a pass is already open") }
      // Ops are 0 or 1 (load/clear, store/discard); a backend would read any other as one.
      for c in colors where c.load > 1 || c.store > 1 {
        throw fail(
          .commandValidation,
          "color attachment load op \(c.load), store op \(c.store) (each 0 or 1)")
      }
      for c in colors where c.texture != Self.canvas && c.texture != Self.none {
        try need(.texture, c.texture)
      }
      if depth != Self.none { try need(.texture, depth) }
      if let r = resolve, r != Self.none, r != Self.canvas { try need(.texture, r) }
      pass = .render
      pipeline = nil
    case .beginComputePass:
      guard pass == .none else { throw fail(.commandValidation, "a pass is already open") }
      pass = .compute
      pipeline = nil
    case .setPipeline(let id):
      guard pass != .none else { throw fail(.commandValidation, "setPipeline outside a pass") }
      try need(.pipeline, id)
      let wanted: PipelineKind = pass == .render ? .render : .compute
      guard pipelineKinds[id] == wanted else {
        throw fail(.commandValidation, "pipeline \(id) is not a \(wanted) pipeline")
      }
      pipeline = id
    case .setBindGroup(let slot, let id):
      guard pass != .none else { throw fail(.commandValidation, "setBindGroup outside a pass") }
      guard slot < limits.maxBindGroups else {
        throw fail(
          .commandValidation, "slot \(slot) exceeds the \(limits.maxBindGroups) bind groups")
      }
      try need(.bindGroup, id)
    case .setVertexBuffer(let slot, let id):
      try inPass(.render, "setVertexBuffer")
      guard slot < limits.maxVertexBuffers else {
        throw fail(
          .commandValidation, "slot \(slot) exceeds the \(limits.maxVertexBuffers) vertex buffers")
      }
      try need(.buffer, id)
    case .setPassDepthStencilOps(let depthLoad, let depthStore, let stencilLoad, let stencilStore):
      guard max(depthLoad, depthStore, stencilLoad, stencilStore) <= 1 else {
        throw fail(
          .commandValidation,
          "depth/stencil ops \(depthLoad) \(depthStore) \(stencilLoad) \(stencilStore) (each 0 or 1)"
        )
      }
    case .setIndexBuffer(let id, let format):
      try inPass(.render, "setIndexBuffer")
      guard format <= 1 else {
        throw fail(.commandValidation, "index format \(format) (0 uint16, 1 uint32)")
      }
      try need(.buffer, id)
    case .draw, .drawIndexed:
      try inPass(.render, "a draw")
      guard pipeline != nil else { throw fail(.resourceNotFound, "draw without a pipeline") }
    case .drawIndirect(let b, let offset), .drawIndexedIndirect(let b, let offset):
      try inPass(.render, "a draw")
      guard pipeline != nil else { throw fail(.resourceNotFound, "draw without a pipeline") }
      let indexed = decoded.opcode == 0x1D
      // vertexCount (or indexCount), instanceCount, …: 4 words, 5 indexed.
      if let args = try indirect(b, offset: offset, count: indexed ? 5 : 4) {
        let vertices = UInt64(args[0]) * UInt64(args[1])
        guard vertices <= limits.maxIndirectVertices else {
          throw fail(
            .budgetExceeded,
            "its arguments draw \(args[0]) \(indexed ? "indices" : "vertices") × \(args[1]) instances, over the \(limits.maxIndirectVertices) of one indirect draw"
          )
        }
      }
    case .dispatch(let x, let y, let z):
      try inPass(.compute, "a dispatch")
      guard pipeline != nil else { throw fail(.resourceNotFound, "dispatch without a pipeline") }
      let cap = limits.maxComputeWorkgroupsPerDimension
      guard x <= cap, y <= cap, z <= cap else {
        throw fail(.commandValidation, "\(x)×\(y)×\(z) workgroups exceed \(cap) per axis")
      }
    case .dispatchIndirect(let b, let offset):
      try inPass(.compute, "a dispatch")
      guard pipeline != nil else { throw fail(.resourceNotFound, "dispatch without a pipeline") }
      if let args = try indirect(b, offset: offset, count: 3) {
        let cap = limits.maxComputeWorkgroupsPerDimension
        guard args.allSatisfy({ $0 <= cap }) else {
          throw fail(
            .commandValidation,
            "its arguments ask \(args[0])×\(args[1])×\(args[2]) workgroups, over \(cap) per axis")
        }
        let groups = UInt64(args[0]) * UInt64(args[1]) * UInt64(args[2])
        guard groups <= limits.maxIndirectWorkgroups else {
          throw fail(
            .budgetExceeded,
            "its arguments ask \(groups) workgroups, over the \(limits.maxIndirectWorkgroups) of one indirect dispatch"
          )
        }
      }
    case .endPass:
      guard pass != .none else { throw fail(.commandValidation, "endPass without an open pass") }
      pass = .none
      pipeline = nil
    case .writeBuffer(let id, let offset, _):
      try need(.buffer, id)
      if case .bytes(let b)? = blob, let size = bufferSizes[id],
        UInt64(offset) + UInt64(b.count) > UInt64(size)
      {
        throw fail(
          .commandValidation, "\(b.count) bytes at \(offset) overflow buffer \(id) of \(size)")
      }
      if case .bytes(let b)? = blob, !b.isEmpty {
        // Written as whole 4-byte words, the tail padded.
        try access(id, offset: offset, count: (UInt64(b.count) + 3) / 4 * 4, usage: 0x8)
        if var contents = indirectContents[id] {
          let start = Int(offset)
          let end = min(contents.count, start + b.count)
          if start < end { contents.replaceSubrange(start..<end, with: b[0..<(end - start)]) }
          indirectContents[id] = contents
        }
      }
    case .writeTimeUniform(let id, let offset, let size):
      try access(id, offset: offset, count: UInt64(min(size, 16)), usage: 0x8)
      unknown(id)
    case .writePointerUniform(let id, let offset, let size):
      try access(id, offset: offset, count: UInt64(min(Int(size), 48) / 4 * 4), usage: 0x8)
      unknown(id)
    case .writeBufferFromWasm(let id, _, _, _):
      try need(.buffer, id)
      unknown(id)
    case .resolveQuerySet(_, _, _, let d, _):
      unknown(d)
    case .copyBufferToBuffer(let s, let so, let d, let dof, let size):
      guard s != d else { throw fail(.commandValidation, "a copy from buffer \(s) into itself") }
      try access(s, offset: so, count: UInt64(size), usage: 0x4)
      try access(d, offset: dof, count: UInt64(size), usage: 0x8)
      unknown(d)
    case .setViewport(_, _, _, _, let minDepth, let maxDepth):
      try inPass(.render, "setViewport")
      guard minDepth.isFinite, maxDepth.isFinite, 0 <= minDepth, minDepth <= maxDepth,
        maxDepth <= 1
      else {
        throw fail(
          .commandValidation, "depth range \(minDepth)…\(maxDepth) (want 0 ≤ min ≤ max ≤ 1)")
      }
    case .setBlendConstant(let r, let g, let b, let a):
      try inPass(.render, "setBlendConstant")
      guard [r, g, b, a].allSatisfy(\.isFinite) else {
        throw fail(.commandValidation, "a blend constant that is not a finite number")
      }
    case .copyTextureToTexture(let s, let d, _, _):
      if s != Self.canvas { try need(.texture, s) }
      if d != Self.canvas { try need(.texture, d) }
    case .submit:
      guard pass == .none else { throw fail(.commandValidation, "submit inside an open pass") }
    default: break
    }
  }
}
