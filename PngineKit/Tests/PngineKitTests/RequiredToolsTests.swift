import LIVATestSupport
import PngineTestSupport
import Testing

/// The tests that need wgpu-native live in a target the manifest leaves out when it finds no
/// `wgpu-native.pc` (Package.swift): nothing would report them as skipped. With
/// LIVA_REQUIRE_ALL_TOOLS=1, that is a failure here.
@Suite("Required tools")
struct RequiredToolsTests {
  @Test("with LIVA_REQUIRE_ALL_TOOLS=1, the WebGPU backend and its tests are built")
  func webGPUBuilt() {
    #if PNGINE_WEBGPU_LEFT_OUT
      if requireAllTools {
        Issue.record(
          "wgpu-native was not found (no wgpu-native.pc, or PNGINE_NO_WEBGPU=1): PngineWebGPU and its tests were left out; run scripts/setup-wgpu.sh"
        )
      }
    #endif
  }
}
