import PngineKit
import PngineTestSupport
import PngineWebGPU
import Testing

/// The player driving the renderer on a virtual clock: no sleeping, time is an argument.
@Suite(.serialized, .disturbsProcess)
struct DriverTests {
  @Test func thirtyFramesASecondOnSixtyHertzTicksDrawEveryOtherTick() throws {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = 30
    let driver = PngineRenderDriver(
      png: try fixture(cube), width: 64, height: 64, configuration: configuration)
    driver.load(now: 0)
    #expect(driver.player.phase == .playing)
    for tick in 0..<12 { driver.tick(now: Double(tick) / 60) }
    #expect(driver.framesRendered == 6)
    #expect(driver.player.frameCounter == 6)
    #expect(driver.lastImage?.width == 64)
    #expect(driver.renderer?.animation.diagnostics.snapshot.frames == 6)
  }

  @Test func theActionLogKeepsOnlyTheLatestActions() throws {
    let driver = PngineRenderDriver(png: try fixture(cube), width: 8, height: 8)
    driver.load(now: 0)
    let ticks = PngineRenderDriver.actionHistoryLimit + 100
    for tick in 1...ticks { driver.tick(now: Double(tick) / 60) }
    #expect(driver.framesRendered >= ticks)
    #expect(driver.actions.count == PngineRenderDriver.actionHistoryLimit)
    // The newest are kept: the load is gone, the last tick's render is there.
    #expect(!driver.actions.contains(.load))
    let last = driver.actions.last.flatMap { if case .render(let t, _) = $0 { t } else { nil } }
    #expect(last == Double(ticks - 1) / 60)  // animation time starts at the first tick
  }

  @Test func aMemoryWarningEmptiesTheExecutorPoolAndKeepsTheFrame() throws {
    let driver = PngineRenderDriver(png: try fixture(cube), width: 32, height: 32)
    var purges = 0
    driver.purgeExecutors = { purges += 1 }
    driver.load(now: 0)
    driver.tick(now: 0)
    let frames = driver.framesRendered
    driver.memoryWarning(now: 0.1)
    #expect(purges == 1)
    #expect(driver.actions.last == .purge(.light))
    driver.enterBackground(now: 0.2)
    driver.memoryWarning(now: 0.3)
    #expect(purges == 2)
    #expect(driver.actions.last == .purge(.deep))
    driver.enterForeground(now: 0.4)
    driver.tick(now: 0.5)
    // Still loaded: the purge took nothing the animation uses.
    #expect(driver.renderer != nil)
    #expect(driver.framesRendered == frames + 1)
  }

  @Test func settingsChangedWhilePlayingTakeEffectOnTheNextTick() throws {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = 30
    let driver = PngineRenderDriver(
      png: try fixture(cube), width: 32, height: 32, configuration: configuration)
    driver.load(now: 0)
    for tick in 0...60 { driver.tick(now: Double(tick) / 60) }
    #expect(abs(driver.player.time - 1) < 1e-9)
    driver.configure { $0.speed = 2 }
    for tick in 61...120 { driver.tick(now: Double(tick) / 60) }
    #expect(abs(driver.player.time - 3) < 1e-9)
  }

  @Test func aLostDeviceWithNoRecoveriesLeftPausesThePlayer() throws {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = nil
    configuration.maximumConsecutiveFailures = 3
    configuration.maximumDeviceRecoveries = 0
    // A device of its own: losing it touches no other test.
    let driver = PngineRenderDriver(
      png: try fixture(triangle), width: 32, height: 32, configuration: configuration,
      devices: PngineDeviceProvider())
    driver.load(now: 0)
    driver.tick(now: 0)
    #expect(driver.framesRendered == 1)
    driver.renderer?.backend.loseDevice()
    for tick in 1...5 { driver.tick(now: Double(tick) / 60) }
    #expect(driver.player.phase == .paused)
    #expect(driver.player.pauseReason == .failures)
    #expect(driver.lastError?.code == .deviceLost)
    // The GPU's error is in the animation's diagnostics, as the executor's would be.
    let diagnostics = try #require(driver.renderer?.animation.diagnostics.snapshot)
    #expect(diagnostics.errors == 1 && diagnostics.lastError?.code == .deviceLost)
    // A device that cannot be replaced does not come back: paused at the first loss.
    #expect(driver.actions.contains { if case .autoPaused(1, _) = $0 { true } else { false } })
    #expect(driver.framesRendered == 1)
  }

