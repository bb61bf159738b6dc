import Foundation

/// Whether `LIVA_REQUIRE_ALL_TOOLS=1` (CI sets it for `scripts/test`): a test that needs a tool
/// (Xvfb or a display, the `pngine` executable, wgpu-native) then fails when the tool is missing
/// instead of being skipped, so a run cannot pass by skipping.
public let requireAllTools = ProcessInfo.processInfo.environment["LIVA_REQUIRE_ALL_TOOLS"] == "1"

/// A tool a test needs is missing while ``requireAllTools`` is set.
public struct MissingTool: Error, CustomStringConvertible {
  /// What is missing and how to get it.
  public var description: String
  /// Creates the error.
  public init(description: String) { self.description = description }
}

/// Throws ``MissingTool`` when `available` is false: for tests enabled with
/// `.enabled(if: available || requireAllTools)`, which run only when the tool is there unless
/// tools are required.
public func requireTool(_ available: Bool, _ what: String) throws {
  guard available else {
    throw MissingTool(
      description: "\(what) is missing, and LIVA_REQUIRE_ALL_TOOLS=1 forbids a skip")
  }
}
