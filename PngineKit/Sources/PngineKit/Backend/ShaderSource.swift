/// WGSL from a payload, made safe to hand to a shader compiler.
///
/// wgpu-native takes shader text as UTF-8 without checking it, and its compiler (naga) has
/// aborted the process while formatting an error about text with multi-byte characters (a
/// string sliced inside a character) and crashed on bytes that are not UTF-8. A few damaged
/// bytes in a PNG must not do that to the app showing it, so before compiling:
/// - the text must be valid UTF-8, at most ``GPULimits/maxShaderSourceBytes`` long;
/// - outside comments it must be ASCII without control characters other than blank space
///   (WGSL allows Unicode identifiers; real payloads do not use them, and the compiler cannot
///   report errors about them safely);
/// - inside comments, any other character becomes spaces (comments mean nothing, so the
///   shader is unchanged);
/// - its structure keeps within the ``GPULimits`` of ``ShaderStructure``: nesting, expression
///   height, block depth and declarations (the compiler recurses on each, and past them a
///   shader of a few KiB exhausted its stack and crashed the process).
public enum ShaderSource {
  /// The text to compile (`bytes`, with comments' non-ASCII characters blanked), or why it is
  /// refused.
  public static func prepare(_ bytes: [UInt8], limits: GPULimits) -> Result<[UInt8], Refusal> {
    guard bytes.count <= limits.maxShaderSourceBytes else {
      return .failure(
        Refusal(
          "\(bytes.count) bytes of WGSL exceed the cap of \(limits.maxShaderSourceBytes)",
          line: nil))
    }
    guard String(validating: bytes, as: UTF8.self) != nil else {
      return .failure(Refusal("the WGSL is not valid UTF-8", line: nil))
    }
    var out = bytes
    var line = 1
    var blockDepth = 0
    var inLineComment = false
    var i = 0
    while i < out.count {
      let byte = out[i]
      let next = i + 1 < out.count ? out[i + 1] : 0
      if byte == 0x0A { line += 1 }
      if inLineComment || blockDepth > 0 {
        if inLineComment, byte == 0x0A || byte == 0x0D {
          inLineComment = false
        } else if blockDepth > 0, byte == 0x2F, next == 0x2A {  // "/*" nests
          blockDepth += 1
          i += 2
          continue
        } else if blockDepth > 0, byte == 0x2A, next == 0x2F {  // "*/"
          blockDepth -= 1
          i += 2
          continue
        } else if byte >= 0x80 || Self.isControl(byte) {
          out[i] = 0x20
        }
        i += 1
        continue
      }
      if byte == 0x2F, next == 0x2F {
        inLineComment = true
        i += 2
        continue
      }
      if byte == 0x2F, next == 0x2A {
        blockDepth = 1
        i += 2
        continue
      }
      if byte >= 0x80 {
        return .failure(Refusal("a non-ASCII character outside a comment", line: line))
      }
      if Self.isControl(byte) {
        return .failure(
          Refusal("control character 0x\(String(byte, radix: 16)) in the WGSL", line: line))
      }
      i += 1
    }
    let structure = ShaderStructure.measure(out, limits: limits)
    if let line = structure.lineOverLimit, let what = structure.limitPassed {
      return .failure(Refusal(what, line: line))
    }
    return .success(out)
  }

  /// Why WGSL was refused before compiling.
  public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var reason: String
    /// The line (from 1), when one is to blame.
    public var line: Int?

    init(_ reason: String, line: Int?) {
      self.reason = reason
      self.line = line
    }

    /// `reason (line N)`.
    public var description: String { line.map { "\(reason) (line \($0))" } ?? reason }
  }

  /// A control character other than WGSL's blank space (tab, line feed, vertical tab, form
  /// feed, carriage return).
  private static func isControl(_ byte: UInt8) -> Bool {
    (byte < 0x20 && !(0x09...0x0D).contains(byte)) || byte == 0x7F
  }
}
