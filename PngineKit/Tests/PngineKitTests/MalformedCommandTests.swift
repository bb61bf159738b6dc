import Testing

@testable import PngineKit

/// Values a backend would read as something else are refused with their command's location:
/// op codes outside 0/1 (a store op of 2 was a discard, a load op of 7 a load), an index format
/// outside uint16/uint32 (255 was uint16), and a command buffer whose executor says it dropped
/// commands (the truncated flag, with status 0).
@Suite("Malformed commands are typed errors")
struct MalformedCommandTests {
  static func pass(load: UInt8, store: UInt8) -> DecodedCommand {
    DecodedCommand(
      opcode: 0x10, offset: 8,
      command: .beginRenderPass(
        colors: [ColorAttachment(texture: 0xFFFE, load: load, store: store, clear: nil)],
        depth: 0xFFFF, resolve: nil))
  }

  @Test(
    "color load and store ops other than 0 or 1 are refused",
    arguments: [(0, 2), (7, 0), (1, 255)] as [(UInt8, UInt8)])
  func colorOps(_ load: UInt8, _ store: UInt8) throws {
    var checker = CommandChecker()
    let e = #expect(throws: PngineError.self) {
      try checker.check(Self.pass(load: load, store: store), blob: nil, call: "frame")
    }
    #expect(e?.code == .commandValidation)
    #expect(
      e?.message.hasSuffix("color attachment load op \(load), store op \(store) (each 0 or 1)")
        == true)
    #expect(e?.location == PngineError.Location(byteOffset: 8, opcode: 0x10, call: "frame"))
    // Both 0 and 1 pass.
    var fresh = CommandChecker()
    try fresh.check(Self.pass(load: 1, store: 1), blob: nil, call: "frame")
  }

  @Test("depth/stencil ops other than 0 or 1 are refused")
  func depthOps() throws {
    var checker = CommandChecker()
    try checker.check(
      DecodedCommand(
        opcode: 0x50, offset: 8,
        command: .setPassDepthStencilOps(
          depthLoad: 1, depthStore: 0, stencilLoad: 0, stencilStore: 1)),
      blob: nil, call: "frame")
    let e = #expect(throws: PngineError.self) {
      try checker.check(
        DecodedCommand(
          opcode: 0x50, offset: 13,
          command: .setPassDepthStencilOps(
            depthLoad: 1, depthStore: 2, stencilLoad: 0, stencilStore: 0)),
        blob: nil, call: "frame")
    }
    #expect(e?.code == .commandValidation)
    #expect(e?.location.byteOffset == 13)
  }

  @Test("index formats other than uint16 (0) and uint32 (1) are refused")
  func indexFormat() throws {
    for format: UInt8 in [2, 255] {
      var checker = CommandChecker()
      try checker.check(
        DecodedCommand(
          opcode: 0x01, offset: 8, command: .createBuffer(id: 0, size: 64, usage: 0x10)),
        blob: nil, call: "frame")
      try checker.check(Self.pass(load: 1, store: 0), blob: nil, call: "frame")
      let e = #expect(throws: PngineError.self) {
        try checker.check(
          DecodedCommand(opcode: 0x14, offset: 30, command: .setIndexBuffer(id: 0, format: format)),
          blob: nil, call: "frame")
      }
      #expect(e?.message.hasSuffix("index format \(format) (0 uint16, 1 uint32)") == true)
      #expect(e?.location.opcode == 0x14)
    }
  }

  @Test("a command buffer with the truncated flag is refused whole, status 0 or not")
  func truncated() throws {
    var frame = CommandBytes.buffer(
      [CommandBytes.beginRenderPass, CommandBytes.draw, CommandBytes.endPass, CommandBytes.submit])
    frame[6] = 1  // flags: truncated
    let payload = try CommandBytes.executor(init: CommandBytes.buffer([]), frame: frame)
    let animation = PngineAnimation()
    try animation.load(payload: payload)
    let e = #expect(throws: PngineError.self) {
      try animation.frame(time: 0, width: 1, height: 1)
    }
    #expect(e?.code == .commandValidation)
    #expect(e?.message.contains("truncated its command buffer") == true)
    #expect(e?.location == PngineError.Location(byteOffset: 6, call: "frame"))
  }
}
