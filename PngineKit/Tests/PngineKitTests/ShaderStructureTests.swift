import PngineTestSupport
import Testing

@testable import PngineKit

/// Shaders built to make naga recurse past any stack (each of a few KiB to a few hundred
/// KiB): every one is refused before it reaches the compiler, with the limit it passed; the
/// same construct within the limits passes; every real payload's shaders stay far inside.
@Suite("WGSL structure: what would make the compiler recurse too deep is refused")
struct ShaderStructureTests {
  @Test("20,000 repetitions are refused with the limit they pass", arguments: HostileWGSL.all)
  func refused(_ construct: HostileWGSL) throws {
    let text = construct.shader(20_000)
    guard case .failure(let refusal) = ShaderSource.prepare(Array(text.utf8), limits: GPULimits())
    else {
      Issue.record("accepted \(text.utf8.count) bytes")
      return
    }
    #expect(refusal.reason.contains(construct.refusal), "\(refusal)")
    #expect(refusal.line != nil)
  }

  @Test(
    "the most repetitions within the limits pass; one more is refused", arguments: HostileWGSL.all)
  func boundary(_ construct: HostileWGSL) throws {
    let limits = GPULimits()
    let inside = construct.shader(construct.within)
    let measured = ShaderStructure.measure(Array(inside.utf8))
    #expect(
      (try? ShaderSource.prepare(Array(inside.utf8), limits: limits).get()) != nil,
      "\(measured)")
    let outside = construct.shader(construct.within + 1)
    #expect(
      (try? ShaderSource.prepare(Array(outside.utf8), limits: limits).get()) == nil,
      "\(ShaderStructure.measure(Array(outside.utf8)))")
  }

  @Test("comments, numbers with exponents and comparisons do not count as structure")
  func tokens() {
    let text = """
      // ((((( [[[[ <<<< not code
      /* nested /* ((( */ ))) */
      fn f(a: f32) -> f32 {
        if (a < 1e-5 && a > -2.5e+3) { return 1.0; }
        return a;
      }
      """
    let s = ShaderStructure.measure(Array(text.utf8))
    #expect(s.declarations == 1)
    #expect(s.nesting <= 4, "\(s)")
    #expect(s.expressionHeight <= 6, "\(s)")
    #expect(s.blockDepth == 2, "\(s)")
  }

  @Test("every fixture's shaders stay far inside every limit (the nearest: printed)")
  func fixtures() throws {
    let limits = GPULimits()
    var worst = ShaderStructure()
    var shaders = 0
    for name in Fixtures.pngNames {
      let animation = PngineAnimation()
      let report: LoadReport
      do {
        report = try animation.load(png: Fixtures.png(name))
      } catch {
        // Negative fixtures are refused on purpose; every positive one must load.
        #expect(!Fixtures.positive.contains(name), "\(name): \(error)")
        continue
      }
      for (index, decoded) in report.initOutput.buffer.commands.enumerated() {
        guard case .createShader = decoded.command,
          case .bytes(let wgsl)? = report.initOutput.blobs[index]
        else { continue }
        shaders += 1
        let s = ShaderStructure.measure(wgsl)
        worst.nesting = max(worst.nesting, s.nesting)
        worst.expressionHeight = max(worst.expressionHeight, s.expressionHeight)
        worst.blockDepth = max(worst.blockDepth, s.blockDepth)
        worst.declarations = max(worst.declarations, s.declarations)
      }
    }
    print(
      "fixture shaders: \(shaders); the largest nesting \(worst.nesting) of \(limits.maxShaderNesting), "
        + "expression height \(worst.expressionHeight) of \(limits.maxShaderExpressionHeight), "
        + "block depth \(worst.blockDepth) of \(limits.maxShaderBlockDepth), "
        + "declarations \(worst.declarations) of \(limits.maxShaderDeclarations)")
    #expect(shaders >= 6)
    // At most a quarter of each limit.
    #expect(worst.nesting * 4 <= limits.maxShaderNesting)
    #expect(worst.expressionHeight * 4 <= limits.maxShaderExpressionHeight)
    #expect(worst.blockDepth * 4 <= limits.maxShaderBlockDepth)
    #expect(worst.declarations * 4 <= limits.maxShaderDeclarations)
  }
}
