import Testing

@testable import PngineKit

@Suite("The pointer uniform (0x26), as upstream's web host fills it")
struct PointerTests {
  func floats(_ bytes: [UInt8]) -> [Float] {
    stride(from: 0, to: bytes.count, by: 4).map { i in
      Float(
        bitPattern: UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16
          | UInt32(bytes[i + 3]) << 24)
    }
  }

  @Test("at rest: 48 zero bytes; cut to the command's size in whole floats")
  func atRest() {
    let pointer = PointerState()
    #expect(pointer.uniformBytes(size: 48) == [UInt8](repeating: 0, count: 48))
    #expect(pointer.uniformBytes(size: 100).count == 48)
    #expect(pointer.uniformBytes(size: 10).count == 8)
  }

  @Test("down, move, up: position 0…1 from the top left, click sign, movement since the frame")
  func press() {
    var pointer = PointerState()
    pointer.down(x: 0.25, y: 0.75, buttons: 1, pressure: 0)
    var f = floats(pointer.uniformBytes(size: 48))
    #expect(Array(f[0..<4]) == [0.25, 0.75, 0.25, 0.75])  // x, y, click at x, y (pressed: +)
    #expect(f[6] == 1 && f[7] == 0.5)  // left button; a pressure of 0 reads as 0.5
    pointer.move(x: 0.5, y: 0.5)
    pointer.move(x: 1.5, y: -1)  // clamped into the canvas
    f = floats(pointer.uniformBytes(size: 48))
    #expect(f[0] == 1 && f[1] == 0)
    #expect(f[4] == 0.75 && f[5] == -0.75)  // summed since the last frame
    #expect(f[7] == 0.5)  // a button held while moving
    pointer.frameConsumed()
    f = floats(pointer.uniformBytes(size: 48))
    #expect(f[4] == 0 && f[5] == 0)
    pointer.up()
    f = floats(pointer.uniformBytes(size: 48))
    #expect(f[2] == -0.25 && f[3] == -0.75)  // released: the click's sign turns
    #expect(f[6] == 0 && f[7] == 0)
  }

  @Test("modifiers, wheel steps, and the per-frame reset of the wheel")
  func wheelAndModifiers() {
    var pointer = PointerState()
    pointer.modifiers = [.shift, .alt]
    pointer.scroll(dx: 0, dy: 12)
    pointer.scroll(dx: -3, dy: 40)
    var f = floats(pointer.uniformBytes(size: 48))
    #expect(f[8] == 5)  // shift 1 + alt 4
    #expect(f[9] == -1 && f[10] == 2)  // ±1 a wheel event, +y is down
    #expect(f[11] == 0)
    pointer.frameConsumed()
    f = floats(pointer.uniformBytes(size: 48))
    #expect(f[9] == 0 && f[10] == 0)
  }

  @Test("the recording backend writes the frame's pointer into the buffer")
  func recorded() throws {
    let backend = RecordingBackend()
    var pointer = PointerState()
    pointer.down(x: 0.5, y: 0.25, buttons: 2, pressure: 1)
    let inputs = FrameInputs(time: 0, width: 8, height: 8, pointer: pointer)
    let create = DecodedCommand(
      opcode: 0x01, offset: 8, command: .createBuffer(id: 0, size: 64, usage: 0x48))
    let write = DecodedCommand(
      opcode: 0x26, offset: 24, command: .writePointerUniform(id: 0, offset: 0, size: 48))
    try backend.execute([create, write], blobs: [:], call: "frame", inputs: inputs)
    #expect(backend.entries.last?.written == pointer.uniformBytes(size: 48))
  }
}
