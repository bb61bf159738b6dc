/// How deep a WGSL shader makes a recursive compiler go, measured from its tokens.
///
/// naga, the compiler inside wgpu-native, recurses over a shader's structure and has no
/// limit of its own on most of it (its parser stops statements at 256 deep and braces at 127,
/// nothing else). A shader of a few KiB can exhaust any thread's stack and crash the process:
/// - its **parser** recurses once per bracket `(` `[` and per template list `array<…>`;
/// - its **lowerer** recurses once per level of the expression tree, and a chain parsed by a
///   loop still makes a tree as tall as the chain: `a + b + … ` (left-deep), `- - - x`,
///   `a.x.y.z`, `a[0][1][2]`;
/// - its **validator**, lowerer and SPIR-V writer recurse once per nested block, and an
///   `else if` chain nests one block per arm (`If { reject: [If { … }] }`);
/// - its **declaration ordering** recurses once per link of a chain of module-scope names
///   used before they are declared (`const c0 = c1; const c1 = c2; …`), and type code once per
///   level of a type built from aliases or structs.
///
/// The measure is conservative: a token-level walk that over-counts rather than parse WGSL.
/// - ``nesting``: the deepest run of open brackets, braces and template lists, where a `<`
///   right after an identifier counts as a template list opening (a comparison counted so
///   only makes the measure larger until its statement ends);
/// - ``expressionHeight``: a counter per open bracket or template list, starting one above the
///   counter it opened in; every operator, `.`, index `[` and call `(` adds one to the counter
///   of the innermost open one; a `,` sets it back to where it started; a statement's end (`;`,
///   `{`, `}`) clears them all. The largest value bounds the height of every expression tree;
/// - ``blockDepth``: open braces plus, for each, the `else if` arms of the chain it is in;
/// - ``declarations``: module-scope declarations, which bound every chain between them.
public struct ShaderStructure: Sendable, Hashable {
  /// The deepest nesting of brackets, braces and template lists.
  public var nesting = 0
  /// The largest expression height.
  public var expressionHeight = 0
  /// The deepest block, `else if` arms included.
  public var blockDepth = 0
  /// Module-scope declarations (`fn`, `struct`, `alias`, `const`, `override`, `var`,
  /// `const_assert`).
  public var declarations = 0
  /// The line (from 1) where ``nesting``, ``expressionHeight`` or ``blockDepth`` first went
  /// past a limit given to ``measure(_:limits:)``; nil when none did.
  public var lineOverLimit: Int?
  /// Which limit that was, in words.
  public var limitPassed: String?

  /// Measures `source` (WGSL as bytes). With `limits`, it stops at the first place past one
  /// of them (``lineOverLimit``); the text after it is not measured.
  public static func measure(_ source: [UInt8], limits: GPULimits? = nil) -> ShaderStructure {
    var result = ShaderStructure()
    var scanner = Scanner(source: source)
    // Open brackets and template lists of the current statement: their counter, where it
    // started, and the byte that closes them.
    var levels: [(height: Int, start: Int, closer: UInt8)] = []
    var outer = 0  // the counter outside any bracket
    var braces = 0
    // For each open brace and the file itself: the `else if` arms of the chain in progress.
    var arms: [Int] = [0]
    var armsTotal = 0
    var previous: Token = .none
    var afterBlock = false  // the last token was a `}`
    var afterElse = false

    func over(_ what: String, _ line: Int) -> Bool {
      guard result.lineOverLimit == nil else { return true }
      result.lineOverLimit = line
      result.limitPassed = what
      return true
    }
    func check(_ line: Int) -> Bool {
      let nesting = levels.count + braces
      result.nesting = max(result.nesting, nesting)
      let height = levels.last?.height ?? outer
      result.expressionHeight = max(result.expressionHeight, height)
      let block = braces + armsTotal
      result.blockDepth = max(result.blockDepth, block)
      guard let limits else { return false }
      if nesting > limits.maxShaderNesting {
        return over(
          "brackets, braces and template lists nest deeper than \(limits.maxShaderNesting)", line)
      }
      if height > limits.maxShaderExpressionHeight {
        return over(
          "an expression is taller than \(limits.maxShaderExpressionHeight) operators", line)
      }
      if block > limits.maxShaderBlockDepth {
        return over("blocks and else-if arms nest deeper than \(limits.maxShaderBlockDepth)", line)
      }
      if result.declarations > limits.maxShaderDeclarations {
        return over("more than \(limits.maxShaderDeclarations) module-scope declarations", line)
      }
      return false
    }
    func bump() {
      if levels.isEmpty { outer += 1 } else { levels[levels.count - 1].height += 1 }
    }
    func clearStatement() {
      levels.removeAll(keepingCapacity: true)
      outer = 0
    }

    while let (token, line) = scanner.next() {
      // A statement after a block that is not its `else` ends that block's `else if` chain.
      if afterBlock, token != .word("else") {
        armsTotal -= arms[arms.count - 1]
        arms[arms.count - 1] = 0
      }
      afterBlock = false
      switch token {
      case .word(let word):
        if afterElse, word == "if" {
          arms[arms.count - 1] += 1
          armsTotal += 1
        }
        if braces == 0, levels.isEmpty, Self.declarationKeywords.contains(word) {
          result.declarations += 1
        }
      case .number, .none:
        break
      case .open(let byte):
        if byte == UInt8(ascii: "{") {
          clearStatement()
          braces += 1
          arms.append(0)
        } else {
          // An index or a call is one more node under the counter it sits in.
          bump()
          let start = (levels.last?.height ?? outer) + 1
          levels.append(
            (start, start, byte == UInt8(ascii: "(") ? UInt8(ascii: ")") : UInt8(ascii: "]")))
        }
      case .close(let byte):
        if byte == UInt8(ascii: "}") {
          clearStatement()
          if braces > 0 {
            braces -= 1
            armsTotal -= arms.removeLast()
          }
          afterBlock = true
        } else if let at = levels.lastIndex(where: { $0.closer == byte }) {
          // Template lists left open inside (comparisons) close with it.
          levels.removeSubrange(at...)
        }
      case .less:
        bump()
        if case .word = previous {
          let start = (levels.last?.height ?? outer) + 1
          levels.append((start, start, UInt8(ascii: ">")))
        }
      case .greater(let count):
        for _ in 0..<count {
          if levels.last?.closer == UInt8(ascii: ">") {
            levels.removeLast()
          } else {
            bump()
          }
        }
      case .comma:
        if levels.isEmpty {
          outer = 0
        } else {
          levels[levels.count - 1].height = levels[levels.count - 1].start
        }
      case .semicolon:
        clearStatement()
      case .op:
        bump()
      }
      afterElse = token == .word("else")
      previous = token
      if check(line) { break }
    }
    return result
  }

