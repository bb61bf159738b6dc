import CWGPU
import Foundation
import LIVATestSupport
import PngineKit
import PngineTestSupport
import PngineWebGPU
import Testing

/// A fixture presented on an X11 window's surface and compared with the same frames drawn
/// offscreen.
struct SurfaceCase: CustomTestStringConvertible, Sendable {
  var name: String
  var file: String
  var size: UInt32 = 256
  /// The times of the frames presented; the window is read after the last.
  var times: [Float]

  var testDescription: String { name }
}

let surfaceCases: [SurfaceCase] = [
  SurfaceCase(name: "triangle-t0", file: triangle, times: [0]),
  SurfaceCase(name: "cube-t0", file: cube, times: [0]),
  SurfaceCase(name: "cube-t1", file: cube, times: [0.5, 1]),
  SurfaceCase(name: "boids-frame2", file: boids, size: 128, times: [0, 1.0 / 60, 2.0 / 60]),
]

/// Share of pixels whose channels all lie within 2/255: the snapshot tests' measure and their
/// tolerance for rasterisation. The presented and the offscreen frames come from the same
/// driver, so anything below it is the surface path's fault (format, swizzle, size, a frame
/// not presented).
let surfaceTolerance = 0.985

/// `image` as a window shows it: the same colours, alpha 255 (an X window has no alpha; the
/// surface is configured `opaque`).
func opaque(_ image: RGBAImage) -> RGBAImage {
  var copy = image
  for i in 0..<(copy.width * copy.height) { copy.pixels[i * 4 + 3] = 255 }
  return copy
}

/// The offscreen render of `file` at `width × height` after the frames at `times`, opaque.
func offscreen(_ file: String, width: UInt32, height: UInt32, times: [Float]) throws -> RGBAImage {
  let renderer = try PngineRenderer(png: try fixture(file), width: width, height: height)
  for t in times.dropLast() { try renderer.draw(time: t) }
  return opaque(try renderer.render(time: times.last!))
}

/// Runs `body` with a display (a private Xvfb, see ``XDisplay``) and a mapped window; the
/// server is stopped after `body`, whose GPU objects must be gone by then.
func withWindow<T>(
  width: UInt32, height: UInt32, _ body: (XDisplay, Xlib.Window) throws -> T
) throws -> T {
  try requireTool(
    XDisplay.available, "an X display (libX11, and Xvfb or DISPLAY: scripts/setup-wgpu.sh)")
  let x = try XDisplay()
  defer { x.close() }
  let errorsBefore = xlibErrors.withLock { $0 }
  let result = try body(x, x.window(width: width, height: height))
  #expect(xlibErrors.withLock { $0 } == errorsBefore, "Xlib reported errors")
  return result
}

/// The surface path on a real window: an X11 window on a private Xvfb, presented through
/// wgpu's Vulkan surface on lavapipe, read back with `XGetImage`. Skipped where there is no
/// libX11 or no Xvfb/`DISPLAY`, unless LIVA_REQUIRE_ALL_TOOLS=1 (then they fail).
@Suite(
  .serialized, .disturbsProcess,
  .enabled(
    if: XDisplay.available || requireAllTools, "no X display: needs libX11 and Xvfb (or DISPLAY)"))
