import PngineKit
import PngineTestSupport
import PngineWebGPU
import Testing

/// What follows a device loss, in process (the hostile routes that need a child process are
/// `pngine render`'s, in Tools/Tests/PngineToolTests).
@Suite(.serialized, .disturbsProcess)
struct DeviceLossTests {
  // Route 3: a submit on a lost device.

  @Test("frames after the device is lost are typed errors, the read-back too")
  func lostDevice() throws {
    let renderer = try PngineRenderer(
      png: try fixture(triangle), width: 32, height: 32, devices: PngineDeviceProvider())
    _ = try renderer.render(time: 0)
    renderer.backend.loseDevice()
    let frame = #expect(throws: PngineError.self) { try renderer.draw(time: 0.5) }
    #expect(frame?.code == .deviceLost)
    let read = #expect(throws: PngineError.self) { try renderer.backend.readCanvas() }
    #expect(read?.code == .deviceLost)
  }
}
