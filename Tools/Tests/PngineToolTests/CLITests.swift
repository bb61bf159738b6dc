import Foundation
import LIVATestSupport
import Testing

/// The `pngine` tool itself.
@Suite(
  .enabled(if: pngineBinary != nil || requireAllTools, "the pngine executable is not built"))
struct CLITests {
  static func run(_ arguments: [String]) throws -> (status: Int32, stdout: Data) {
    let process = Process()
    try requireTool(pngineBinary != nil, "the pngine executable")
    process.executableURL = pngineBinary!
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, data)
  }

  @Test(
    "pngine run --format oracle prints the expectation byte for byte",
    arguments: Fixtures.expectationNames)
  func runOracle(png: String) throws {
    let path = Fixtures.root.appendingPathComponent("pngs/" + png).path
    let (status, out) = try Self.run([
      "run", path, "--times", "0,1", "--size", "512x512", "--format", "oracle",
    ])
    #expect(status == 0)
    #expect([UInt8](out) == Fixtures.bytes("cmdbufs/" + png + ".txt"))
  }

  @Test("pngine verify passes on the fixture folder")
  func verify() throws {
    let (status, out) = try Self.run(["verify", Fixtures.root.path])
    #expect(status == 0)
    let text = String(decoding: out, as: UTF8.self)
    #expect(text.split(separator: "\n").count == Fixtures.pngNames.count)
    #expect(!text.contains("FAIL") && !text.contains("DIFF"))
  }

  @Test("pngine run fails with the typed error on a negative file")
  func negative() throws {
    let path = Fixtures.root.appendingPathComponent(
      "pngs/npm_vite-plugin-pngine___tests___fixtures_basic_shader.png"
    ).path
    #expect(try Self.run(["run", path]).status != 0)
  }
}
