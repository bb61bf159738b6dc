/// WGSL built to make a recursive shader compiler go deep: each construct repeated `n` times,
/// the words of the refusal it earns past the default limits, and the most repetitions within
/// them (so the worst shader a payload may still send).
public struct HostileWGSL: Sendable, CustomStringConvertible {
  /// What it repeats.
  public var name: String
  /// The shader with `n` repetitions.
  public var shader: @Sendable (Int) -> String
  /// Words of the refusal past the limits.
  public var refusal: String
  /// The most repetitions within the default limits.
  public var within: Int
  /// The name.
  public var description: String { name }

  static func function(_ body: String) -> String {
    "fn f(a: f32, b: bool, p: ptr<function, f32>) -> f32 {\n\(body)\n}"
  }
  static func repeated(_ s: String, _ n: Int) -> String { String(repeating: s, count: n) }

  static let height = "an expression is taller than"
  static let nesting = "nest deeper than 64"
  static let blocks = "blocks and else-if arms nest deeper than"

  /// Every construct.
  public static let all: [HostileWGSL] = [
    HostileWGSL(
      name: "a chain of + (left-deep tree)",
      shader: { n in function("return a" + repeated(" + a", n) + ";") }, refusal: height,
      within: 256),
    HostileWGSL(
      name: "a chain of && in an if",
      shader: { n in function("if (b" + repeated(" && b", n) + ") { return a; } return a;") },
      refusal: height, within: 254),
    HostileWGSL(
      name: "a run of unary -", shader: { n in function("return " + repeated("- ", n) + "a;") },
      refusal: height, within: 256),
    HostileWGSL(
      name: "a run of unary !",
      shader: { n in function("let c = " + repeated("!", n) + "b; return a;") }, refusal: height,
      within: 255),
    HostileWGSL(
      name: "a run of *&", shader: { n in function("return " + repeated("*&", n) + "*p;") },
      refusal: height, within: 127),
    HostileWGSL(
      name: "a swizzle chain",
      shader: { n in function("let v = vec4f(a); return v" + repeated(".xyzw", n) + ".x;") },
      refusal: height, within: 255),
    HostileWGSL(
      name: "an index chain",
      shader: { n in
        "var<private> m: array<f32, 4>;\n"
          + function("return m[0]" + repeated("[0]", n) + ";")
      }, refusal: height, within: 254),
    HostileWGSL(
      name: "nested array templates",
      shader: { n in
        "var<private> v: " + repeated("array<", n) + "f32" + repeated(", 1>", n) + ";"
      }, refusal: nesting, within: 64),
    HostileWGSL(
      name: "nested vec4 templates",
      shader: { n in "alias T = " + repeated("vec4<", n) + "f32" + repeated(">", n) + ";" },
      refusal: nesting, within: 64),
    HostileWGSL(
      name: "templates nested in a second argument, past commas",
      shader: { n in "alias T = " + repeated("S<f32, ", n) + "f32" + repeated(">", n) + ";" },
      refusal: nesting, within: 64),
    HostileWGSL(
      name: "an else-if chain",
      shader: { n in
        function("if (b) { return a; }" + repeated(" else if (b) { return a; }", n) + " return a;")
      }, refusal: blocks, within: 62),
    HostileWGSL(
      name: "nested blocks",
      shader: { n in function(repeated("{ ", n) + repeated("} ", n) + "return a;") },
      refusal: nesting, within: 63),
    HostileWGSL(
      name: "a chain of consts declared in reverse",
      shader: { n in
        (0..<n).map { "const c\($0) = c\($0 + 1);" }.joined(separator: "\n")
          + "\nconst c\(n) = 1.0;"
      }, refusal: "module-scope declarations", within: 1023),
    HostileWGSL(
      name: "a chain of aliases",
      shader: { n in
        "alias A0 = f32;\n"
          + (1...n).map { "alias A\($0) = array<A\($0 - 1), 1>;" }.joined(separator: "\n")
      }, refusal: "module-scope declarations", within: 1023),
  ]

  /// A compute entry point whose body holds an `else if` chain of `arms` and a `+` chain of
  /// `terms`: what a pipeline's SPIR-V writer recurses over (blocks) along with the module's
  /// compiler. Within the default limits at `arms` 61 and `terms` 254.
  public static func computeShader(arms: Int, terms: Int) -> String {
    """
    @group(0) @binding(0) var<storage, read_write> out: array<f32>;
    @compute @workgroup_size(1) fn main() {
      var a = out[0];
      let b = a > 0.5;
      if (b) { a = 1.0; }\(repeated(" else if (b) { a = a * 2.0; }", arms))
      out[0] = a\(repeated(" + a", terms));
    }
    """
  }
}
