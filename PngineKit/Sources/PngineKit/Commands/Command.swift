/// A pointer and a length into the executor's memory, as a command carries them.
public struct BlobRef: Sendable, Hashable, CustomStringConvertible {
  /// The offset in the executor's memory.
  public var pointer: UInt32
  /// The length in bytes.
  public var length: UInt32

  /// Makes a reference.
  public init(pointer: UInt32, length: UInt32) {
    self.pointer = pointer
    self.length = length
  }

  /// The value the legacy executors' split mode leaves in every blob pointer.
  public static let legacySentinelPointer: UInt32 = 0xAAAA_AAAA

  /// Whether this is the legacy split-mode sentinel (`0xAAAAAAAA`, length 0): not a blob.
  public var isLegacySentinel: Bool { pointer == Self.legacySentinelPointer && length == 0 }

  /// `0x140e02+0xb07`.
  public var description: String { "0x\(String(pointer, radix: 16))+\(length)" }
}

/// A clear colour: four unorm bytes (opcode 0x10/0x1B) or four floats (0x53/0x54).
public enum ClearColor: Sendable, Hashable {
  /// Four bytes, each `/255`.
  case unorm8(UInt8, UInt8, UInt8, UInt8)
  /// Four 32-bit floats.
  case float(Float, Float, Float, Float)
}

/// One colour attachment of a render pass.
public struct ColorAttachment: Sendable, Hashable {
  /// The texture id (`0xFFFE` the canvas).
  public var texture: UInt16
  /// Load op: 0 load, 1 clear.
  public var load: UInt8
  /// Store op: 0 store, 1 discard.
  public var store: UInt8
  /// The clear colour; `nil` in the legacy layout, which carries none.
  public var clear: ClearColor?

  /// Makes an attachment.
  public init(texture: UInt16, load: UInt8, store: UInt8, clear: ClearColor?) {
    self.texture = texture
    self.load = load
    self.store = store
    self.clear = clear
  }
}

