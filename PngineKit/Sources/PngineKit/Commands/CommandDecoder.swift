/// Which command layout an executor writes. Chosen from the executor (``ExecutorInfo``),
/// never guessed from a buffer.
public enum CommandLayout: String, Sendable, Hashable {
  /// The layout of `docs/abi.md`: `create_buffer` 8 argument bytes, `begin_render_pass` 12.
  case current
  /// The oldest executors' layout (no `getAbiVersion`, import `env.log`): `create_buffer` has
  /// a u8 usage (7 bytes) and `begin_render_pass` is `color u16, load u8, store u8, depth u16`
  /// (6 bytes: no clear colour, no resolve target).
  case legacy
}

/// A command buffer: its 8-byte header and its decoded commands.
public struct CommandBuffer: Sendable, Hashable {
  /// The header's total length (header included).
  public var totalLength: UInt32
  /// The header's command count.
  public var commandCount: UInt16
  /// The header's flags (bit 0: truncated).
  public var flags: UInt16
  /// The commands, in order.
  public var commands: [DecodedCommand]

  /// Whether the executor dropped commands that did not fit (flags bit 0).
  public var isTruncated: Bool { flags & 1 != 0 }

  /// Decodes `bytes` (the whole buffer, header included) with `layout`. Fails with
  /// ``PngineError/Code/invalidCommandBuffer`` when the header's length and the buffer
  /// disagree, an opcode is unknown, a command runs past the end, or the commands do not end
  /// exactly at the header's length with the header's count. A count that the bytes cannot
  /// hold fails before any command is read, and bytes past the count's last command fail
  /// where they start, without reading on.
  public init(decoding bytes: [UInt8], layout: CommandLayout, call: String? = nil)
    throws(PngineError)
  {
    let view = ByteView(bytes)
    func fail(_ message: String, _ offset: Int, _ opcode: UInt8? = nil) -> PngineError {
      PngineError(
        .invalidCommandBuffer, message,
        location: .init(byteOffset: offset, opcode: opcode, call: call))
    }
    guard let total = view.u32le(0), let count = view.u16le(4), let flags = view.u16le(6) else {
      throw fail("command buffer shorter than its 8-byte header", 0)
    }
    guard total >= 8, UInt64(total) <= UInt64(bytes.count) else {
      throw fail("header length \(total) outside the \(bytes.count) bytes read", 0)
    }
    let end = Int(total)
    // Every command takes at least its opcode byte: a count that cannot fit is refused before
    // any command is read, and a command past the count as soon as it starts.
    guard Int(count) <= end - 8 else {
      throw fail(
        "header counts \(count) commands, more than the \(end - 8) bytes after the header can hold",
        4)
    }
    var commands: [DecodedCommand] = []
    commands.reserveCapacity(Int(count))
    var p = 8
    while p < end {
      guard commands.count < Int(count) else {
        throw fail(
          "more commands than the header's count of \(count): bytes remain at offset \(p)", p)
      }
      let op = bytes[p]
      let start = p
      p += 1
      // Reads below go through `ByteView`, which answers nil past the end; `need` bounds
      // each command to the header's length before any read.
      func need(_ n: Int) throws(PngineError) {
        guard n >= 0, p <= end - n else {
          throw fail("command 0x\(hex2(op)) runs past the buffer's length \(end)", start, op)
        }
      }
      func u8(_ o: Int) -> UInt8 { view.u8(p + o)! }
      func u16(_ o: Int) -> UInt16 { view.u16le(p + o)! }
      func u32(_ o: Int) -> UInt32 { view.u32le(p + o)! }
      func f32(_ o: Int) -> Float { Float(bitPattern: u32(o)) }
      func blob(_ o: Int) -> BlobRef { BlobRef(pointer: u32(o), length: u32(o + 4)) }
      let command: Command
      var size: Int
      switch op {
      case 0x01:
        if layout == .legacy {
          size = 7
          try need(size)
          command = .createBuffer(id: u16(0), size: u32(2), usage: UInt16(u8(6)))
        } else {
          size = 8
          try need(size)
          command = .createBuffer(id: u16(0), size: u32(2), usage: u16(6))
        }
      case 0x02, 0x03, 0x04, 0x05, 0x06, 0x09, 0x0A, 0x0B, 0x0C, 0x0D:
        size = 10
        try need(size)
        let id = u16(0)
        let b = blob(2)
        switch op {
        case 0x02: command = .createTexture(id: id, descriptor: b)
        case 0x03: command = .createSampler(id: id, descriptor: b)
        case 0x04: command = .createShader(id: id, code: b)
        case 0x05: command = .createRenderPipeline(id: id, descriptor: b)
        case 0x06: command = .createComputePipeline(id: id, descriptor: b)
        case 0x09: command = .createQuerySet(id: id, descriptor: b)
        case 0x0A: command = .createBindGroupLayout(id: id, descriptor: b)
        case 0x0B: command = .createImageBitmap(id: id, data: b)
        case 0x0C: command = .createPipelineLayout(id: id, descriptor: b)
        default: command = .createRenderBundle(id: id, descriptor: b)
        }
      case 0x07:
        size = 12
        try need(size)
        command = .createBindGroup(id: u16(0), layout: u16(2), entries: blob(4))
      case 0x08:
        size = 12
        try need(size)
        command = .createTextureView(id: u16(0), texture: u16(2), descriptor: blob(4))
      case 0x10:
        if layout == .legacy {
          size = 6
          try need(size)
          command = .beginRenderPass(
            colors: [ColorAttachment(texture: u16(0), load: u8(2), store: u8(3), clear: nil)],
            depth: u16(4), resolve: nil)
        } else {
          size = 12
          try need(size)
          let clear = ClearColor.unorm8(u8(6), u8(7), u8(8), u8(9))
          command = .beginRenderPass(
            colors: [ColorAttachment(texture: u16(0), load: u8(2), store: u8(3), clear: clear)],
            depth: u16(4), resolve: u16(10))
        }
      case 0x53:
        size = 24
        try need(size)
        let clear = ClearColor.float(f32(6), f32(10), f32(14), f32(18))
        command = .beginRenderPass(
          colors: [ColorAttachment(texture: u16(0), load: u8(2), store: u8(3), clear: clear)],
          depth: u16(4), resolve: u16(22))
      case 0x1B, 0x54:
        try need(1)
        let n = Int(u8(0))
        let each = op == 0x1B ? 8 : 20
        size = 1 + n * each + 2
        try need(size)
        var colors: [ColorAttachment] = []
        for i in 0..<n {
          let a = 1 + i * each
          let clear =
            op == 0x1B
            ? ClearColor.unorm8(u8(a + 4), u8(a + 5), u8(a + 6), u8(a + 7))
            : ClearColor.float(f32(a + 4), f32(a + 8), f32(a + 12), f32(a + 16))
          colors.append(
            ColorAttachment(texture: u16(a), load: u8(a + 2), store: u8(a + 3), clear: clear))
        }
        command = .beginRenderPass(colors: colors, depth: u16(1 + n * each), resolve: nil)
      case 0x11:
        size = 0
        command = .beginComputePass
      case 0x12:
        size = 2
        try need(size)
        command = .setPipeline(id: u16(0))
      case 0x13, 0x14:
        size = 3
        try need(size)
        command =
          op == 0x13
          ? .setBindGroup(slot: u8(0), id: u16(1)) : .setVertexBuffer(slot: u8(0), id: u16(1))
      case 0x15:
        size = 16
        try need(size)
        command = .draw(
          vertexCount: u32(0), instanceCount: u32(4), firstVertex: u32(8), firstInstance: u32(12))
      case 0x16:
        size = 20
        try need(size)
        command = .drawIndexed(
          indexCount: u32(0), instanceCount: u32(4), firstIndex: u32(8),
          baseVertex: Int32(bitPattern: u32(12)), firstInstance: u32(16))
      case 0x17:
        size = 0
        command = .endPass
      case 0x18:
        size = 12
        try need(size)
        command = .dispatch(x: u32(0), y: u32(4), z: u32(8))
      case 0x19:
        size = 3
        try need(size)
        command = .setIndexBuffer(id: u16(0), format: u8(2))
      case 0x1A:
        try need(1)
        let n = Int(u8(0))
        size = 1 + 2 * n
        try need(size)
        command = .executeBundles(ids: (0..<n).map { u16(1 + 2 * $0) })
      case 0x1C, 0x1D, 0x1E:
        size = 6
        try need(size)
        let (b, o) = (u16(0), u32(2))
        command =
          op == 0x1C
          ? .drawIndirect(buffer: b, offset: o)
          : op == 0x1D
            ? .drawIndexedIndirect(buffer: b, offset: o) : .dispatchIndirect(buffer: b, offset: o)
      case 0x1F:
        size = 24
        try need(size)
        command = .setViewport(
          x: u32(0), y: u32(4), width: u32(8), height: u32(12), minDepth: f32(16),
          maxDepth: f32(20))
      case 0x20:
        size = 14
        try need(size)
        command = .writeBuffer(id: u16(0), offset: u32(2), data: blob(6))
      case 0x21, 0x26:
        size = 8
        try need(size)
        command =
          op == 0x21
          ? .writeTimeUniform(id: u16(0), offset: u32(2), size: u16(6))
          : .writePointerUniform(id: u16(0), offset: u32(2), size: u16(6))
      case 0x22:
        size = 16
        try need(size)
        command = .copyBufferToBuffer(
          source: u16(0), sourceOffset: u32(2), destination: u16(6), destinationOffset: u32(8),
          size: u32(12))
      case 0x23:
        size = 8
        try need(size)
        command = .copyTextureToTexture(
          source: u16(0), destination: u16(2), width: u16(4), height: u16(6))
      case 0x24:
        size = 14
        try need(size)
        command = .writeBufferFromWasm(buffer: u16(0), offset: u32(2), call: u32(6), size: u32(10))
      case 0x25:
        size = 11
        try need(size)
        command = .copyExternalImageToTexture(
          bitmap: u16(0), texture: u16(2), mipLevel: u8(4), x: u16(5), y: u16(7), z: u16(9))
      case 0x27:
        size = 16
        try need(size)
        command = .resolveQuerySet(
          querySet: u16(0), first: u32(2), count: u32(6), destination: u16(10),
          destinationOffset: u32(12))
      case 0x30:
        size = 10
        try need(size)
        command = .initWasmModule(module: u16(0), data: blob(2))
      case 0x31:
        try need(13)
        let n = Int(u8(12))
        size = 13 + n
        try need(size)
        command = .callWasmFunction(
          call: u16(0), module: u16(2), name: blob(4),
          arguments: Array(bytes[(p + 13)..<(p + size)]))
      case 0x4A:
        size = 6
        try need(size)
        command = .setPassTimestampWrites(querySet: u16(0), beginIndex: u16(2), endIndex: u16(4))
      case 0x4B:
        size = 2
        try need(size)
        command = .setPassOcclusionQuerySet(querySet: u16(0))
      case 0x4C:
        size = 0
        command = .endOcclusionQuery
      case 0x4D, 0x4E:
        size = 4
        try need(size)
        command = op == 0x4D ? .beginOcclusionQuery(index: u32(0)) : .setStencilReference(u32(0))
      case 0x4F:
        size = 16
        try need(size)
        command = .setScissorRect(x: u32(0), y: u32(4), width: u32(8), height: u32(12))
      case 0x50:
        size = 4
        try need(size)
        command = .setPassDepthStencilOps(
          depthLoad: u8(0), depthStore: u8(1), stencilLoad: u8(2), stencilStore: u8(3))
      case 0x51:
        size = 16
        try need(size)
        command = .setBlendConstant(f32(0), f32(4), f32(8), f32(12))
      case 0x52:
        size = 8
        try need(size)
        command = .setPassClearValues(depth: f32(0), stencil: u32(4))
      case 0xF0:
        size = 0
        command = .submit
      case 0xFF:
        size = 0
        command = .end
      default:
        throw fail(
          "unknown opcode 0x\(hex2(op)) (its length is unknown: decoding stops)", start, op)
      }
      p += size
      commands.append(DecodedCommand(opcode: op, offset: start, command: command))
    }
    guard commands.count == Int(count) else {
      throw fail(
        "header counts \(count) commands, the buffer holds \(commands.count) in \(total) bytes", 4)
    }
    self.totalLength = total
    self.commandCount = count
    self.flags = flags
    self.commands = commands
  }
}
