// `pngine render` exists only with the WebGPU backend.
#if !PNGINE_WEBGPU_LEFT_OUT
  import Foundation
  import LIVATestSupport
  import PngineKit
  import Testing

  /// `pngine render` itself: frames as PNGs, the video when ffmpeg is there.
  @Suite(
    .enabled(if: pngineBinary != nil || requireAllTools, "the pngine executable is not built"))
  struct RenderCommandTests {
    @Test func renderWritesOnePictureATimeAndTheyMatchTheRenderer() async throws {
      let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
        "pngine-render-\(UUID().uuidString)")
      defer { try? FileManager.default.removeItem(at: folder) }
      let run = try await runPngine([
        "render",
        Fixtures.root.appendingPathComponent("pngs/examples_vite-gallery_shaders_triangle.png")
          .path, "--times", "0,0.5", "--size",
        "64x48", "-o", folder.path,
      ]
      )
      #expect(run.status == 0)
      let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
      #expect(names == ["frame_00000.png", "frame_00001.png"])
      let image = try RGBAImage(
        png: [UInt8](try Data(contentsOf: folder.appendingPathComponent("frame_00000.png"))))
      #expect(image.width == 64 && image.height == 48)
      #expect(image[32, 24] == [255, 0, 0, 255])
    }
  }
#endif
