import WasmKit
import WasmParser

/// What an executor declares, read with `WasmParser` before anything is instantiated, and the
/// checks that decide whether it may run: required exports with their signatures, imports
/// (only `env.log(i32, i32)`), no start function, and a memory declaration within the cap.
public struct ExecutorInfo: Sendable, Hashable {
  /// Export names in declaration order.
  public var exports: [String]
  /// Imports as `module.name`.
  public var imports: [String]
  /// The memory's declared minimum, in 64 KiB pages.
  public var memoryMinimumPages: UInt64
  /// The memory's declared maximum, in pages, if any.
  public var memoryMaximumPages: UInt64?
  /// Whether `getAbiVersion` is exported (absent: ABI 1).
  public var hasAbiVersion: Bool
  /// Whether `env.log` is imported.
  public var importsLog: Bool

  /// The command layout this executor writes: legacy when it has no `getAbiVersion` and
  /// imports `env.log` (the three oldest executors), current otherwise.
  public var layout: CommandLayout { !hasAbiVersion && importsLog ? .legacy : .current }

  /// `[]→i32` etc.: the signatures the ABI requires (`docs/abi.md` §2).
  static let required: [(String, [ValueType], [ValueType])] = [
    ("getBytecodePtr", [], [.i32]), ("setBytecodeLen", [.i32], []),
    ("getDataPtr", [], [.i32]), ("setDataLen", [.i32], []),
    ("getCommandPtr", [], [.i32]), ("getCommandLen", [], [.i32]),
    ("init", [], [.i32]), ("frame", [.f32, .i32, .i32], [.i32]),
  ]
  static let optional: [(String, [ValueType], [ValueType])] = [
    ("getAbiVersion", [], [.i32]), ("getFrameCounter", [], [.i32]),
    ("setFrameCounter", [.i32], []),
  ]

  /// Reads and checks `bytes`.
  /// - Parameter maxMemoryPages: the largest declared minimum memory accepted.
  public init(_ bytes: [UInt8], maxMemoryPages: UInt64) throws(PngineError) {
    func invalid(_ message: String, _ code: PngineError.Code = .executorInvalid) -> PngineError {
      PngineError(code, message, location: .init(chunk: "pNGb", call: "instantiate"))
    }
    var types: [FunctionType?] = []
    var functionTypes: [UInt32] = []  // type index of each function, imports first
    var imports: [WasmParser.Import] = []
    var exports: [WasmParser.Export] = []
    var memories: [MemoryType] = []
    var hasStart = false
    var parser = Parser(bytes: bytes, features: [.referenceTypes])
    do {
      while let payload = try parser.parseNext() {
        switch payload {
        case .typeSection(let groups):
          for group in groups {
            for sub in group.types {
              if case .function(let f) = sub.body { types.append(f) } else { types.append(nil) }
            }
          }
        case .importSection(let list):
          imports = list
          for i in list { if case .function(let t) = i.descriptor { functionTypes.append(t) } }
        case .functionSection(let list): functionTypes.append(contentsOf: list)
        case .memorySection(let list): memories.append(contentsOf: list.map { $0.type })
        case .exportSection(let list): exports = list
        case .startSection: hasStart = true
        case .codeSection:
          // Everything the checks need precedes the code; WasmKit validates the rest.
          break
        default: break
        }
      }
    } catch {
      throw invalid("not valid WebAssembly: \(error)")
    }
    var importNames: [String] = []
    var importsLog = false
    for i in imports {
      importNames.append("\(i.module).\(i.name)")
      guard i.module == "env", i.name == "log", case .function(let t) = i.descriptor,
        Int(t) < types.count, types[Int(t)] == FunctionType(parameters: [.i32, .i32])
      else {
        throw invalid(
          "import \(i.module).\(i.name) is not allowed (only env.log(i32, i32) is provided)",
          .importNotAllowed)
      }
      importsLog = true
    }
    guard !hasStart else { throw invalid("the executor has a start function") }
    guard memories.count == 1, let memory = memories.first else {
      throw invalid("the executor must define exactly one memory (it defines \(memories.count))")
    }
    guard !memory.isMemory64, !memory.shared else {
      throw invalid("64-bit or shared memory is not supported")
    }
    try Self.check(memoryMinimumPages: memory.min, maxMemoryPages: maxMemoryPages)
    func signature(_ name: String) -> FunctionType?? {
      guard let e = exports.first(where: { $0.name == name }) else { return .none }
      guard case .function(let index) = e.descriptor, Int(index) < functionTypes.count,
        Int(functionTypes[Int(index)]) < types.count
      else { return .some(nil) }
      return .some(types[Int(functionTypes[Int(index)])])
    }
    guard
      let memoryExport = exports.first(where: { $0.name == "memory" }),
      case .memory = memoryExport.descriptor
    else { throw invalid("no exported memory named memory") }
    for (name, params, results) in Self.required {
      guard let found = signature(name) else { throw invalid("missing export \(name)") }
      guard found == FunctionType(parameters: params, results: results) else {
        throw invalid("export \(name) has the wrong signature")
      }
    }
    for (name, params, results) in Self.optional {
      if let found = signature(name), found != FunctionType(parameters: params, results: results) {
        throw invalid("export \(name) has the wrong signature")
      }
    }
    self.exports = exports.map(\.name)
    self.imports = importNames
    self.memoryMinimumPages = memory.min
    self.memoryMaximumPages = memory.max
    self.hasAbiVersion = signature("getAbiVersion") != nil
    self.importsLog = importsLog
  }

  /// Throws ``PngineError/Code/memoryLimit`` when the declared minimum memory passes
  /// `maxMemoryPages`.
  func check(maxMemoryPages: UInt64) throws(PngineError) {
    try Self.check(memoryMinimumPages: memoryMinimumPages, maxMemoryPages: maxMemoryPages)
  }

  private static func check(memoryMinimumPages: UInt64, maxMemoryPages: UInt64)
    throws(PngineError)
  {
    guard memoryMinimumPages <= maxMemoryPages else {
      throw PngineError(
        .memoryLimit,
        "memory declares \(memoryMinimumPages) pages at least; the cap is \(maxMemoryPages)",
        location: .init(chunk: "pNGb", call: "instantiate"))
    }
  }
}