struct SurfaceTests {
  @Test(arguments: surfaceCases)
  func presentedPixelsMatchTheOffscreenRender(_ c: SurfaceCase) throws {
    let reference = try offscreen(c.file, width: c.size, height: c.size, times: c.times)
    let shown = try withWindow(width: c.size, height: c.size) { x, window in
      let renderer = try PngineRenderer(
        png: try fixture(c.file), surface: x.source(window), width: c.size, height: c.size,
        devices: x.devices)
      #expect(renderer.backend.isSurface)
      #expect(renderer.backend.canvasFormat == WGPUTextureFormat_BGRA8Unorm)
      for t in c.times { #expect(try renderer.present(time: t) == .presented(.optimal)) }
      #expect(renderer.framesRendered == c.times.count)
      return x.pixels(window, width: Int(c.size), height: Int(c.size))
    }
    let image = try #require(shown)
    let similarity = image.similarity(to: reference)
    print("surface \(c.name): presented vs offscreen similarity \(similarity)")
    #expect(similarity >= surfaceTolerance, "\(c.name): \(similarity)")
  }

  @Test func theTrianglesPixelsAreTheShadersOnTheWindow() throws {
    let image = try withWindow(width: 256, height: 256) { x, window in
      let renderer = try PngineRenderer(
        png: try fixture(triangle), surface: x.source(window), width: 256, height: 256,
        devices: x.devices)
      try renderer.present(time: 0)
      return x.pixels(window, width: 256, height: 256)
    }
    let shown = try #require(image)
    #expect(shown[128, 128] == [255, 0, 0, 255])  // fragMain: vec4(1, 0, 0, 1), not swizzled
    for (x, y) in [(0, 0), (255, 0), (0, 255), (255, 255)] {
      #expect(shown[x, y] == [0, 0, 0, 255])  // the clear (0, 0, 0, 0), shown opaque
    }
  }

  @Test func theComparisonTellsFramesApart() throws {
    let t0 = try offscreen(cube, width: 128, height: 128, times: [0])
    let t1 = try offscreen(cube, width: 128, height: 128, times: [1])
    let shown = try withWindow(width: 128, height: 128) { x, window in
      let renderer = try PngineRenderer(
        png: try fixture(cube), surface: x.source(window), width: 128, height: 128,
        devices: x.devices)
      try renderer.present(time: 1)
      return x.pixels(window, width: 128, height: 128)
    }
    let image = try #require(shown)
    #expect(image.similarity(to: t1) >= surfaceTolerance)
    #expect(image.similarity(to: t0) < 0.9)  // the other frame is told apart
  }

  @Test func aResizeReconfiguresTheSurfaceAndRemakesCanvasSizedTextures() throws {
    // The cube has a canvas-sized depth texture: drawn at the new size, it must be remade.
    let reference = try offscreen(cube, width: 160, height: 96, times: [1])
    let shown = try withWindow(width: 256, height: 256) { x, window in
      let renderer = try PngineRenderer(
        png: try fixture(cube), surface: x.source(window), width: 256, height: 256,
        devices: x.devices)
      #expect(try renderer.present(time: 0) == .presented(.optimal))
      _ = x.xlib.resizeWindow(x.display, window, 160, 96)
      _ = x.xlib.sync(x.display, 0)
      try renderer.resize(width: 160, height: 96)
      #expect(renderer.backend.width == 160 && renderer.backend.height == 96)
      #expect(try renderer.present(time: 1) == .presented(.optimal))
      return x.pixels(window, width: 160, height: 96)
    }
    let image = try #require(shown)
    let similarity = image.similarity(to: reference)
    print("surface resize 256² → 160×96: similarity \(similarity)")
    #expect(similarity >= surfaceTolerance)
  }

  @Test func aWindowThatIsGoneIsATypedErrorNotACrash() throws {
    try withWindow(width: 64, height: 64) { x, window in
      let renderer = try PngineRenderer(
        png: try fixture(triangle), surface: x.source(window), width: 64, height: 64,
        devices: x.devices)
      #expect(try renderer.present(time: 0) == .presented(.optimal))
      _ = x.xlib.destroyWindow(x.display, window)
      _ = x.xlib.sync(x.display, 0)
      for _ in 0..<2 {
        let error = #expect(throws: PngineError.self) { try renderer.present(time: 0.1) }
        print("gone window: \(String(describing: error))")
        #expect(error?.code == .surfaceFailed)
        #expect(error?.location.call == "acquireCanvas")
      }
      #expect(renderer.framesRendered == 1)  // the executor's frame did not run
      let resize = #expect(throws: PngineError.self) { try renderer.resize(width: 32, height: 32) }
      #expect(resize?.code == .surfaceFailed)
    }
  }

  @Test func aSurfaceIsPresentedNotReadBack() throws {
    try withWindow(width: 32, height: 32) { x, window in
      let backend = try WebGPUBackend(
        surface: x.source(window), width: 32, height: 32, devices: x.devices)
      let error = #expect(throws: PngineError.self) { _ = try backend.readCanvas() }
      #expect(error?.code == .invalidArgument)
      // Acquiring twice answers the held texture; presenting lets it go; nothing drawn is
      // fine (the texture is shown as it is).
      #expect(try backend.acquireCanvas() == .optimal)
      #expect(try backend.acquireCanvas() == .optimal)
      try backend.present()
      try backend.present()  // nothing held: nothing to do
    }
  }

  @Test func theDriverPresentsOnASurface() throws {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = 30
    let (time, shown) = try withWindow(width: 96, height: 96) { x, window in
      let driver = PngineRenderDriver(
        png: try fixture(cube), surface: x.source(window), width: 96, height: 96,
        configuration: configuration, devices: x.devices)
      driver.load(now: 0)
      for tick in 0..<12 { driver.tick(now: Double(tick) / 60) }
      #expect(driver.framesRendered == 6)
      #expect(driver.lastSurfaceFrame == .presented(.optimal))
      #expect(driver.lastImage == nil)
      #expect(driver.lastError == nil)
      let last = driver.actions.compactMap { if case .render(let t, _) = $0 { t } else { nil } }
      return (last.last, x.pixels(window, width: 96, height: 96))
    }
    let t = try #require(time)
    let reference = try offscreen(cube, width: 96, height: 96, times: [Float(t)])
    let similarity = try #require(shown).similarity(to: reference)
    print("surface driver: last frame t=\(t), similarity \(similarity)")
    #expect(similarity >= surfaceTolerance)
  }

  @Test func aGoneWindowMakesTheDriversPlayerPauseByItsPolicy() throws {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = nil
    configuration.maximumConsecutiveFailures = 3
    try withWindow(width: 32, height: 32) { x, window in
      let driver = PngineRenderDriver(
        png: try fixture(triangle), surface: x.source(window), width: 32, height: 32,
        configuration: configuration, devices: x.devices)
      driver.load(now: 0)
      driver.tick(now: 0)
      #expect(driver.framesRendered == 1)
      _ = x.xlib.destroyWindow(x.display, window)
      _ = x.xlib.sync(x.display, 0)
      for tick in 1...5 { driver.tick(now: Double(tick) / 60) }
      #expect(driver.player.phase == .paused)
      #expect(driver.player.pauseReason == .failures)
      #expect(driver.lastError?.code == .surfaceFailed)
      #expect(driver.framesRendered == 1)
    }
  }
}

/// What needs no display: the status mapping and the format and alpha choices.
struct SurfaceChoiceTests {
  @Test func everyCurrentTextureStatusMapsToItsCase() {
    let table: [(WGPUSurfaceGetCurrentTextureStatus, SurfaceTextureStatus, Bool, Bool)] = [
      (WGPUSurfaceGetCurrentTextureStatus_SuccessOptimal, .optimal, true, false),
      (WGPUSurfaceGetCurrentTextureStatus_SuccessSuboptimal, .suboptimal, true, false),
      (WGPUSurfaceGetCurrentTextureStatus_Timeout, .timeout, false, true),
      (WGPUSurfaceGetCurrentTextureStatus_Outdated, .outdated, false, true),
      (WGPUSurfaceGetCurrentTextureStatus_Lost, .lost, false, true),
      (WGPUSurfaceGetCurrentTextureStatus_Error, .error(6), false, false),
    ]
    for (raw, status, hasTexture, skips) in table {
      let mapped = SurfaceTextureStatus(rawStatus: raw.rawValue)
      #expect(mapped == status)
      #expect(mapped.hasTexture == hasTexture, "\(mapped)")
      #expect(mapped.skipsFrame == skips, "\(mapped)")
    }
    #expect(SurfaceTextureStatus(rawStatus: 0) == .error(0))
    #expect(SurfaceTextureStatus(rawStatus: 0x7777) == .error(0x7777))
  }

