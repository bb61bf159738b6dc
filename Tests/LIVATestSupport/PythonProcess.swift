import Foundation

// @unchecked: `output` and `partial` are guarded by `lock`.
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
  private let lock = NSLock()
  private var output: [String] = []
  private var partial = Data()

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
      guard let self, !data.isEmpty else { return }
      self.lock.withLock {
        self.partial.append(data)
        while let newline = self.partial.firstIndex(of: 0x0A) {
          self.output.append(String(decoding: self.partial[..<newline], as: UTF8.self))
          self.partial.removeSubrange(...newline)
        }
      }
    }
    try process.run()
  }

  /// The lines printed so far.
  public var lines: [String] { lock.withLock { output } }

  /// Whether the process has exited.
  public var hasExited: Bool { !process.isRunning }

  /// The exit status (valid once exited).
  public var exitStatus: Int32 { process.terminationStatus }

  /// Waits (polling every 10 ms, at most `seconds`) for a line starting with `prefix`; returns
  /// the rest of it, or nil when the process exited or the time ran out.
  public func waitForLine(startingWith prefix: String, seconds: Double = 30) async -> String? {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if let line = lines.first(where: { $0.hasPrefix(prefix) }) {
        return String(line.dropFirst(prefix.count))
      }
      if hasExited { break }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
  }

  /// Stops the process (SIGKILL). Does not block.
  public func stop() {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  }
}
