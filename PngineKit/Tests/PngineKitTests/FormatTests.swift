import CZlib
import PngineKit
import Testing

/// The format stage: chunks and CRCs, capped inflate, PNGB header checks, the fuzzer.
@Suite struct FormatTests {
  @Test("fixture chunks and siblings are reported")
  func chunks() throws {
    let file = try PNGFile.read(Fixtures.png("examples_audio-demo_triangle.png"))
    #expect(file.chunks.map(\.type) == ["IHDR", "IDAT", "pNGb", "pNGa", "IEND"])
    #expect(file.audioLength == 871)
    #expect(file.payloadFlags == 1)
    #expect(file.payloadBytes?.count == 13084)
    let payload = try PNGBPayload(file.payloadBytes!)
    #expect(payload.header.executorOffset == 40)
    #expect(payload.header.executorLength == 12062)
    #expect(try payload.dataBlobs().count > 0)
  }

  @Test("truncations of a real PNG give typed errors at every length")
  func truncations() {
    let png = Fixtures.png("examples_vite-gallery_shaders_triangle.png")
    for n in stride(from: 0, to: png.count, by: 7) {
      #expect(throws: PngineError.self) { try PNGFile.read(Array(png[0..<n])) }
    }
  }

  @Test("the inflated cap stops a bomb at the cap")
  func bomb() throws {
    // 80 MiB of zeros, raw DEFLATE (~80 KiB).
    let zeros = [UInt8](repeating: 0, count: 80 << 20)
    let compressed = Self.rawDeflate(zeros)
    #expect(compressed.count < 200_000)
    let png = PngineFuzzer.testPNG(with: [1, 1] + compressed)
    let e = #expect(throws: PngineError.self) { try PNGFile.read(png) }
    #expect(e?.code == .limitExceeded)
    #expect(e?.location.chunk == "pNGb")
    // A smaller cap stops a real payload.
    let e2 = #expect(throws: PngineError.self) {
      try PNGFile.read(
        Fixtures.png("examples_vite-gallery_shaders_boids.png"),
        limits: FormatLimits(maxInflatedLength: 1000))
    }
    #expect(e2?.code == .limitExceeded)
    let e3 = #expect(throws: PngineError.self) {
      try PNGFile.read(
        Fixtures.png("examples_vite-gallery_shaders_boids.png"),
        limits: FormatLimits(maxChunkLength: 1000))
    }
    #expect(e3?.code == .limitExceeded)
    #expect(e3?.location.chunk == "pNGb")
  }

  @Test("a corrupt or truncated DEFLATE stream is inflateFailed")
  func corruptDeflate() {
    let compressed = Self.rawDeflate(Array("hello hello hello hello".utf8))
    let truncated = PngineFuzzer.testPNG(with: [1, 1] + compressed.dropLast(4))
    let t = #expect(throws: PngineError.self) { try PNGFile.read(truncated) }
    #expect(t?.code == .inflateFailed)
    let garbage = PngineFuzzer.testPNG(with: [1, 1, 0xFF, 0xFF, 0xFF, 0xFF])
    let e = #expect(throws: PngineError.self) { try PNGFile.read(garbage) }
    #expect(e?.code == .inflateFailed)
  }

  @Test("PNGB header checks: magic, version, executor range, ascending sections")
  func header() throws {
    let good = TestExecutors.payload(executor: [0, 0x61, 0x73, 0x6D])
    _ = try PNGBPayload(good)
    func error(_ edit: (inout [UInt8]) -> Void) -> PngineError? {
      var b = good
      edit(&b)
      do {
        _ = try PNGBPayload(b)
        return nil
      } catch {
        return error
      }
    }
    #expect(error { $0[0] = 0x58 }?.code == .invalidHeader)
    #expect(error { $0[4] = 1 }?.location.byteOffset == 4)
    #expect(error { $0[16] = 0xFF }?.location.byteOffset == 12)  // executor past the end
    #expect(error { $0[24] = 0 }?.location.byteOffset == 24)  // data before strings
    #expect(error { $0[36] = 0xFF }?.location.byteOffset == 36)  // animation past the end
    #expect(error { $0 = Array($0[0..<39]) }?.code == .invalidHeader)
  }

  @Test("a short seeded fuzz run: only typed errors, deterministic")
  func fuzz() {
    let pngs = Fixtures.positive.map(Fixtures.png)
    let buffers = Fixtures.positive.flatMap { Fixtures.oracleBuffers($0).map(\.bytes) }
    var a = PngineFuzzer(seed: 42, pngs: pngs, commandBuffers: buffers)
    let report = a.run(count: 3000)
    var b = PngineFuzzer(seed: 42, pngs: pngs, commandBuffers: buffers)
    let again = b.run(count: 3000)
    #expect(report.inputs == 3000)
    #expect(report.rejections == again.rejections)
    #expect(report.accepted + report.rejections.values.reduce(0, +) == 3000)
    #expect(report.rejections[.crcMismatch, default: 0] > 0)
    #expect(report.rejections[.invalidHeader, default: 0] > 0)
    #expect(report.rejections[.invalidCommandBuffer, default: 0] > 0)
    print("fuzz seed 42: \(report)")
  }

  static func rawDeflate(_ input: [UInt8]) -> [UInt8] {
    var stream = z_stream()
    deflateInit2_(
      &stream, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
      Int32(MemoryLayout<z_stream>.size))
    defer { deflateEnd(&stream) }
    var out = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))))
    input.withUnsafeBufferPointer { inBuf in
      out.withUnsafeMutableBufferPointer { outBuf in
        stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
        stream.avail_in = UInt32(inBuf.count)
        stream.next_out = outBuf.baseAddress
        stream.avail_out = UInt32(outBuf.count)
        deflate(&stream, Z_FINISH)
      }
    }
    return Array(out[0..<Int(stream.total_out)])
  }
}
