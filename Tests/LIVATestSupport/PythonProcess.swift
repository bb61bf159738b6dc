import Foundation
import Locking

// @unchecked: `output`, `partial`, the flags and the waiters are guarded by `lock`.
/// A Python script of `scripts/interop/` run from the project's virtualenv
/// (scripts/setup-python.sh), its output collected line by line. When the venv is missing the
/// start throws with a message saying so: tests against the real peer are never skipped.
public final class PythonProcess: @unchecked Sendable {
  /// The repository's root.
  public static let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  /// Why a script could not run.
  public struct Failure: Error, CustomStringConvertible {
    /// What happened.
    public var description: String
    /// Creates a failure.
    public init(description: String) { self.description = description }
  }

  private let process = Process()
  private let lock = Locked()
  private var output: [String] = []
  private var partial = Data()
  private var terminated = false
  private var outputClosed = false
  private var waiters: [Int: (condition: ([String], Bool) -> Bool, resume: (Bool) -> Void)] = [:]
  private var nextWaiter = 0

  /// Starts `scripts/interop/<script>` with `arguments`.
  public init(script: String, _ arguments: [String]) throws {
    let python = Self.repositoryRoot.appendingPathComponent(".venv/bin/python")
    let path = Self.repositoryRoot.appendingPathComponent("scripts/interop/\(script)")
    guard FileManager.default.isExecutableFile(atPath: python.path) else {
      throw Failure(
        description:
          "python-socketio is not installed: run scripts/setup-python.sh (no \(python.path))")
    }
    process.executableURL = python
    process.arguments = ["-u", path.path] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
      let data = handle.availableData
      guard let self else { return }
      self.changed { process in
        guard !data.isEmpty else {
          process.outputClosed = true
          handle.readabilityHandler = nil
          return
        }
        process.partial.append(data)
        while let newline = process.partial.firstIndex(of: 0x0A) {
          process.output.append(String(decoding: process.partial[..<newline], as: UTF8.self))
          process.partial.removeSubrange(...newline)
        }
      }
    }
    process.terminationHandler = { [weak self] _ in self?.changed { $0.terminated = true } }
    try process.run()
  }

  /// Applies a change under the lock, then wakes the waiters whose condition now holds.
  private func changed(_ change: (PythonProcess) -> Void) {
    let woken = lock.withLock { () -> [(Bool) -> Void] in
      change(self)
      let exited = terminated && outputClosed
      let ready = waiters.filter { $0.value.condition(output, exited) }
      for id in ready.keys { waiters.removeValue(forKey: id) }
      return ready.values.map(\.resume)
    }
    for resume in woken { resume(true) }
  }

  /// Waits until `condition(lines, exited)` holds (`exited`: the process ended and all its
  /// output was read), at most `seconds`: woken by the output and the exit, never by polling.
  /// Returns whether the condition held.
  public func wait(
    seconds: Double = 30, until condition: @escaping ([String], Bool) -> Bool
  ) async -> Bool {
    let id = lock.withLock { () -> Int? in
      if condition(output, terminated && outputClosed) { return nil }
      defer { nextWaiter += 1 }
      return nextWaiter
    }
    guard let id else { return true }
    return await withCheckedContinuation { continuation in
      let holds = lock.withLock { () -> Bool in
        if condition(output, terminated && outputClosed) { return true }
        waiters[id] = (condition, { continuation.resume(returning: $0) })
        return false
      }
      if holds {
        continuation.resume(returning: true)
        return
      }
      // The bound: a waiter still there after `seconds` is answered false.
      Task { [weak self] in
        try? await Task.sleep(for: .seconds(seconds))
        let waiter = self?.lock.withLock { self?.waiters.removeValue(forKey: id) }
        waiter?.resume(false)
      }
    }
  }

  /// Waits, at most `seconds`, until the process has ended and its output was read; returns
  /// whether it did.
  public func waitForExit(seconds: Double = 30) async -> Bool {
    await wait(seconds: seconds) { _, exited in exited }
  }

  /// The lines printed so far.
  public var lines: [String] { lock.withLock { output } }

  /// Whether the process has exited.
  public var hasExited: Bool { !process.isRunning }

  /// The exit status (valid once exited).
  public var exitStatus: Int32 { process.terminationStatus }

  /// Waits (at most `seconds`) for a line starting with `prefix`; returns the rest of it, or
  /// nil when the process exited without printing one or the time ran out.
  public func waitForLine(startingWith prefix: String, seconds: Double = 30) async -> String? {
    _ = await wait(seconds: seconds) { lines, exited in
      exited || lines.contains { $0.hasPrefix(prefix) }
    }
    return lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
  }

  /// Stops the process (SIGKILL). Does not block.
  public func stop() {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  }
}
