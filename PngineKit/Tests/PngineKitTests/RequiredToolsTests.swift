import LIVATestSupport
import PngineTestSupport
import Testing

/// Whether the manifest built the WebGPU backend and its tests (it leaves them out when it finds
/// no `wgpu-native.pc`, Package.swift).
let webGPUInBuild: Bool = {
  #if PNGINE_WEBGPU_LEFT_OUT
    return false
  #else
    return true
  #endif
}()

/// The tests that need wgpu-native live in a target the manifest leaves out when it finds no
/// `wgpu-native.pc`: nothing in that target can report itself as skipped. These two do, from
/// a target that is always built: a skipped line in every run without wgpu-native, and, with
/// LIVA_REQUIRE_ALL_TOOLS=1 (CI), a failure.
@Suite("Required tools")
struct RequiredToolsTests {
  @Test(
    "the WebGPU backend and its tests are in this build",
    .enabled(
      if: webGPUInBuild || requireAllTools,
      "wgpu-native was not found: PngineWebGPU and its tests (about 50) were left out; run scripts/setup-wgpu.sh"
    ))
  func webGPUBuilt() {
    #expect(
      webGPUInBuild,
      "wgpu-native was not found (no wgpu-native.pc, or PNGINE_NO_WEBGPU=1): PngineWebGPU and its tests were left out; run scripts/setup-wgpu.sh"
    )
  }
}
