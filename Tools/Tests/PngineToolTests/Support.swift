import Foundation

/// `pngine` in the same build folder as this test bundle (`swift test` builds it).
let pngineBinary: URL? = {
  let bundle = URL(fileURLWithPath: CommandLine.arguments.first { $0.contains(".xctest") } ?? "")
  let candidate = bundle.deletingLastPathComponent().appendingPathComponent("pngine")
  return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
}()

/// The public PNGine fixtures and their executors' command buffers, kept with PngineKit's tests.
enum Fixtures {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../../PngineKit/Tests/PngineKitTests/Fixtures").standardized

  static func bytes(_ relative: String) -> [UInt8] {
    [UInt8](
      FileManager.default.contents(atPath: root.appendingPathComponent(relative).path) ?? Data())
  }

  static func names(in folder: String, suffix: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(
      atPath: root.appendingPathComponent(folder).path)) ?? [])
      .filter { $0.hasSuffix(suffix) }.sorted()
  }

  /// Every PNG in `pngs/`.
  static var pngNames: [String] { names(in: "pngs", suffix: ".png") }

  /// Every expectation in `cmdbufs/`, by PNG name.
  static var expectationNames: [String] {
    names(in: "cmdbufs", suffix: ".png.txt").map { String($0.dropLast(4)) }
  }
}
