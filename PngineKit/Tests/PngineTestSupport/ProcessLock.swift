import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A lock over the test process for tests that measure it whole (RSS) and tests that disturb
/// it (the GPU tests: lavapipe's shader JIT and pixel buffers grow RSS). Swift Testing runs
/// the suites of both test targets in parallel in one process, and the targets share no module
/// that could hold an in-memory lock, so it is a `flock` on a file named by the process id:
/// disturbing tests hold it shared, measuring tests exclusively. Taken around each test case.
/// (Shared by both test targets through this module.)
public struct ProcessLockTrait: SuiteTrait, TestTrait, TestScoping {
  /// Whether the test measures the whole process (exclusive) or only disturbs it (shared).
  public var exclusive: Bool

  /// Applies to every test of a suite.
  public var isRecursive: Bool { true }

  /// Runs `function` holding the lock (for each test case).
  public func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    guard testCase != nil else { return try await function() }
    let path = FileManager.default.temporaryDirectory
      .appendingPathComponent("pngine-tests-\(getpid()).lock").path
    let fd = open(path, O_CREAT | O_RDWR, 0o600)
    if fd >= 0 { _ = flock(fd, exclusive ? LOCK_EX : LOCK_SH) }
    defer {
      if fd >= 0 {
        _ = flock(fd, LOCK_UN)
        close(fd)
      }
    }
    try await function()
  }
}

extension Trait where Self == ProcessLockTrait {
  /// The test disturbs the whole process (shared lock).
  public static var disturbsProcess: Self { ProcessLockTrait(exclusive: false) }
  /// The test measures the whole process (exclusive lock).
  public static var measuresProcess: Self { ProcessLockTrait(exclusive: true) }
}
