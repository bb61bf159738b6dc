import Foundation
import Locking
import PngineKit
import PngineTestSupport
import PngineWebGPU
import Testing

/// One GPU device for every animation: a gallery opens one, animations on several threads
/// share it without stepping into one another's error scopes, each keeps its own budget, and a
/// lost device is replaced once for all of them. Each test has a provider of its own, so
/// losing its device touches no other test.
@Suite(.serialized, .disturbsProcess)
struct SharedDeviceTests {
  func playing(_ png: String, size: UInt32, devices: PngineDeviceProvider) throws
    -> PngineRenderDriver
  {
    var configuration = PnginePlayer.Configuration()
    configuration.targetFrameRate = nil
    return PngineRenderDriver(
      png: try fixture(png), width: size, height: size, configuration: configuration,
      devices: devices)
  }

  @Test func aGalleryOfTenOpensOneDeviceAndEachDrawsWhatItDrawsAlone() throws {
    let devices = PngineDeviceProvider()
    let names = (0..<10).map { [triangle, cube, boids][$0 % 3] }
    let gallery = try names.enumerated().map { index, name in
      try playing(name, size: UInt32(24 + 8 * index), devices: devices)
    }
    for driver in gallery { driver.load(now: 0) }
    // Interleaved, as one display link drives a gallery.
    for tick in 0...12 {
      for driver in gallery { driver.tick(now: Double(tick) / 60) }
    }
    #expect(devices.devicesOpened == 1)
    let device = try #require(gallery[0].renderer?.backend.gpuDevice)
    #expect(gallery.allSatisfy { $0.renderer?.backend.gpuDevice === device })
    #expect(gallery.allSatisfy { $0.framesRendered == 13 && $0.lastError == nil })
    // Each picture equals the same animation played alone on a device of its own (boids is a
    // simulation: the same ticks; the others are functions of time).
    for (index, name) in names.enumerated() {
      let alone = try playing(name, size: UInt32(24 + 8 * index), devices: PngineDeviceProvider())
      alone.load(now: 0)
      for tick in 0...12 { alone.tick(now: Double(tick) / 60) }
      #expect(alone.renderer?.backend.gpuDevice !== device)
      #expect(gallery[index].lastImage == alone.lastImage, "animation \(index) (\(name))")
    }
  }

  @Test func animationsOnFourThreadsShareTheDeviceAndTheirErrorsStayTheirs() throws {
    let devices = PngineDeviceProvider()
    let png = try fixture(cube)
    let times: [Float] = (0..<8).map { Float($0) * 0.125 }
    let reference = try PngineRenderer(png: png, width: 40, height: 40, devices: devices)
    let expected = try times.map { try reference.render(time: $0) }
    let results = Locked<[Int: [RGBAImage]]>([:])
    let failures = Locked<[String]>([])
    DispatchQueue.concurrentPerform(iterations: 4) { thread in
      do {
        let renderer = try PngineRenderer(png: png, width: 40, height: 40, devices: devices)
        // Between frames, a shader that does not compile: its error scope is this thread's.
        let broken = try WebGPUBackend(width: 8, height: 8, devices: devices)
        var images: [RGBAImage] = []
        for (n, time) in times.enumerated() {
          images.append(try renderer.render(time: time))
          var s = Stream()
          s.add(
            0x04, .createShader(id: UInt16(n), code: BlobRef(pointer: 0, length: 0)),
            blob: Array("@vertex fn main( -> {".utf8))
          do throws(PngineError) {
            try broken.execute(
              s.commands, blobs: s.blobs, call: "init",
              inputs: FrameInputs(time: 0, width: 8, height: 8))
            failures.withLock { $0.append("thread \(thread): a broken shader was accepted") }
          } catch {
            if error.code != .shaderCompile {
              failures.withLock { $0.append("thread \(thread): \(error)") }
            }
          }
        }
        results.withLock { $0[thread] = images }
      } catch {
        failures.withLock { $0.append("thread \(thread): \(error)") }
      }
    }
    #expect(failures.withLock { $0 } == [])
    let all = results.withLock { $0 }
    #expect(all.count == 4)
    for (thread, images) in all { #expect(images == expected, "thread \(thread)") }
    #expect(devices.devicesOpened == 1)
  }

  @Test func eachAnimationKeepsItsOwnGPUBudgetOnTheSharedDevice() throws {
    let devices = PngineDeviceProvider()
    var small = GPULimits()
    small.gpuByteBudget = 1 << 20
    let tight = try WebGPUBackend(width: 16, height: 16, limits: small, devices: devices)
    let roomy = try WebGPUBackend(width: 16, height: 16, devices: devices)
    #expect(tight.gpuDevice === roomy.gpuDevice)
    let inputs = FrameInputs(time: 0, width: 16, height: 16)
    var twoMiB = Stream()
    twoMiB.add(0x01, .createBuffer(id: 0, size: 2 << 20, usage: 0x48))
    let refused = #expect(throws: PngineError.self) {
      try tight.execute(twoMiB.commands, blobs: twoMiB.blobs, call: "init", inputs: inputs)
    }
    #expect(refused?.code == .budgetExceeded)
    // The same buffer fits the other animation's budget; the refusal did not count against it.
    try roomy.execute(twoMiB.commands, blobs: twoMiB.blobs, call: "init", inputs: inputs)
    var half = Stream()
    half.add(0x01, .createBuffer(id: 1, size: 512 << 10, usage: 0x48))
    try tight.execute(half.commands, blobs: half.blobs, call: "init", inputs: inputs)
  }

  @Test func aLostSharedDeviceIsReplacedOnceAndEveryAnimationGoesOnWithIt() throws {
    let devices = PngineDeviceProvider()
    let gallery = try [cube, triangle, cube].map { try playing($0, size: 32, devices: devices) }
    var errors: [[PngineError.Code]] = Array(repeating: [], count: gallery.count)
    for (index, driver) in gallery.enumerated() {
      driver.onError = { errors[index].append($0.code) }
      driver.load(now: 0)
      driver.tick(now: 0)
    }
    let lost = try #require(gallery[0].renderer?.backend.gpuDevice)
    gallery[1].renderer?.backend.loseDevice()  // one animation's loss is everyone's
    #expect(lost.isLost)
    for tick in 1...5 {
      for driver in gallery { driver.tick(now: Double(tick) / 60) }
    }
    // Each found the loss once, reloaded, and plays on the one new device.
    #expect(errors == Array(repeating: [.deviceLost], count: gallery.count))
    #expect(devices.devicesOpened == 2)
    let replacement = try #require(gallery[0].renderer?.backend.gpuDevice)
    #expect(replacement !== lost && !replacement.isLost)
    #expect(gallery.allSatisfy { $0.renderer?.backend.gpuDevice === replacement })
    #expect(gallery.allSatisfy { $0.player.phase == .playing && $0.player.deviceRecoveries == 1 })
    // What they draw now is what a fresh device draws at that time.
    for (index, name) in [cube, triangle, cube].enumerated() {
      let fresh = try PngineRenderer(
        png: try fixture(name), width: 32, height: 32, devices: PngineDeviceProvider()
      ).render(time: Float(gallery[index].player.time))
      #expect(gallery[index].lastImage == fresh, "animation \(index)")
    }
  }

  @Test func theSharedProviderIsTheDefault() throws {
    let renderer = try PngineRenderer(png: try fixture(triangle), width: 16, height: 16)
    let other = try WebGPUBackend(width: 16, height: 16)
    #expect(renderer.backend.gpuDevice === other.gpuDevice)
    #expect(renderer.backend.gpuDevice === (try PngineDeviceProvider.shared.device()))
  }
}
