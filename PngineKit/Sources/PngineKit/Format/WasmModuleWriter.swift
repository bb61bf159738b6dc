/// Encodings of the few WebAssembly instructions the generated executors use.
enum Wasm {
  static func uleb(_ value: Int) -> [UInt8] { unsignedLEB128(UInt64(value)) }

  static func sleb(_ value: Int64) -> [UInt8] {
    var v = value
    var out: [UInt8] = []
    while true {
      let byte = UInt8(v & 0x7F)
      v >>= 7
      if (v == 0 && byte & 0x40 == 0) || (v == -1 && byte & 0x40 != 0) {
        out.append(byte)
        return out
      }
      out.append(byte | 0x80)
    }
  }

  static func i32Const(_ value: Int32) -> [UInt8] { [0x41] + sleb(Int64(value)) }
  /// `i32.store` / `i32.load` with alignment 2, offset 0.
  static let i32Store: [UInt8] = [0x36, 0x02, 0x00]
  static let i32Load: [UInt8] = [0x28, 0x02, 0x00]
  /// `loop br 0 end`.
  static let loopForever: [UInt8] = [0x03, 0x40, 0x0C, 0x00, 0x0B]
}

/// Writes a WebAssembly module of exported functions, one memory and its data segments.
struct WasmModuleWriter {
  enum ValueType: UInt8 {
    case i32 = 0x7F
    case f32 = 0x7D
  }

  private var types: [[UInt8]] = []
  private var imports: [[UInt8]] = []
  private var functions: [(type: Int, name: String, body: [UInt8])] = []
  private var memoryPages = 1
  private var segments: [(offset: Int, bytes: [UInt8])] = []

  /// Functions so far, imports included: the index the next one gets.
  var functionCount: Int { imports.count + functions.count }

  private mutating func type(_ params: [ValueType], _ results: [ValueType]) -> Int {
    let encoded =
      [0x60] + Wasm.uleb(params.count) + params.map(\.rawValue) + Wasm.uleb(results.count)
      + results.map(\.rawValue)
    if let index = types.firstIndex(of: encoded) { return index }
    types.append(encoded)
    return types.count - 1
  }

  mutating func importFunction(module: String, name: String, params: [ValueType]) {
    let index = type(params, [])
    imports.append(Self.name(module) + Self.name(name) + [0x00] + Wasm.uleb(index))
  }

  mutating func export(
    _ name: String, params: [ValueType] = [], results: [ValueType] = [], body: [UInt8]
  ) {
    functions.append((type(params, results), name, body))
  }

  mutating func memory(pages: Int, data: [(Int, [UInt8])]) {
    memoryPages = pages
    segments = data.map { (offset: $0.0, bytes: $0.1) }
  }

  static func name(_ text: String) -> [UInt8] { Wasm.uleb(text.utf8.count) + Array(text.utf8) }

  static func section(_ id: UInt8, _ items: [[UInt8]]) -> [UInt8] {
    let content = Wasm.uleb(items.count) + items.flatMap { $0 }
    return [id] + Wasm.uleb(content.count) + content
  }

  func bytes() -> [UInt8] {
    var out: [UInt8] = [0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00]
    out += Self.section(1, types)
    if !imports.isEmpty { out += Self.section(2, imports) }
    out += Self.section(3, functions.map { Wasm.uleb($0.type) })
    out += Self.section(5, [[0x00] + Wasm.uleb(memoryPages)])
    var exports = functions.enumerated().map { index, function in
      Self.name(function.name) + [0x00] + Wasm.uleb(imports.count + index)
    }
    exports.append(Self.name("memory") + [0x02, 0x00])
    out += Self.section(7, exports)
    out += Self.section(
      10,
      functions.map { function in
        let code = [0x00] + function.body + [0x0B]  // no locals
        return Wasm.uleb(code.count) + code
      })
    out += Self.section(
      11,
      segments.map { segment in
        [0x00] + Wasm.i32Const(Int32(segment.offset)) + [0x0B] + Wasm.uleb(segment.bytes.count)
          + segment.bytes
      })
    return out
  }
}