  @Test func theFormatIsNonSRGBEightBitWhenOffered() {
    let bgra = WGPUTextureFormat_BGRA8Unorm
    let rgba = WGPUTextureFormat_RGBA8Unorm
    let bgraSRGB = WGPUTextureFormat_BGRA8UnormSrgb
    let rgbaSRGB = WGPUTextureFormat_RGBA8UnormSrgb
    let half = WGPUTextureFormat_RGBA16Float
    #expect(SurfaceFormatChoice.format(from: [bgraSRGB, bgra, rgbaSRGB, rgba]) == bgra)
    #expect(SurfaceFormatChoice.format(from: [rgbaSRGB, rgba]) == rgba)
    #expect(SurfaceFormatChoice.format(from: [bgraSRGB, half]) == half)
    #expect(SurfaceFormatChoice.format(from: [bgraSRGB]) == bgraSRGB)
    #expect(SurfaceFormatChoice.format(from: []) == nil)
    #expect(SurfaceFormatChoice.name(of: bgra) == "bgra8unorm")
  }

  @Test func theAlphaModeIsOpaqueWhenOffered() {
    let opaque = WGPUCompositeAlphaMode_Opaque
    let inherit = WGPUCompositeAlphaMode_Inherit
    #expect(
      SurfaceFormatChoice.alphaMode(from: [WGPUCompositeAlphaMode_Premultiplied, opaque]) == opaque)
    #expect(SurfaceFormatChoice.alphaMode(from: [inherit]) == inherit)
    #expect(SurfaceFormatChoice.alphaMode(from: []) == WGPUCompositeAlphaMode_Auto)
  }

