import WasmKit
import WasmParser

/// What a fresh instance of an executor holds before its first call, read from the module,
/// and whether a used instance can be put back into exactly that state (so a pooled instance
/// keeps the code WasmKit translated and skips translating it again; see
/// ``PngineExecutorPool``).
///
/// A fresh instance is its memory (the declared minimum, zero, with the active data segments
/// copied in), its globals at their initial values, and its tables as the element segments
/// left them. Resetting restores the first two; the third cannot change when no function
/// contains an instruction that writes a table or drops or applies a segment, which the
/// analysis checks instruction by instruction. Anything it cannot vouch for makes the executor
/// not resettable, with the reason; such an executor is simply never reused.
struct ExecutorImage: Sendable {
  /// One active data segment: where it lands and its bytes.
  struct Segment: Sendable {
    var offset: Int
    var bytes: ArraySlice<UInt8>
  }

  /// The memory's declared minimum, in 64 KiB pages: a fresh instance's size.
  var memoryPages: UInt64
  /// The active data segments, in order.
  var segments: [Segment]
  /// Indices of the module's mutable globals (imported ones included, none allowed).
  var mutableGlobals: [UInt32]
  /// The module with one extra export per mutable global (``exportName(global:)``), so the
  /// globals can be read after instantiation and assigned on reset. Nothing else changes.
  var instrumented: [UInt8]
  /// Why a used instance cannot be reset, or `nil` when it can.
  var notResettable: String?

  /// The export under which the instrumented module exposes global `index`.
  static func exportName(global index: UInt32) -> String { "\u{1}pngine.reset.global.\(index)" }

  /// Reads `bytes`, a module ``ExecutorInfo`` already accepted.
  init(_ bytes: [UInt8]) throws(PngineError) {
    var memoryPages: UInt64 = 0
    var segments: [Segment] = []
    var mutableGlobals: [UInt32] = []
    var importedGlobals: UInt32 = 0
    var codes: [Code] = []
    var blocker: String?
    var parser = Parser(bytes: bytes, features: [.referenceTypes])
    do {
      while let payload = try parser.parseNext() {
        switch payload {
        case .importSection(let list):
          for i in list {
            if case .global = i.descriptor { importedGlobals += 1 }
          }
        case .memorySection(let list):
          memoryPages = list.first?.type.min ?? 0
        case .globalSection(let list):
          for (n, global) in list.enumerated() where global.type.mutability == .variable {
            mutableGlobals.append(importedGlobals + UInt32(n))
          }
        case .codeSection(let list):
          codes = list
        case .dataSection(let list):
          for segment in list {
            switch segment {
            case .passive:
              blocker = blocker ?? "it has a passive data segment"
            case .active(let active):
              guard active.index == 0, active.offset.count <= 2,
                case .i32Const(let value) = active.offset.first
              else {
                blocker = blocker ?? "a data segment's offset is not a constant"
                continue
              }
              segments.append(
                Segment(offset: Int(UInt32(bitPattern: value)), bytes: active.initializer))
            }
          }
        default: break
        }
      }
    } catch {
      throw PngineError(
        .executorInvalid, "not valid WebAssembly: \(error)",
        location: .init(chunk: "pNGb", call: "instantiate"))
    }
    if importedGlobals > 0 { blocker = blocker ?? "it imports a global" }
    if blocker == nil {
      blocker = Self.firstStateChangingInstruction(codes)
    }
    self.memoryPages = memoryPages
    self.segments = segments
    self.mutableGlobals = mutableGlobals
    self.notResettable = blocker
    if let rewritten = Self.instrument(bytes, exporting: mutableGlobals) {
      self.instrumented = rewritten
    } else {
      self.instrumented = bytes
      self.notResettable = blocker ?? "its sections could not be rewritten"
    }
  }

  /// Scans every function body for an instruction that changes a table or a segment, state
  /// a reset does not restore. Returns a description of the first one found.
  private static func firstStateChangingInstruction(_ codes: [Code]) -> String? {
    var finder = StateChangeFinder()
    for (index, code) in codes.enumerated() {
      var expression = ExpressionParser(code: code)
      do {
        while let visit = try expression.parse() {
          visit(visitor: &finder)
          if let found = finder.found { return "function \(index) uses \(found)" }
        }
      } catch {
        return "function \(index) could not be read: \(error)"
      }
    }
    return nil
  }

