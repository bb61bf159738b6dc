import Testing

@testable import PngineKit

/// The player on a virtual display clock: ticks at `hz`, every rendered frame finished at once.
struct PlayerClock {
  var player: PnginePlayer
  var now = 0.0
  var rendered: [(time: Double, frame: Int, at: Double)] = []
  var actions: [PnginePlayer.Action] = []
  var fails = false

  init(_ configure: (inout PnginePlayer.Configuration) -> Void = { _ in }) {
    var configuration = PnginePlayer.Configuration()
    configure(&configuration)
    player = PnginePlayer(configuration: configuration)
    _ = player.load(now: 0)
    _ = player.loaded(now: 0)
  }

  /// Ticks at `hz` for `seconds`, with an optional jitter per tick.
  mutating func run(seconds: Double, hz: Double, jitter: (Int) -> Double = { _ in 0 }) {
    let start = now
    let ticks = Int((seconds * hz).rounded())
    for index in 0..<ticks {
      now = start + Double(index) / hz + jitter(index)
      tick()
    }
    now = start + seconds
  }

  mutating func tick() {
    for action in player.tick(now: now) {
      actions.append(action)
      if case .render(let time, let frame) = action {
        rendered.append((time, frame, now))
        actions += player.frameFinished(
          succeeded: !fails, error: fails ? "validation error" : nil, now: now)
      }
    }
  }
}

@Suite("PnginePlayer")
struct PnginePlayerTests {
  @Test(
    "frames per second at each display rate",
    arguments: [
      // (display Hz, target fps, animation fps, respected, expected frames in 1 s)
      (60.0, 30.0, nil, true, 30), (120.0, 30.0, nil, true, 30), (60.0, 60.0, nil, true, 60),
      (120.0, 60.0, nil, true, 60), (120.0, 120.0, nil, true, 120), (60.0, 60.0, 30.0, true, 30),
      (120.0, 60.0, 24.0, true, 24), (60.0, 60.0, 30.0, false, 60), (120.0, nil, nil, true, 120),
    ] as [(Double, Double?, Double?, Bool, Int)])
  func frameRates(hz: Double, target: Double?, animation: Double?, respected: Bool, expected: Int) {
    var clock = PlayerClock {
      $0.targetFrameRate = target
      $0.animationFrameRate = animation
      $0.respectsAnimationFrameRate = respected
    }
    clock.run(seconds: 1, hz: hz)
    #expect(clock.rendered.count == expected)
    // Evenly spaced: every gap the same number of ticks.
    let gaps = Set(
      zip(clock.rendered.dropFirst(), clock.rendered).map { (($0.at - $1.at) * hz).rounded() })
    #expect(gaps.count == 1, "gaps of \(gaps.sorted()) ticks")
  }

  @Test("30 fps on 60 and 120 Hz ticks with jitter of up to 2 ms: still every 2nd / 4th tick")
  func jitter() {
    for (hz, step) in [(60.0, 2), (120.0, 4)] {
      var clock = PlayerClock { $0.targetFrameRate = 30 }
      clock.run(seconds: 2, hz: hz) { index in Double((index * 7) % 5 - 2) / 1000 }
      #expect(clock.rendered.count == 60)
      let ticks = clock.rendered.map { Int(($0.at * hz).rounded()) }
      #expect(zip(ticks.dropFirst(), ticks).allSatisfy { $0 - $1 == step })
    }
  }

  @Test("speed scales animation time; the first tick advances nothing; a clock going back is 0")
  func speed() {
    for (speed, expected) in [(1.0, 1.0), (2.0, 2.0), (0.5, 0.5), (0.0, 0.0), (-1.0, 0.0)] {
      var clock = PlayerClock { $0.speed = speed }
      clock.now = 10  // any origin: the first tick is time 0
      clock.run(seconds: 1, hz: 60)
      clock.tick()  // the tick at 11 s
      #expect(abs(clock.player.time - expected) < 1e-9, "speed \(speed)")
    }
    var clock = PlayerClock()
    clock.now = 5
    clock.tick()
    clock.now = 4.5
    clock.tick()
    #expect(clock.player.time == 0)
  }