  @Test func errorsAndTheEndReachTheAppsCallbacks() throws {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = nil
    configuration.duration = 0.05
    configuration.loopMode = .playOnce
    let driver = PngineRenderDriver(
      png: try fixture(triangle), width: 32, height: 32, configuration: configuration,
      devices: PngineDeviceProvider())
    var errors: [PngineError.Code] = []
    var finished = 0
    driver.onError = { errors.append($0.code) }
    driver.onFinished = { finished += 1 }
    driver.load(now: 0)
    for tick in 0..<6 { driver.tick(now: Double(tick) / 60) }
    #expect(finished == 1)
    #expect(errors.isEmpty)
    // A lost device: every failed frame reaches the app, with its code.
    driver.seek(toProgress: 0, now: 0.2)
    driver.play(now: 0.2)
    driver.renderer?.backend.loseDevice()
    driver.tick(now: 0.25)
    driver.tick(now: 0.3)
    #expect(!errors.isEmpty && errors.allSatisfy { $0 == .deviceLost })
    // A PNG that is not one: the load error too.
    let broken = PngineRenderDriver(png: [1, 2, 3], width: 8, height: 8)
    var loadErrors: [PngineError.Code] = []
    broken.onError = { loadErrors.append($0.code) }
    broken.load(now: 0)
    #expect(loadErrors == [.invalidPNG])
    #expect(broken.player.phase == .failed)
  }

  @Test func stopStartsTheExecutorOverToo() throws {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = nil
    let driver = PngineRenderDriver(
      png: try fixture(boids), width: 64, height: 64, configuration: configuration)
    driver.load(now: 0)
    driver.tick(now: 0)
    let first = try #require(driver.lastImage)
    for tick in 1...10 { driver.tick(now: Double(tick) / 60) }
    #expect(driver.lastImage != first)  // the flock moved
    driver.stop(now: 0.5)
    #expect(try driver.renderer?.animation.frameCounter() ?? 0 == 0)
    driver.play(now: 0.6)
    driver.tick(now: 0.6)
    // The same first frame as at the start: the simulation's state started over, not only time.
    #expect(driver.lastImage == first)
    #expect(driver.player.frameCounter == 1)
  }

  @Test func aSnapshotIsTheFrameOnScreenAsAPNG() throws {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = nil
    let driver = PngineRenderDriver(
      png: try fixture(cube), width: 48, height: 32, configuration: configuration)
    #expect(driver.snapshotPNG() == nil)  // nothing drawn yet
    driver.load(now: 0)
    for tick in 0...30 { driver.tick(now: Double(tick) / 60) }
    let png = try #require(driver.snapshotPNG())
    let decoded = try RGBAImage(png: png)
    // The same picture as an offscreen render of the same time (the cube is a function of time).
    let offscreen = try PngineRenderer(png: try fixture(cube), width: 48, height: 32)
      .render(time: Float(driver.player.time))
    #expect(decoded == offscreen)
    #expect(decoded.width == 48 && decoded.height == 32)
  }

  @Test func aLostDeviceIsReplacedAndPlaybackGoesOn() throws {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = nil
    let driver = PngineRenderDriver(
      png: try fixture(cube), width: 32, height: 32, configuration: configuration,
      devices: PngineDeviceProvider())
    var errors: [PngineError.Code] = []
    driver.onError = { errors.append($0.code) }
    driver.load(now: 0)
    driver.tick(now: 0)
    let lostDevice = try #require(driver.renderer)
    lostDevice.backend.loseDevice()
    for tick in 1...5 { driver.tick(now: Double(tick) / 60) }
    #expect(errors == [.deviceLost])  // reported once, then recovered
    #expect(driver.player.phase == .playing)
    #expect(driver.player.deviceRecoveries == 1)
    #expect(driver.renderer !== lostDevice)  // a new device, its resources made again
    #expect(driver.framesRendered == 5)  // every tick but the one that found the loss
    // The frame after recovery is the cube at that time, as a fresh render draws it.
    let fresh = try PngineRenderer(png: try fixture(cube), width: 32, height: 32)
      .render(time: Float(driver.player.time))
    #expect(driver.lastImage == fresh)
  }
}