/// One decoded command of a command buffer. Ids are the executor's resource ids; `0xFFFE`
/// is the canvas texture and `0xFFFF` none.
public enum Command: Sendable, Hashable {
  /// 0x01: a buffer of `size` bytes with WebGPU usage bits.
  case createBuffer(id: UInt16, size: UInt32, usage: UInt16)
  /// 0x02: a texture from a binary descriptor.
  case createTexture(id: UInt16, descriptor: BlobRef)
  /// 0x03: a sampler from a binary descriptor.
  case createSampler(id: UInt16, descriptor: BlobRef)
  /// 0x04: a shader module from WGSL text.
  case createShader(id: UInt16, code: BlobRef)
  /// 0x05: a render pipeline from a JSON descriptor.
  case createRenderPipeline(id: UInt16, descriptor: BlobRef)
  /// 0x06: a compute pipeline from a binary descriptor.
  case createComputePipeline(id: UInt16, descriptor: BlobRef)
  /// 0x07: a bind group.
  case createBindGroup(id: UInt16, layout: UInt16, entries: BlobRef)
  /// 0x08: a texture view.
  case createTextureView(id: UInt16, texture: UInt16, descriptor: BlobRef)
  /// 0x09: a query set.
  case createQuerySet(id: UInt16, descriptor: BlobRef)
  /// 0x0A: a bind group layout (JSON).
  case createBindGroupLayout(id: UInt16, descriptor: BlobRef)
  /// 0x0B: an image bitmap (`[mime_len][mime][bytes]`).
  case createImageBitmap(id: UInt16, data: BlobRef)
  /// 0x0C: a pipeline layout (JSON).
  case createPipelineLayout(id: UInt16, descriptor: BlobRef)
  /// 0x0D: a render bundle.
  case createRenderBundle(id: UInt16, descriptor: BlobRef)
  /// 0x10 / 0x53 (one attachment) and 0x1B / 0x54 (several): begin a render pass.
  case beginRenderPass(colors: [ColorAttachment], depth: UInt16, resolve: UInt16?)
  /// 0x11: begin a compute pass.
  case beginComputePass
  /// 0x12: set the pipeline (render or compute, after the open pass).
  case setPipeline(id: UInt16)
  /// 0x13: set a bind group.
  case setBindGroup(slot: UInt8, id: UInt16)
  /// 0x14: set a vertex buffer.
  case setVertexBuffer(slot: UInt8, id: UInt16)
  /// 0x15: draw.
  case draw(vertexCount: UInt32, instanceCount: UInt32, firstVertex: UInt32, firstInstance: UInt32)
  /// 0x16: indexed draw.
  case drawIndexed(
    indexCount: UInt32, instanceCount: UInt32, firstIndex: UInt32, baseVertex: Int32,
    firstInstance: UInt32)
  /// 0x17: end the open pass.
  case endPass
  /// 0x18: dispatch workgroups.
  case dispatch(x: UInt32, y: UInt32, z: UInt32)
  /// 0x19: set the index buffer (format 0 uint16, 1 uint32).
  case setIndexBuffer(id: UInt16, format: UInt8)
  /// 0x1A: execute render bundles.
  case executeBundles(ids: [UInt16])
  /// 0x1C: indirect draw.
  case drawIndirect(buffer: UInt16, offset: UInt32)
  /// 0x1D: indirect indexed draw.
  case drawIndexedIndirect(buffer: UInt16, offset: UInt32)
  /// 0x1E: indirect dispatch.
  case dispatchIndirect(buffer: UInt16, offset: UInt32)
  /// 0x1F: set the viewport.
  case setViewport(
    x: UInt32, y: UInt32, width: UInt32, height: UInt32, minDepth: Float,
    maxDepth: Float)
  /// 0x20: write bytes from the executor's memory into a buffer.
  case writeBuffer(id: UInt16, offset: UInt32, data: BlobRef)
  /// 0x21: write `[time, w, h, w/h]` into a buffer.
  case writeTimeUniform(id: UInt16, offset: UInt32, size: UInt16)
  /// 0x22: copy between buffers.
  case copyBufferToBuffer(
    source: UInt16, sourceOffset: UInt32, destination: UInt16, destinationOffset: UInt32,
    size: UInt32)
  /// 0x23: copy between textures.
  case copyTextureToTexture(source: UInt16, destination: UInt16, width: UInt16, height: UInt16)
  /// 0x24: write a WASM call's result into a buffer.
  case writeBufferFromWasm(buffer: UInt16, offset: UInt32, call: UInt32, size: UInt32)
  /// 0x25: copy an image bitmap into a texture.
  case copyExternalImageToTexture(
    bitmap: UInt16, texture: UInt16, mipLevel: UInt8, x: UInt16, y: UInt16, z: UInt16)
  /// 0x26: write the pointer state into a buffer.
  case writePointerUniform(id: UInt16, offset: UInt32, size: UInt16)
  /// 0x27: resolve a query set into a buffer.
  case resolveQuerySet(
    querySet: UInt16, first: UInt32, count: UInt32, destination: UInt16,
    destinationOffset: UInt32)
  /// 0x30: instantiate a nested WASM module.
  case initWasmModule(module: UInt16, data: BlobRef)
  /// 0x31: call a nested WASM function; `arguments` is the inline argument blob.
  case callWasmFunction(call: UInt16, module: UInt16, name: BlobRef, arguments: [UInt8])
  /// 0x4A: timestamp writes of the next pass.
  case setPassTimestampWrites(querySet: UInt16, beginIndex: UInt16, endIndex: UInt16)
  /// 0x4B: occlusion query set of the next pass.
  case setPassOcclusionQuerySet(querySet: UInt16)
  /// 0x4C: end an occlusion query.
  case endOcclusionQuery
  /// 0x4D: begin an occlusion query.
  case beginOcclusionQuery(index: UInt32)
  /// 0x4E: stencil reference.
  case setStencilReference(UInt32)
  /// 0x4F: scissor rectangle.
  case setScissorRect(x: UInt32, y: UInt32, width: UInt32, height: UInt32)
  /// 0x50: depth/stencil load and store ops of the next pass.
  case setPassDepthStencilOps(
    depthLoad: UInt8, depthStore: UInt8, stencilLoad: UInt8,
    stencilStore: UInt8)
  /// 0x51: blend constant.
  case setBlendConstant(Float, Float, Float, Float)
  /// 0x52: depth/stencil clear values of the next pass.
  case setPassClearValues(depth: Float, stencil: UInt32)
  /// 0xF0: submit.
  case submit
  /// 0xFF: end of buffer.
  case end

  /// The blobs this command points at in the executor's memory.
  public var blobs: [BlobRef] {
    switch self {
    case .createTexture(_, let b), .createSampler(_, let b), .createShader(_, let b),
      .createRenderPipeline(_, let b), .createComputePipeline(_, let b),
      .createBindGroup(_, _, let b), .createTextureView(_, _, let b), .createQuerySet(_, let b),
      .createBindGroupLayout(_, let b), .createImageBitmap(_, let b),
      .createPipelineLayout(_, let b), .createRenderBundle(_, let b), .writeBuffer(_, _, let b),
      .initWasmModule(_, let b), .callWasmFunction(_, _, let b, _):
      return [b]
    default: return []
    }
  }
}

/// A decoded command with its opcode and its offset in the command buffer.
public struct DecodedCommand: Sendable, Hashable {
  /// The opcode byte.
  public var opcode: UInt8
  /// The offset of the opcode byte in the buffer.
  public var offset: Int
  /// The command.
  public var command: Command

  /// Makes a decoded command (the decoder's output; tests build streams by hand with it).
  public init(opcode: UInt8, offset: Int, command: Command) {
    self.opcode = opcode
    self.offset = offset
    self.command = command
  }
}
