/// Checks a stream of command buffers for consistency: every id is defined before use (ids
/// from `init` stay defined for the frames), passes nest (no pass inside a pass, draws in a
/// render pass, dispatches in a compute pass, every pass ended), and `submit` comes last.
///
/// It carries the defined ids from one buffer to the next, so feed it `init`'s buffer first,
/// then each frame's.
public struct CommandValidator: Sendable {
  private var buffers = Set<UInt16>()
  private var textures = Set<UInt16>()
  private var samplers = Set<UInt16>()
  private var shaders = Set<UInt16>()
  private var renderPipelines = Set<UInt16>()
  private var computePipelines = Set<UInt16>()
  private var bindGroups = Set<UInt16>()
  private var querySets = Set<UInt16>()
  private var bundles = Set<UInt16>()

  /// Makes a validator with nothing defined.
  public init() {}

  private enum Pass { case none, render, compute }

  /// Validates one buffer; throws ``PngineError/Code/commandValidation`` (or
  /// ``PngineError/Code/resourceNotFound`` for an undefined id) at the first problem.
  public mutating func validate(_ buffer: CommandBuffer, call: String? = nil) throws(PngineError) {
    var pass = Pass.none
    let canvas: UInt16 = 0xFFFE
    let none: UInt16 = 0xFFFF
    for (index, decoded) in buffer.commands.enumerated() {
      func fail(_ code: PngineError.Code = .commandValidation, _ message: String) -> PngineError {
        PngineError(
          code, message,
          location: .init(byteOffset: decoded.offset, opcode: decoded.opcode, call: call))
      }
      func defined(_ set: Set<UInt16>, _ id: UInt16, _ kind: String) throws(PngineError) {
        guard set.contains(id) else {
          throw fail(.resourceNotFound, "\(kind) \(id) used before it is defined")
        }
      }
      func inPass(_ wanted: Pass, _ what: String) throws(PngineError) {
        guard pass == wanted else {
          throw fail(.commandValidation, "\(what) outside a \(wanted) pass")
        }
      }
      func anyPass(_ what: String) throws(PngineError) {
        guard pass != .none else { throw fail(.commandValidation, "\(what) outside a pass") }
      }
      switch decoded.command {
      case .createBuffer(let id, _, _): buffers.insert(id)
      case .createTexture(let id, _): textures.insert(id)
      case .createTextureView(let id, let texture, _):
        try defined(textures, texture, "texture")
        textures.insert(id)
      case .createSampler(let id, _): samplers.insert(id)
      case .createShader(let id, _): shaders.insert(id)
      case .createRenderPipeline(let id, _): renderPipelines.insert(id)
      case .createComputePipeline(let id, _): computePipelines.insert(id)
      case .createBindGroup(let id, _, _): bindGroups.insert(id)
      case .createQuerySet(let id, _): querySets.insert(id)
      case .createRenderBundle(let id, _): bundles.insert(id)
      case .createBindGroupLayout, .createPipelineLayout, .createImageBitmap, .initWasmModule,
        .callWasmFunction:
        break
      case .beginRenderPass(let colors, let depth, let resolve):
        guard pass == .none else { throw fail(.commandValidation, "render pass inside a pass") }
        for color in colors where color.texture != canvas {
          try defined(textures, color.texture, "texture")
        }
        if depth != none { try defined(textures, depth, "depth texture") }
        if let resolve, resolve != none, resolve != canvas {
          try defined(textures, resolve, "resolve texture")
        }
        pass = .render
      case .beginComputePass:
        guard pass == .none else { throw fail(.commandValidation, "compute pass inside a pass") }
        pass = .compute
      case .endPass:
        guard pass != .none else { throw fail(.commandValidation, "end_pass without a pass") }
        pass = .none
      case .setPipeline(let id):
        try anyPass("set_pipeline")
        if pass == .render {
          try defined(renderPipelines, id, "render pipeline")
        } else {
          try defined(computePipelines, id, "compute pipeline")
        }
      case .setBindGroup(_, let id):
        try anyPass("set_bind_group")
        try defined(bindGroups, id, "bind group")
      case .setVertexBuffer(_, let id):
        try inPass(.render, "set_vertex_buffer")
        try defined(buffers, id, "buffer")
      case .setIndexBuffer(let id, _):
        try inPass(.render, "set_index_buffer")
        try defined(buffers, id, "buffer")
      case .draw, .drawIndexed: try inPass(.render, "draw")
      case .drawIndirect(let b, _), .drawIndexedIndirect(let b, _):
        try inPass(.render, "draw")
        try defined(buffers, b, "buffer")
      case .dispatch: try inPass(.compute, "dispatch")
      case .dispatchIndirect(let b, _):
        try inPass(.compute, "dispatch")
        try defined(buffers, b, "buffer")
      case .executeBundles(let ids):
        try inPass(.render, "execute_bundles")
        for id in ids { try defined(bundles, id, "render bundle") }
      case .setViewport, .setScissorRect, .setBlendConstant, .setStencilReference,
        .beginOcclusionQuery, .endOcclusionQuery:
        try inPass(.render, "render state")
      case .writeBuffer(let id, _, _), .writeTimeUniform(let id, _, _),
        .writePointerUniform(let id, _, _), .writeBufferFromWasm(let id, _, _, _):
        try defined(buffers, id, "buffer")
      case .copyBufferToBuffer(let s, _, let d, _, _):
        try defined(buffers, s, "buffer")
        try defined(buffers, d, "buffer")
      case .copyTextureToTexture(let s, let d, _, _):
        if s != canvas { try defined(textures, s, "texture") }
        if d != canvas { try defined(textures, d, "texture") }
      case .copyExternalImageToTexture(_, let t, _, _, _, _):
        try defined(textures, t, "texture")
      case .resolveQuerySet(let q, _, _, let d, _):
        try defined(querySets, q, "query set")
        try defined(buffers, d, "buffer")
      case .setPassTimestampWrites(let q, _, _), .setPassOcclusionQuerySet(let q):
        try defined(querySets, q, "query set")
      case .setPassDepthStencilOps, .setPassClearValues: break
      case .submit:
        guard pass == .none else { throw fail(.commandValidation, "submit inside an open pass") }
        let rest = buffer.commands[(index + 1)...]
        guard rest.allSatisfy({ $0.command == .end }) else {
          throw fail(.commandValidation, "submit is not the last command")
        }
      case .end: break
      }
    }
    guard pass == .none else {
      throw PngineError(
        .commandValidation, "a pass is still open at the end of the buffer",
        location: .init(byteOffset: Int(buffer.totalLength), call: call))
    }
  }
}
