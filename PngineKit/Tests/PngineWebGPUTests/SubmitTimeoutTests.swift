import Foundation
import PngineKit
import PngineTestSupport
import Testing

@testable import PngineWebGPU

/// A frame whose GPU work is within every budget but slow per invocation (boids' simulation,
/// where each invocation loops over every particle, dispatched 32 × 32 rather than 32 × 1:
/// over a second on lavapipe, which runs it inside the submit). The submit's time limit ends
/// it: a typed error near the limit, the device given up, every other animation on it moved to
/// a new device, and the app's thread free. The long fuzz runs of generated executors found
/// this class (the same dispatch at up to 32 × 1023, past the harness's 60 s per input).
@Suite(.serialized, .disturbsProcess)
struct SubmitTimeoutTests {
  /// Boids with both of its frame's dispatches at `x × y`.
  static func slowBoids(x: UInt32 = 32, y: UInt32 = 32) throws -> [UInt8] {
    var scene = try ExecutorFuzzer.Scene.record(png: try fixture(boids))
    let le32 = { (v: UInt32) in (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    var dispatches = 0
    for index in scene.frameOps.indices where scene.frameOps[index].bytes.first == 0x18 {
      scene.frameOps[index] = ExecutorFuzzer.Op(bytes: [0x18] + le32(x) + le32(y) + le32(1))
      dispatches += 1
    }
    #expect(dispatches == 2, "boids' frame dispatches twice")
    return ExecutorFuzzer.png(scene)
  }

  static func limits(_ timeout: Duration) -> GPULimits {
    var limits = GPULimits()
    limits.submitTimeout = timeout
    return limits
  }

  @Test(
    "past the submit time limit: gpuTimeout near the limit, the others move to a new device"
  )
  func overrunGivesTheDeviceUp() throws {
    let devices = PngineDeviceProvider()
    let healthy = try PngineRenderer(
      png: try fixture(triangle), width: 32, height: 32, devices: devices)
    let before = try healthy.render(time: 0.5)
    let slow = try PngineRenderer(
      png: try Self.slowBoids(), width: 32, height: 32, limits: Self.limits(.milliseconds(100)),
      devices: devices)

    let clock = ContinuousClock()
    let started = clock.now
    do {
      _ = try slow.render(time: 0.5)
      Issue.record("the slow frame rendered within 0.1 s")
    } catch {
      #expect(error.code == .gpuTimeout, "\(error)")
      #expect(error.message.contains("0.1 seconds"), "\(error.message)")
    }
    let elapsed = clock.now - started
    #expect(elapsed < .seconds(1), "the caller waited \(elapsed) for a 0.1 s limit")
    #expect(slow.backend.gpuDevice.isGivenUp)
    do {
      _ = try slow.render(time: 1)
      Issue.record("a second frame on a device given up rendered")
    } catch {
      #expect(error.code == .deviceLost, "\(error)")
    }

    // The animation that shared the device: deviceLost, and made again on a new device it
    // renders as before.
    do {
      _ = try healthy.render(time: 0.5)
      Issue.record("an animation on a device given up rendered")
    } catch {
      #expect(error.code == .deviceLost, "\(error)")
    }
    let remade = try PngineRenderer(
      png: try fixture(triangle), width: 32, height: 32, devices: devices)
    #expect(try remade.render(time: 0.5) == before)
    #expect(devices.devicesOpened >= 2)
    #expect(!remade.backend.gpuDevice.isGivenUp)
  }

  @Test("within the default limit the same slow frame renders: the limit is what ends it")
  func defaultLimitLetsSlowWorkFinish() throws {
    let devices = PngineDeviceProvider()
    let slow = try PngineRenderer(
      png: try Self.slowBoids(x: 32, y: 2), width: 32, height: 32, devices: devices)
    _ = try slow.render(time: 0.5)
    #expect(!slow.backend.gpuDevice.isGivenUp)
  }

  @Test("the player pauses at the first timeout, with no reload")
  func driverPausesWithoutReload() throws {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = nil
    configuration.gpuLimits = Self.limits(.milliseconds(100))
    let driver = PngineRenderDriver(
      png: try Self.slowBoids(), width: 32, height: 32, configuration: configuration,
      devices: PngineDeviceProvider())
    var errors: [PngineError.Code] = []
    driver.onError = { errors.append($0.code) }
    driver.load(now: 0)
    for tick in 0..<4 { driver.tick(now: Double(tick) / 60) }
    #expect(errors == [.gpuTimeout])
    #expect(driver.player.phase == .paused)
    #expect(driver.player.pauseReason == .failures)
    #expect(driver.player.deviceRecoveries == 0)
    #expect(!driver.actions.contains { if case .reload = $0 { true } else { false } })
  }
}