  @Test("looping wraps time at the duration; without looping playback finishes there")
  func looping() {
    var loop = PlayerClock { $0.duration = 1 }
    loop.run(seconds: 1.5, hz: 60)
    loop.tick()
    #expect(abs(loop.player.time - 0.5) < 1e-9 && loop.player.phase == .playing)
    var once = PlayerClock {
      $0.duration = 1
      $0.loops = false
    }
    once.run(seconds: 1.5, hz: 60)
    #expect(once.player.time == 1 && once.player.phase == .ready)
    #expect(once.actions.filter { $0 == .finished }.count == 1)
    #expect(once.rendered.last?.time == 1)
  }

  @Test("stop asks for a reload once frames were rendered (the executor starts over too)")
  func stopReloads() {
    var fresh = PlayerClock { $0.autoplay = false }
    #expect(fresh.player.stop(now: 0).isEmpty)  // nothing rendered: nothing to start over
    var clock = PlayerClock()
    clock.run(seconds: 0.5, hz: 60)
    #expect(clock.player.stop(now: clock.now) == [.reload])
    #expect(clock.player.phase == .ready && clock.player.time == 0)
    #expect(clock.player.frameCounter == 0)
    // A reload that fails: the animation cannot play.
    _ = clock.player.loadFailed("gone", now: clock.now)
    #expect(clock.player.phase == .failed)
  }

  @Test(
    "Reduce Motion holds a still frame (the first, at a fresh load) and plays on when it is off")
  func reduceMotion() {
    var clock = PlayerClock()
    clock.run(seconds: 0.5, hz: 60)
    let frames = clock.rendered.count
    #expect(clock.player.reduceMotionChanged(true, now: clock.now).isEmpty)
    #expect(clock.player.phase == .paused && clock.player.pauseReason == .reducedMotion)
    clock.run(seconds: 1, hz: 60)
    #expect(clock.rendered.count == frames)  // nothing moves
    _ = clock.player.reduceMotionChanged(false, now: clock.now)
    #expect(clock.player.phase == .playing)
    clock.run(seconds: 0.5, hz: 60)
    #expect(clock.rendered.count > frames)
    // Loaded while it is on: one frame at time 0, then still.
    var player = PnginePlayer()
    _ = player.reduceMotionChanged(true, now: 0)
    _ = player.load(now: 0)
    #expect(player.loaded(now: 0) == [.render(time: 0, frame: 0)])
    #expect(player.phase == .paused && player.pauseReason == .reducedMotion)
    // The app's own pause is not undone when Reduce Motion goes off.
    var paused = PlayerClock()
    _ = paused.player.pause(now: 0)
    _ = paused.player.reduceMotionChanged(true, now: 0)
    _ = paused.player.reduceMotionChanged(false, now: 1)
    #expect(paused.player.phase == .paused && paused.player.pauseReason == .requested)
    // Ignored when the configuration says so.
    var moving = PlayerClock { $0.reduceMotionBehavior = .ignore }
    _ = moving.player.reduceMotionChanged(true, now: 0)
    #expect(moving.player.phase == .playing)
  }

  @Test("Low Power mode lowers the frame rate to lowPowerFrameRate, and back")
  func lowPower() {
    var clock = PlayerClock { $0.targetFrameRate = 60 }
    clock.run(seconds: 1, hz: 60)
    let full = clock.rendered.count
    _ = clock.player.lowPowerChanged(true, now: clock.now)
    #expect(clock.player.frameRate == 30)
    clock.run(seconds: 1, hz: 60)
    #expect(clock.rendered.count - full == 30)
    _ = clock.player.lowPowerChanged(false, now: clock.now)
    #expect(clock.player.frameRate == 60)
  }