  /// `bytes` with an export section that also exports each global in `globals`, or `nil`
  /// when the section layout is not what a valid module has.
  static func instrument(_ bytes: [UInt8], exporting globals: [UInt32]) -> [UInt8]? {
    guard bytes.count >= 8 else { return nil }
    var out = Array(bytes[0..<8])
    out.reserveCapacity(bytes.count + globals.count * 32)
    var position = 8
    var rewrote = false
    while position < bytes.count {
      let id = bytes[position]
      guard let (size, sizeLength) = readLEB(bytes, at: position + 1) else { return nil }
      let start = position + 1 + sizeLength
      let end = start + Int(size)
      guard end <= bytes.count else { return nil }
      if id == 7 {
        guard let (count, countLength) = readLEB(bytes, at: start) else { return nil }
        var content = unsignedLEB128(count + UInt64(globals.count))
        content += bytes[(start + countLength)..<end]
        for global in globals {
          let name = Array(exportName(global: global).utf8)
          content +=
            unsignedLEB128(UInt64(name.count)) + name + [0x03] + unsignedLEB128(UInt64(global))
        }
        out.append(7)
        out += unsignedLEB128(UInt64(content.count))
        out += content
        rewrote = true
      } else {
        out += bytes[position..<end]
      }
      position = end
    }
    return rewrote || globals.isEmpty ? out : nil
  }

  /// `bytes` with its memory's maximum set to `maximumPages` (or kept, when the module
  /// declares a lower one), or `nil` when the memory section is not the single unshared 32-bit
  /// memory ``ExecutorInfo`` accepts. WasmKit's `memory.grow` returns -1 past the maximum
  /// before it allocates anything, so this caps an executor's memory during its calls (WasmKit's
  /// resource limiter is not public API). Nothing else changes.
  static func capMemory(_ bytes: [UInt8], maximumPages: UInt64) -> [UInt8]? {
    guard bytes.count >= 8 else { return nil }
    var out = Array(bytes[0..<8])
    out.reserveCapacity(bytes.count + 8)
    var position = 8
    var rewrote = false
    while position < bytes.count {
      let id = bytes[position]
      guard let (size, sizeLength) = readLEB(bytes, at: position + 1) else { return nil }
      let start = position + 1 + sizeLength
      let end = start + Int(size)
      guard end <= bytes.count else { return nil }
      if id == 5 {
        // vec(memtype) of one entry: flags 0x00 (min) or 0x01 (min, max), LEB128 u32s.
        guard !rewrote, let (count, countLength) = readLEB(bytes, at: start), count == 1
        else { return nil }
        var p = start + countLength
        guard p < end else { return nil }
        let flags = bytes[p]
        p += 1
        guard flags == 0 || flags == 1, let (minimum, minimumLength) = readLEB(bytes, at: p)
        else { return nil }
        p += minimumLength
        var maximum = maximumPages
        if flags == 1 {
          guard let (declared, declaredLength) = readLEB(bytes, at: p) else { return nil }
          p += declaredLength
          maximum = min(declared, maximumPages)
        }
        guard p == end, minimum <= maximum else { return nil }
        let content = [1, 1] + unsignedLEB128(minimum) + unsignedLEB128(maximum)
        out.append(5)
        out += unsignedLEB128(UInt64(content.count))
        out += content
        rewrote = true
      } else {
        out += bytes[position..<end]
      }
      position = end
    }
    return rewrote ? out : nil
  }

  private static func readLEB(_ bytes: [UInt8], at start: Int) -> (UInt64, Int)? {
    var value: UInt64 = 0
    var shift: UInt64 = 0
    var index = start
    while index < bytes.count, shift < 35 {
      let byte = bytes[index]
      value |= UInt64(byte & 0x7F) << shift
      index += 1
      if byte & 0x80 == 0 { return (value, index - start) }
      shift += 7
    }
    return nil
  }

}

/// Notes the first instruction that writes a table or drops or applies a segment.
private struct StateChangeFinder: AnyInstructionVisitor {
  typealias VisitorError = Never
  var binaryOffset = 0
  var found: String?

  mutating func visit(_ instruction: Instruction) {
    guard found == nil else { return }
    switch instruction {
    case .tableSet: found = "table.set"
    case .tableGrow: found = "table.grow"
    case .tableFill: found = "table.fill"
    case .tableCopy: found = "table.copy"
    case .tableInit: found = "table.init"
    case .elemDrop: found = "elem.drop"
    case .memoryInit: found = "memory.init"
    case .dataDrop: found = "data.drop"
    default: break
    }
  }
}