  static let declarationKeywords: Set<Substring> = [
    "fn", "struct", "alias", "const", "override", "var", "const_assert",
  ]

  enum Token: Equatable {
    case none
    case word(Substring)
    case number
    case open(UInt8)
    case close(UInt8)
    case less
    /// `>` or `>>` (closes one or two template lists, or is an operator).
    case greater(Int)
    case comma
    case semicolon
    /// Any other operator or punctuation (`.`, `+`, `&&`, `->`, `=`, …).
    case op
  }

  /// WGSL's tokens, as far as the measure needs them: comments (nested block comments too)
  /// and blank space skipped.
  struct Scanner {
    let source: [UInt8]
    var index = 0
    var line = 1

    init(source: [UInt8]) { self.source = source }

    mutating func next() -> (Token, Int)? {
      skipBlank()
      guard index < source.count else { return nil }
      let byte = source[index]
      let next = index + 1 < source.count ? source[index + 1] : 0
      let at = line
      if Self.isWordStart(byte) {
        let start = index
        while index < source.count, Self.isWord(source[index]) { index += 1 }
        let text = String(decoding: source[start..<index], as: UTF8.self)
        return (.word(Substring(text)), at)
      }
      if Self.isDigit(byte) || byte == UInt8(ascii: ".") && Self.isDigit(next) {
        index += 1
        while index < source.count {
          let c = source[index]
          if Self.isWord(c) || c == UInt8(ascii: ".") {
            index += 1
          } else if c == UInt8(ascii: "+") || c == UInt8(ascii: "-"),
            [UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "p"), UInt8(ascii: "P")]
              .contains(source[index - 1])
          {
            index += 1  // an exponent's sign
          } else {
            break
          }
        }
        return (.number, at)
      }
      index += 1
      switch byte {
      case UInt8(ascii: "("), UInt8(ascii: "["), UInt8(ascii: "{"): return (.open(byte), at)
      case UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: "}"): return (.close(byte), at)
      case UInt8(ascii: ","): return (.comma, at)
      case UInt8(ascii: ";"): return (.semicolon, at)
      case UInt8(ascii: "<"):
        if next == UInt8(ascii: "=") || next == UInt8(ascii: "<") {
          index += 1
          if next == UInt8(ascii: "<"), peek == UInt8(ascii: "=") { index += 1 }
          return (.op, at)
        }
        return (.less, at)
      case UInt8(ascii: ">"):
        if next == UInt8(ascii: "=") {
          index += 1
          return (.op, at)
        }
        if next == UInt8(ascii: ">") {
          index += 1
          if peek == UInt8(ascii: "=") {
            index += 1
            return (.op, at)
          }
          return (.greater(2), at)
        }
        return (.greater(1), at)
      default:
        // Two-character operators are one token (`&&`, `->`, `==`, `+=`, `++`, …).
        if Self.pairs.contains([byte, next]) { index += 1 }
        return (.op, at)
      }
    }

    private var peek: UInt8 { index < source.count ? source[index] : 0 }

    private mutating func skipBlank() {
      while index < source.count {
        let byte = source[index]
        let next = index + 1 < source.count ? source[index + 1] : 0
        if byte == 0x0A {
          line += 1
          index += 1
        } else if byte == 0x20 || (0x09...0x0D).contains(byte) {
          index += 1
        } else if byte == UInt8(ascii: "/"), next == UInt8(ascii: "/") {
          while index < source.count, source[index] != 0x0A { index += 1 }
        } else if byte == UInt8(ascii: "/"), next == UInt8(ascii: "*") {
          var depth = 0
          repeat {
            let c = source[index]
            let d = index + 1 < source.count ? source[index + 1] : 0
            if c == UInt8(ascii: "/"), d == UInt8(ascii: "*") {
              depth += 1
              index += 2
            } else if c == UInt8(ascii: "*"), d == UInt8(ascii: "/") {
              depth -= 1
              index += 2
            } else {
              if c == 0x0A { line += 1 }
              index += 1
            }
          } while depth > 0 && index < source.count
        } else {
          return
        }
      }
    }

    static let pairs: Set<[UInt8]> = Set(
      ["&&", "||", "==", "!=", "->", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "++", "--"]
        .map { Array($0.utf8) })

    static func isWordStart(_ c: UInt8) -> Bool {
      (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || c == 0x5F
    }
    static func isWord(_ c: UInt8) -> Bool { isWordStart(c) || isDigit(c) }
    static func isDigit(_ c: UInt8) -> Bool { (0x30...0x39).contains(c) }
  }
}