  @Test(
    "a lost device is recovered by a reload, playing on from the same time, a few times at most")
  func deviceRecovery() {
    var clock = PlayerClock { $0.maximumDeviceRecoveries = 2 }
    clock.run(seconds: 1, hz: 60)
    let time = clock.player.time
    #expect(clock.player.deviceLost(error: "lost", now: clock.now) == [.reload])
    #expect(clock.player.phase == .playing && clock.player.time == time)
    #expect(clock.player.deviceRecoveries == 1)
    #expect(clock.player.deviceLost(error: "lost", now: clock.now) == [.reload])
    // The third loss: no more recoveries; the player pauses by its failure policy.
    #expect(
      clock.player.deviceLost(error: "lost again", now: clock.now)
        == [.autoPaused(failures: 1, lastError: "lost again")])
    #expect(clock.player.phase == .paused && clock.player.pauseReason == .failures)
    // A fresh load starts the count over.
    _ = clock.player.unload(now: clock.now)
    _ = clock.player.load(now: clock.now)
    _ = clock.player.loaded(now: clock.now)
    #expect(clock.player.deviceRecoveries == 0)
  }

  @Test("a frame past the GPU's time limit pauses at once: no reload, whatever recoveries are left")
  func gpuTimeoutPauses() {
    var clock = PlayerClock { $0.maximumDeviceRecoveries = 3 }
    clock.run(seconds: 0.5, hz: 60)
    let rendered = clock.rendered.count
    #expect(
      clock.player.frameTimedOut(error: "overran", now: clock.now)
        == [.autoPaused(failures: 1, lastError: "overran")])
    #expect(clock.player.phase == .paused && clock.player.pauseReason == .failures)
    #expect(clock.player.deviceRecoveries == 0)
    clock.run(seconds: 0.5, hz: 60)
    #expect(clock.rendered.count == rendered, "nothing rendered while paused")
  }

  @Test("repeat(3) plays three passes, then finishes once at the end")
  func repeatCount() {
    var clock = PlayerClock {
      $0.duration = 1
      $0.loopMode = .repeat(3)
    }
    clock.run(seconds: 2.5, hz: 60)
    clock.tick()
    #expect(abs(clock.player.time - 0.5) < 1e-9 && clock.player.phase == .playing)
    #expect(clock.player.completedPasses == 2)
    clock.run(seconds: 1, hz: 60)
    #expect(clock.player.time == 1 && clock.player.phase == .ready)
    #expect(clock.actions.filter { $0 == .finished }.count == 1)
    #expect(!clock.player.configuration.loops)
  }

  @Test("autoReverse runs time forward to the end, back to 0, and forward again")
  func autoReverse() {
    var clock = PlayerClock {
      $0.duration = 1
      $0.loopMode = .autoReverse
      $0.targetFrameRate = nil
    }
    clock.run(seconds: 1.25, hz: 100)
    clock.tick()  // t = 1.25 s of playing: 0.25 s back from the end
    #expect(abs(clock.player.time - 0.75) < 1e-9)
    clock.run(seconds: 1.0, hz: 100)
    clock.tick()  // 2.25 s: forward again, 0.25 s in
    #expect(abs(clock.player.time - 0.25) < 1e-9)
    let times = clock.rendered.map(\.time)
    #expect(times.allSatisfy { $0 >= 0 && $0 <= 1 })
    // Its turning points are rendered as they pass: time falls after the first end.
    #expect(zip(times, times.dropFirst()).contains { $0 > $1 })
    #expect(!clock.actions.contains(.finished))
  }

  @Test("progress is time over the duration; seeking to a progress lands there")
  func progress() {
    var clock = PlayerClock { $0.duration = 4 }
    #expect(clock.player.progress == 0)
    clock.run(seconds: 1, hz: 60)
    clock.tick()
    #expect(abs((clock.player.progress ?? -1) - 0.25) < 1e-9)
    _ = clock.player.seek(toProgress: 0.5, now: clock.now)
    #expect(clock.player.time == 2)
    // Clamped to the end, which a loop wraps to its start.
    _ = clock.player.seek(toProgress: 7, now: clock.now)
    #expect(clock.player.progress == 0)
    var endless = PlayerClock { $0.duration = nil }
    endless.run(seconds: 1, hz: 60)
    #expect(endless.player.progress == nil)
  }

  @Test(
    "background behaviours: what background and foreground do to a playing animation",
    arguments: [
      (PngineBackgroundBehavior.stop, PnginePlayer.Phase.ready, PnginePlayer.Phase.ready, 0.0),
      (.pause, .paused, .paused, 1.0), (.pauseAndRestore, .paused, .playing, 1.0),
    ])
  func background(
    behavior: PngineBackgroundBehavior, inBackground: PnginePlayer.Phase,
    inForeground: PnginePlayer.Phase, timeKept: Double
  ) {
    var clock = PlayerClock { $0.backgroundBehavior = behavior }
    clock.run(seconds: 1, hz: 60)
    clock.tick()  // t = 1 s
    _ = clock.player.enterBackground(now: clock.now)
    #expect(clock.player.phase == inBackground)
    let frames = clock.rendered.count
    clock.run(seconds: 5, hz: 60)  // ticks in the background render nothing, time stands
    #expect(clock.rendered.count == frames)
    _ = clock.player.enterForeground(now: clock.now)
    #expect(clock.player.phase == inForeground)
    #expect(abs(clock.player.time - timeKept) < 1e-9)
    if inForeground == .playing {
      clock.tick()  // the first tick after restoring advances nothing
      #expect(abs(clock.player.time - timeKept) < 1e-9)
      clock.run(seconds: 1, hz: 60)
      #expect(clock.player.time > timeKept + 0.9)
    }
  }

  @Test("keepPlaying renders on in the background")
  func keepPlaying() {
    var clock = PlayerClock { $0.backgroundBehavior = .keepPlaying }
    clock.run(seconds: 1, hz: 60)
    #expect(clock.player.enterBackground(now: clock.now).isEmpty)
    let frames = clock.rendered.count
    clock.run(seconds: 1, hz: 60)
    #expect(clock.player.phase == .playing)
    #expect(clock.rendered.count == frames + 60)
  }

  @Test("the player's lifecycle is the shared policy, fed its pauses and the background")
  func sharedPolicy() {
    var clock = PlayerClock()
    _ = clock.player.enterBackground(now: 1)
    #expect(clock.player.lifecycle.pauseReasons == [.background])
    _ = clock.player.enterForeground(now: 2)
    #expect(!clock.player.lifecycle.isPaused)
    _ = clock.player.pause(now: 3)
    #expect(clock.player.lifecycle.pauseReasons == [.app])
    _ = clock.player.play(now: 4)
    #expect(!clock.player.lifecycle.isPaused && clock.player.phase == .playing)
    // Under `pause`, the background's pause is the app's to end: play ends it.
    clock.player.configuration.backgroundBehavior = .pause
    _ = clock.player.enterBackground(now: 5)
    _ = clock.player.enterForeground(now: 6)
    #expect(clock.player.phase == .paused && clock.player.lifecycle.pauseReasons == [.app])
    _ = clock.player.play(now: 7)
    #expect(clock.player.phase == .playing && !clock.player.lifecycle.isPaused)
  }

  @Test("a memory warning asks for a light purge in the foreground, a deep one in the background")
  func memoryWarning() {
    var clock = PlayerClock()
    #expect(clock.player.memoryWarning(now: 1) == [.purge(.light)])
    _ = clock.player.enterBackground(now: 2)
    #expect(clock.player.memoryWarning(now: 3) == [.purge(.deep)])
    #expect(clock.player.phase == .paused)  // a purge pauses nothing by itself
  }

  @Test("a background while loading: pauseAndRestore plays once back, stop does not")
  func backgroundWhileLoading() {
    for (behavior, playing) in [(PngineBackgroundBehavior.pauseAndRestore, true), (.stop, false)] {
      var player = PnginePlayer()
      player.configuration.backgroundBehavior = behavior
      _ = player.load(now: 0)
      _ = player.enterBackground(now: 1)
      _ = player.loaded(now: 2)
      #expect(player.phase == .ready)
      _ = player.enterForeground(now: 3)
      _ = player.play(now: 3.5)  // harmless for the restored one, the app's call for stop
      #expect(player.phase == .playing)
      var other = PnginePlayer()
      other.configuration.backgroundBehavior = behavior
      _ = other.load(now: 0)
      _ = other.enterBackground(now: 1)
      _ = other.enterForeground(now: 2)
      _ = other.loaded(now: 3)
      #expect((other.phase == .playing) == playing)
    }
  }

  @Test("pauseAndRestore does not start an animation that was paused before the background")
  func pausedStaysPaused() {
    var clock = PlayerClock()
    _ = clock.player.pause(now: 0)
    _ = clock.player.enterBackground(now: 1)
    _ = clock.player.enterForeground(now: 2)
    #expect(clock.player.phase == .paused && clock.player.pauseReason == .requested)
  }

  @Test(
    "the frame counter counts rendered frames; a stop resets it; a frame in flight is not doubled")
  func frameCounter() {
    var clock = PlayerClock { $0.targetFrameRate = nil }
    clock.run(seconds: 0.5, hz: 60)
    #expect(clock.rendered.map(\.frame) == Array(0..<30))
    #expect(clock.player.frameCounter == 30)
    // The owner has not finished the frame yet: later ticks render nothing.
    var slow = clock.player
    #expect(slow.tick(now: 0.6).count == 1)
    #expect(slow.tick(now: 0.62).isEmpty)
    _ = slow.frameFinished(succeeded: true, now: 0.63)
    #expect(slow.tick(now: 0.64).count == 1)
    _ = clock.player.stop(now: 1)
    #expect(clock.player.frameCounter == 0 && clock.player.time == 0)
  }

  @Test("five failed frames in a row pause the player; a success in between starts the count again")
  func autoPause() {
    var clock = PlayerClock { $0.targetFrameRate = nil }
    clock.fails = true
    clock.run(seconds: 4.0 / 60, hz: 60)
    clock.fails = false
    clock.tick()
    #expect(clock.player.phase == .playing && clock.player.consecutiveFailures == 0)
    clock.fails = true
    clock.run(seconds: 10.0 / 60, hz: 60)
    #expect(clock.player.phase == .paused && clock.player.pauseReason == .failures)
    #expect(clock.actions.contains(.autoPaused(failures: 5, lastError: "validation error")))
    #expect(clock.rendered.count == 10)  // 5 + 1 + 5, then nothing
    _ = clock.player.play(now: clock.now)
    #expect(clock.player.phase == .playing && clock.player.consecutiveFailures == 0)
  }

  @Test("loading twice asks once; load, unload, load works; a play while loading waits for it")
  func lifeCycle() {
    var player = PnginePlayer(
      configuration: {
        var c = PnginePlayer.Configuration()
        c.autoplay = false
        return c
      }())
    #expect(player.load(now: 0) == [.load])
    #expect(player.load(now: 0).isEmpty)
    _ = player.play(now: 0)
    _ = player.loaded(now: 0.1)
    #expect(player.phase == .playing)
    #expect(player.load(now: 0.2).isEmpty)
    #expect(player.unload(now: 0.3) == [.unload])
    #expect(player.phase == .empty)
    #expect(player.load(now: 0.4) == [.load])
    _ = player.loadFailed("bad CRC", now: 0.5)
    #expect(player.phase == .failed)
    #expect(player.load(now: 0.6) == [.load])
    _ = player.loaded(now: 0.7)
    #expect(player.phase == .ready)
  }
}
