import PngineKit
import Testing

/// Each opcode decoded from hand-written bytes (little-endian arguments, as the executor ABI
/// lays them out) into the command it means: the opcodes no fixture emits included.
struct OpcodeTests {
  struct Case: CustomTestStringConvertible, Sendable {
    var opcode: UInt8
    var arguments: [UInt8]
    var expected: Command
    var testDescription: String { "0x" + String(opcode, radix: 16) }
  }

  static func u16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
  static func u32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(v >> ($0 * 8) & 0xFF) } }
  static func f32(_ v: Float) -> [UInt8] { u32(v.bitPattern) }

  static let cases: [Case] = [
    Case(
      opcode: 0x1A, arguments: [3] + u16(7) + u16(8) + u16(0xFFFE),
      expected: .executeBundles(ids: [7, 8, 0xFFFE])),
    Case(
      opcode: 0x1B,
      arguments: [2] + u16(5) + [1, 0] + [10, 20, 30, 40] + u16(0xFFFE) + [0, 1] + [1, 2, 3, 4]
        + u16(9),
      expected: .beginRenderPass(
        colors: [
          ColorAttachment(texture: 5, load: 1, store: 0, clear: .unorm8(10, 20, 30, 40)),
          ColorAttachment(texture: 0xFFFE, load: 0, store: 1, clear: .unorm8(1, 2, 3, 4)),
        ], depth: 9, resolve: nil)),
    Case(
      opcode: 0x31, arguments: u16(4) + u16(2) + u32(0x100) + u32(6) + [3, 9, 8, 7],
      expected: .callWasmFunction(
        call: 4, module: 2, name: BlobRef(pointer: 0x100, length: 6), arguments: [9, 8, 7])),
    Case(
      opcode: 0x4A, arguments: u16(3) + u16(0) + u16(1),
      expected: .setPassTimestampWrites(querySet: 3, beginIndex: 0, endIndex: 1)),
    Case(opcode: 0x4B, arguments: u16(6), expected: .setPassOcclusionQuerySet(querySet: 6)),
    Case(opcode: 0x4C, arguments: [], expected: .endOcclusionQuery),
    Case(opcode: 0x4D, arguments: u32(12), expected: .beginOcclusionQuery(index: 12)),
    Case(opcode: 0x4E, arguments: u32(0xFF), expected: .setStencilReference(0xFF)),
    Case(
      opcode: 0x4F, arguments: u32(1) + u32(2) + u32(30) + u32(40),
      expected: .setScissorRect(x: 1, y: 2, width: 30, height: 40)),
    Case(
      opcode: 0x50, arguments: [1, 0, 0, 1],
      expected: .setPassDepthStencilOps(
        depthLoad: 1, depthStore: 0, stencilLoad: 0, stencilStore: 1)),
    Case(
      opcode: 0x51, arguments: f32(0.25) + f32(0.5) + f32(0.75) + f32(1),
      expected: .setBlendConstant(0.25, 0.5, 0.75, 1)),
    Case(
      opcode: 0x52, arguments: f32(0.5) + u32(3),
      expected: .setPassClearValues(depth: 0.5, stencil: 3)),
    Case(
      opcode: 0x53,
      arguments: u16(0xFFFE) + [1, 0] + u16(0xFFFF) + f32(0.1) + f32(0.2) + f32(0.3) + f32(1)
        + u16(0xFFFF),
      expected: .beginRenderPass(
        colors: [
          ColorAttachment(texture: 0xFFFE, load: 1, store: 0, clear: .float(0.1, 0.2, 0.3, 1))
        ],
        depth: 0xFFFF, resolve: 0xFFFF)),
    Case(
      opcode: 0x54,
      arguments: [1] + u16(4) + [1, 0] + f32(1) + f32(0) + f32(0.5) + f32(1) + u16(0xFFFF),
      expected: .beginRenderPass(
        colors: [ColorAttachment(texture: 4, load: 1, store: 0, clear: .float(1, 0, 0.5, 1))],
        depth: 0xFFFF, resolve: nil)),
  ]

  @Test(arguments: cases)
  func decodes(_ c: Case) throws {
    let body = [c.opcode] + c.arguments
    let buffer = Self.u32(UInt32(8 + body.count)) + Self.u16(1) + Self.u16(0) + body
    let decoded = try CommandBuffer(decoding: buffer, layout: .current)
    #expect(decoded.commands.map(\.command) == [c.expected])
    #expect(decoded.commands.first?.opcode == c.opcode)
    // One byte short: the command runs past the buffer, a typed error.
    if !c.arguments.isEmpty {
      let short = Array(body.dropLast())
      let error = #expect(throws: PngineError.self) {
        try CommandBuffer(
          decoding: Self.u32(UInt32(8 + short.count)) + Self.u16(1) + Self.u16(0) + short,
          layout: .current)
      }
      #expect(error?.code == .invalidCommandBuffer)
    }
  }
}