  @Test func aTransparentCanvasIsPremultipliedWhenOfferedAndNeverOpaque() {
    let opaque = WGPUCompositeAlphaMode_Opaque
    let premultiplied = WGPUCompositeAlphaMode_Premultiplied
    let unpremultiplied = WGPUCompositeAlphaMode_Unpremultiplied
    let inherit = WGPUCompositeAlphaMode_Inherit
    func mode(_ modes: [WGPUCompositeAlphaMode]) -> WGPUCompositeAlphaMode {
      SurfaceFormatChoice.alphaMode(from: modes, transparent: true)
    }
    #expect(mode([opaque, unpremultiplied, premultiplied]) == premultiplied)
    #expect(mode([opaque, inherit]) == inherit)  // the layer's own setting decides
    #expect(mode([opaque, unpremultiplied]) == unpremultiplied)
    #expect(mode([opaque]) == opaque)  // nothing else offered: opaque it is
    #expect(
      SurfaceFormatChoice.alphaMode(from: [premultiplied, opaque], transparent: false) == opaque)
  }

  @Test(.disturbsProcess) func anOffscreenBackendHasNoSurfaceToResizeOrPresent() throws {
    let backend = try WebGPUBackend(width: 16, height: 16)
    #expect(!backend.isSurface)
    #expect(backend.canvasFormat == WGPUTextureFormat_RGBA8Unorm)
    #expect(try backend.acquireCanvas() == .optimal)
    try backend.present()
    let error = #expect(throws: PngineError.self) { try backend.resize(width: 8, height: 8) }
    #expect(error?.code == .invalidArgument)
    let driver = PngineRenderDriver(png: [], width: 16, height: 16)
    #expect(throws: PngineError.self) { try driver.resize(width: 8, height: 8) }
  }
}
