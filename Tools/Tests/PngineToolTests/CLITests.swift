import Foundation
import LIVATestSupport
import Testing

/// The `pngine` tool itself.
@Suite(
  .enabled(if: pngineBinary != nil || requireAllTools, "the pngine executable is not built"))
struct CLITests {
  static func run(_ arguments: [String]) async throws -> (status: Int32, stdout: Data) {
    let run = try await runPngine(arguments)
    return (run.status, run.stdout)
  }

  @Test(
    "pngine run --format oracle prints the expectation byte for byte",
    arguments: Fixtures.expectationNames)
  func runOracle(png: String) async throws {
    let path = Fixtures.root.appendingPathComponent("pngs/" + png).path
    let (status, out) = try await Self.run([
      "run", path, "--times", "0,1", "--size", "512x512", "--format", "oracle",
    ])
    #expect(status == 0)
    #expect([UInt8](out) == Fixtures.bytes("cmdbufs/" + png + ".txt"))
  }

  @Test("pngine verify passes on the fixture folder")
  func verify() async throws {
    let (status, out) = try await Self.run(["verify", Fixtures.root.path])
    #expect(status == 0)
    let text = String(decoding: out, as: UTF8.self)
    #expect(text.split(separator: "\n").count == Fixtures.pngNames.count)
    #expect(!text.contains("FAIL") && !text.contains("DIFF"))
  }

  @Test("pngine run fails with the typed error on a negative file")
  func negative() async throws {
    let path = Fixtures.root.appendingPathComponent(
      "pngs/npm_vite-plugin-pngine___tests___fixtures_basic_shader.png"
    ).path
    let run = try await runPngine(["run", path])
    // A clean failure (not a signal) that names the error: the fixture's IDAT CRC is wrong.
    #expect(!run.signalled, "killed by signal \(run.status)")
    #expect(run.status == 1)
    #expect(String(decoding: run.stderr, as: UTF8.self).contains("crcMismatch"))
  }
}
