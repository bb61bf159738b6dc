import PngineKit
import Testing

/// The conformance oracle: each payload's own executor, in split mode, reproduces
/// `cmdbufs/<png>.txt` byte for byte.
@Suite struct ConformanceTests {
  /// What a PNG without an expectation must fail with.
  static let negative: [String: (PngineError.Code, chunk: String?, offset: Int?)] = [
    "examples_invalid_pixel.png": (.noPayload, "pNGb", nil),
    "src_fixtures_test_1x1.png": (.noPayload, "pNGb", nil),
    "npm_vite-plugin-pngine___tests___fixtures_basic_shader.png": (.crcMismatch, "IDAT", 33),
    "npm_vite-plugin-pngine___tests___fixtures_multi-canvas_shader_a.png": (
      .crcMismatch, "IDAT", 33
    ),
  ]

  @Test("every PNG has an expectation or a listed typed error, every expectation a PNG")
  func fixtureFolderIsComplete() {
    let pngs = Set(Fixtures.pngNames)
    let expected = Set(Fixtures.expectationNames)
    #expect(!pngs.isEmpty)
    #expect(expected.subtracting(pngs).isEmpty, "expectations without a PNG")
    let unaccounted = pngs.subtracting(expected).subtracting(Self.negative.keys)
    #expect(unaccounted.isEmpty, "PNGs with neither an expectation nor a negative entry")
    #expect(expected.isDisjoint(with: Self.negative.keys))
    #expect(Set(Self.negative.keys).isSubset(of: pngs), "negative entries without a PNG")
    #expect(expected == Set(Fixtures.positive))
  }

  @Test("oracle lines match byte for byte", arguments: Fixtures.expectationNames)
  func oracle(png: String) throws {
    let lines = try PngineConformance.oracleLines(png: Fixtures.png(png))
    #expect(lines.joined(separator: "\n") + "\n" == Fixtures.expectation(png))
  }

  @Test("the size does not change the output", arguments: [(1, 1), (4096, 4096), (800, 600)])
  func sizeIndependent(size: (Int, Int)) throws {
    let png = Fixtures.png("examples_vite-gallery_shaders_boids.png")
    let lines = try PngineConformance.oracleLines(
      png: png, width: UInt32(size.0), height: UInt32(size.1))
    #expect(
      lines.joined(separator: "\n") + "\n"
        == Fixtures.expectation("examples_vite-gallery_shaders_boids.png"))
  }

  @Test("negative files give typed errors", arguments: Array(negative.keys).sorted())
  func negativeFile(png: String) {
    let (code, chunk, offset) = Self.negative[png]!
    let error = #expect(throws: PngineError.self) {
      try PngineAnimation().load(png: Fixtures.png(png))
    }
    #expect(error?.code == code)
    #expect(error?.location.chunk == chunk)
    #expect(error?.location.byteOffset == offset)
    // The oracle path refuses the same way.
    let oracleError = #expect(throws: PngineError.self) {
      try PngineConformance.oracleLines(png: Fixtures.png(png))
    }
    #expect(oracleError?.code == code)
  }

  @Test("a payload without an embedded executor is refused")
  func executorMissing() throws {
    let payload = try PNGBPayload(Fixtures.bytes("simpleInstanced.pngb"))
    #expect(!payload.header.hasEmbeddedExecutor)
    let error = #expect(throws: PngineError.self) {
      try PngineAnimation().load(payload: payload)
    }
    #expect(error?.code == .executorMissing)
    #expect(error?.code.nativeCode == .bytecodeInvalid)
  }
}
