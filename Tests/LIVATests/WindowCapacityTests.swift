import Testing

@testable import LIVA

@Suite("The base-frame window's capacity")
struct WindowCapacityTests {
  @Test("frames the playback form's decoder holds shorten the window, never below two")
  func reserved() {
    let frame = 1280 * 768 * 4
    #expect(BaseFrameWindow.capacity(budget: 32 << 20, frameBytes: frame) == 6)
    #expect(BaseFrameWindow.capacity(budget: 32 << 20, frameBytes: frame, reserved: 2) == 4)
    #expect(BaseFrameWindow.capacity(budget: 16 << 20, frameBytes: frame, reserved: 2) == 2)
    // Small frames: the reach (at most 90 frames) is the same either way.
    let small = 256 * 256 * 4
    let capacity = BaseFrameWindow.capacity(budget: 32 << 20, frameBytes: small, reserved: 2)
    #expect(capacity == 124 && BaseFrameWindow.reach(capacity: capacity) == 90)
  }
}
