import Locking
import Logging
import PngineKit
import Testing

/// Diagnostics read from many threads while frames run (CI runs this suite under the thread
/// sanitizer), and the error reporter's de-duplication and rate limit on an injected clock.
@Suite struct DiagnosticsTests {
  @Test("concurrent readers see consistent, monotonic counters while frames run")
  func concurrentReaders() async throws {
    let animation = PngineAnimation()
    try animation.load(png: Fixtures.png("examples_vite-gallery_shaders_triangle.png"))
    let frames = 200
    try await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask {
        for i in 0..<frames {
          _ = try animation.frame(time: Float(i) / 60, width: 64, height: 64)
        }
      }
      for _ in 0..<4 {
        group.addTask {
          var last = DiagnosticsSnapshot()
          while last.frames < frames {
            let now = animation.diagnostics.snapshot
            #expect(now.frames >= last.frames)
            #expect(now.calls >= last.calls)
            #expect(now.draws >= now.frames)  // one draw per frame, counted with it
            last = now
            await Task.yield()
          }
        }
      }
      try await group.waitForAll()
    }
    let d = animation.diagnostics.snapshot
    #expect(d.frames == frames)
    #expect(d.calls == frames + 1)
    #expect(d.draws == frames)
    #expect(d.renderPasses == frames)
  }

  @Test("concurrent frames on one animation are serialised")
  func concurrentWriters() async throws {
    let animation = PngineAnimation()
    try animation.load(png: Fixtures.png("examples_vite-gallery_shaders_boids.png"))
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<4 {
        group.addTask {
          for _ in 0..<25 { _ = try animation.frame(time: 0, width: 64, height: 64) }
        }
      }
      try await group.waitForAll()
    }
    #expect(animation.diagnostics.snapshot.frames == 100)
    #expect(try animation.frameCounter() == 100)
  }

  @Test("errors are de-duplicated and rate-limited on the injected clock")
  func reporter() {
    let lines = Locked<[String]>([])
    let clock = Locked<UInt64>(0)
    let logger = Logger(label: "test") { _ in CapturingHandler(lines: lines) }
    let reporter = ErrorReporter(
      logger: logger, window: 1_000, maxPerWindow: 3, now: { clock.withLock { $0 } })
    let a = PngineError(.trap, "a", location: .init(call: "frame"))
    #expect(reporter.report(a))
    #expect(!reporter.report(a))  // duplicate in the window
    #expect(reporter.report(PngineError(.trap, "b")))
    #expect(reporter.report(PngineError(.trap, "c")))
    #expect(!reporter.report(PngineError(.trap, "d")))  // over the rate
    clock.withLock { $0 = 1_000 }  // next window
    // Logged once in the reporter's life: a repeat in a later window is only counted.
    #expect(!reporter.report(a))
    #expect(reporter.report(PngineError(.trap, "d")))
    #expect(reporter.repeats == 2)
    let logged = lines.withLock { $0 }
    #expect(logged.filter { $0.hasPrefix("error") }.count == 4)
    #expect(logged.contains { $0.hasPrefix("warning") && $0.contains("2 repeated or excess") })
  }

  @Test("an error's message keeps its first 16 lines or 2 KiB, and counts what it cut")
  func boundedMessages() {
    // A trap's backtrace: thousands of lines.
    let backtrace = (0..<9362).map { "  frame \($0): wasm function[\($0 % 7)]" }
      .joined(separator: "\n")
    let e = PngineError(.trap, "stack exhausted\n" + backtrace)
    #expect(e.message.split(separator: "\n", omittingEmptySubsequences: false).count == 16)
    #expect(e.message.hasPrefix("stack exhausted\n  frame 0:"))
    #expect(e.message.hasSuffix("9347 more lines cut]"))
    #expect(e.message.utf8.count < 2048 + 64)
    // One long line: cut at 2 KiB, never inside a character.
    let wide = String(repeating: "é", count: 5000)  // 2 bytes each
    let cut = PngineError(.shaderCompile, wide).message
    #expect(cut.hasPrefix(String(repeating: "é", count: 1024)))
    #expect(cut.hasSuffix("[7952 more bytes, 0 more lines cut]"))
    // A short message is kept as it is.
    #expect(PngineError(.trap, "a\nb").message == "a\nb")
  }

  @Test("an animation's errors reach the reporter and diagnostics")
  func animationReports() {
    let lines = Locked<[String]>([])
    let logger = Logger(label: "test") { _ in CapturingHandler(lines: lines) }
    let reporter = ErrorReporter(logger: logger, now: { 0 })
    let animation = PngineAnimation(reporter: reporter)
    for _ in 0..<5 {
      _ = try? animation.frame(time: 0, width: 1, height: 1)
    }
    #expect(animation.diagnostics.snapshot.errors == 5)
    #expect(animation.diagnostics.snapshot.lastError?.code == .notInitialized)
    #expect(lines.withLock { $0.count } == 1)
  }
}

struct CapturingHandler: LogHandler {
  let lines: Locked<[String]>
  var metadata: Logger.Metadata = [:]
  var logLevel: Logger.Level = .trace

  subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  func log(event: LogEvent) {
    lines.withLock { $0.append("\(event.level) \(event.message)") }
  }
}
