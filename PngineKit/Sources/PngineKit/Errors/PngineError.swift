/// The one error type of PngineKit: a code, a human message, and where the offending input is.
///
/// ``Code`` is extensible (a struct, not an enum): it holds upstream PNGine's native codes
/// (`0 … -13`, the `PngineError` enum of `native_api.zig`) and the host's own finer codes
/// (`-100` and below), each of which names the native code it falls under
/// (``Code/nativeCode``). A nonzero status returned by the executor's `init` or `frame` is
/// ``Code/executorStatus`` with the status in ``executorStatus``.
public struct PngineError: Error, Sendable, Hashable, CustomStringConvertible {
  /// An error code. Compare with the static members; unknown raw values are allowed.
  public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric value: `0 … -13` are upstream's native codes, `-100` and below the host's.
    public var rawValue: Int32

    /// Makes a code from its numeric value.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    // Upstream's native codes (native_api.zig).
    /// No error.
    public static let ok = Code(rawValue: 0)
    /// The animation is not loaded (never loaded, or unloaded).
    public static let notInitialized = Code(rawValue: -1)
    /// Already initialised.
    public static let alreadyInitialized = Code(rawValue: -2)
    /// The context could not be created.
    public static let contextFailed = Code(rawValue: -3)
    /// The bytecode (or its container) is invalid.
    public static let bytecodeInvalid = Code(rawValue: -4)
    /// The surface could not be created.
    public static let surfaceFailed = Code(rawValue: -5)
    /// A shader did not compile.
    public static let shaderCompile = Code(rawValue: -6)
    /// A pipeline could not be created.
    public static let pipelineCreate = Code(rawValue: -7)
    /// A texture is unavailable.
    public static let textureUnavailable = Code(rawValue: -8)
    /// A resource id was used that was never defined.
    public static let resourceNotFound = Code(rawValue: -9)
    /// A memory cap was reached.
    public static let outOfMemory = Code(rawValue: -10)
    /// An argument is out of range.
    public static let invalidArgument = Code(rawValue: -11)
    /// Rendering a frame failed.
    public static let renderFailed = Code(rawValue: -12)
    /// A compute pass failed.
    public static let computeFailed = Code(rawValue: -13)

    // The host's own codes. Each falls under one native code (`nativeCode`).
    /// The file is not a PNG (bad signature, chunk past the end, missing IEND).
    public static let invalidPNG = Code(rawValue: -100)
    /// A chunk's CRC does not match its bytes.
    public static let crcMismatch = Code(rawValue: -101)
    /// The PNG has no `pNGb` chunk.
    public static let noPayload = Code(rawValue: -102)
    /// A chunk or the inflated payload exceeds its cap.
    public static let limitExceeded = Code(rawValue: -103)
    /// The raw DEFLATE stream is corrupt or truncated.
    public static let inflateFailed = Code(rawValue: -104)
    /// The PNGB header or its section offsets are invalid.
    public static let invalidHeader = Code(rawValue: -105)
    /// A PNGB table (strings, data, WGSL) is malformed.
    public static let invalidTable = Code(rawValue: -106)
    /// The payload carries no embedded executor, so it cannot be run faithfully.
    public static let executorMissing = Code(rawValue: -110)
    /// The executor is not valid WebAssembly, or lacks a required export or signature.
    public static let executorInvalid = Code(rawValue: -111)
    /// The executor imports something other than `env.log(i32, i32)`.
    public static let importNotAllowed = Code(rawValue: -112)
    /// The executor declares more memory than the cap.
    public static let memoryLimit = Code(rawValue: -113)
    /// A call used up its fuel budget (an endless or too long loop).
    public static let outOfFuel = Code(rawValue: -114)
    /// The executor trapped (`unreachable`, out-of-bounds access, …).
    public static let trap = Code(rawValue: -115)
    /// The executor returned a pointer or length outside its memory.
    public static let pointerOutOfBounds = Code(rawValue: -116)
    /// The executor returned a nonzero status from `init` or `frame`.
    public static let executorStatus = Code(rawValue: -117)
    /// A frame (or `init`) went over one of its budgets (``FrameBudgets``): blob bytes copied
    /// out of the executor's memory, draws or dispatches. The animation stops.
    public static let budgetExceeded = Code(rawValue: -118)
    /// The animation stopped after an earlier error (a trap, fuel used up, memory grown past
    /// the cap, a budget exceeded) and its executor is never called again; the message names
    /// that error. Load again to go on.
    public static let executorStopped = Code(rawValue: -119)
    /// The command buffer's header and commands disagree, or an opcode is unknown.
    public static let invalidCommandBuffer = Code(rawValue: -120)
    /// The command stream is well formed but inconsistent (id used before definition, passes
    /// do not nest, submit not last).
    public static let commandValidation = Code(rawValue: -121)
    /// The GPU rejected a command (a WebGPU validation or out-of-memory error); the message
    /// is the GPU's.
    public static let gpuValidation = Code(rawValue: -130)
    /// The GPU device was lost (destroyed, reset, or its driver gone).
    public static let deviceLost = Code(rawValue: -131)
    /// No GPU adapter or device could be obtained.
    public static let gpuUnavailable = Code(rawValue: -132)
    /// A descriptor blob (texture, sampler, bind group, pipeline JSON) is malformed.
    public static let invalidDescriptor = Code(rawValue: -133)
    /// The GPU did not finish a frame's work within ``GPULimits/submitTimeout``: the device
    /// was given up (every other animation on it sees ``deviceLost`` and moves to a new one),
    /// and this animation stops rather than run the same work again.
    public static let gpuTimeout = Code(rawValue: -134)

    /// Upstream's native code this code falls under.
    public var nativeCode: Code {
      switch self {
      case .invalidPNG, .crcMismatch, .noPayload, .inflateFailed, .invalidHeader, .invalidTable,
        .executorMissing, .executorInvalid, .importNotAllowed, .invalidCommandBuffer:
        return .bytecodeInvalid
      case .limitExceeded, .memoryLimit: return .outOfMemory
      case .outOfFuel, .trap, .pointerOutOfBounds, .executorStatus, .budgetExceeded,
        .executorStopped, .commandValidation, .gpuValidation, .gpuTimeout:
        return .renderFailed
      case .deviceLost, .gpuUnavailable: return .contextFailed
      case .invalidDescriptor: return .invalidArgument
      default: return self
      }
    }

    /// A short name, e.g. `crcMismatch`.
    public var description: String {
      let names: [Int32: String] = [
        0: "ok", -1: "notInitialized", -2: "alreadyInitialized", -3: "contextFailed",
        -4: "bytecodeInvalid", -5: "surfaceFailed", -6: "shaderCompile", -7: "pipelineCreate",
        -8: "textureUnavailable", -9: "resourceNotFound", -10: "outOfMemory",
        -11: "invalidArgument", -12: "renderFailed", -13: "computeFailed", -100: "invalidPNG",
        -101: "crcMismatch", -102: "noPayload", -103: "limitExceeded", -104: "inflateFailed",
        -105: "invalidHeader", -106: "invalidTable", -110: "executorMissing",
        -111: "executorInvalid", -112: "importNotAllowed", -113: "memoryLimit",
        -114: "outOfFuel", -115: "trap", -116: "pointerOutOfBounds", -117: "executorStatus",
        -118: "budgetExceeded", -119: "executorStopped",
        -120: "invalidCommandBuffer", -121: "commandValidation", -130: "gpuValidation",
        -131: "deviceLost", -132: "gpuUnavailable", -133: "invalidDescriptor",
        -134: "gpuTimeout",
      ]
      return names[rawValue] ?? "code(\(rawValue))"
    }
  }

  /// Where an error was found. Every field is optional: each stage fills what it knows.
  public struct Location: Sendable, Hashable, CustomStringConvertible {
    /// The PNG chunk type, e.g. `IDAT` or `pNGb`.
    public var chunk: String?
    /// A byte offset: into the file for chunk errors, into the payload for PNGB errors, into
    /// the command buffer for command errors.
    public var byteOffset: Int?
    /// The command opcode involved.
    public var opcode: UInt8?
    /// The executor call involved: `init`, `frame`, or an export name.
    public var call: String?

    /// Makes a location.
    public init(
      chunk: String? = nil, byteOffset: Int? = nil, opcode: UInt8? = nil,
      call: String? = nil
    ) {
      self.chunk = chunk
      self.byteOffset = byteOffset
      self.opcode = opcode
      self.call = call
    }

    /// `chunk IDAT, offset 33, opcode 0x10, call frame` (only the fields that are set).
    public var description: String {
      var parts: [String] = []
      if let chunk { parts.append("chunk \(chunk)") }
      if let byteOffset { parts.append("offset \(byteOffset)") }
      if let opcode { parts.append("opcode 0x" + hex2(opcode)) }
      if let call { parts.append("call \(call)") }
      return parts.joined(separator: ", ")
    }
  }

  /// What went wrong, as a code.
  public var code: Code
  /// A human-readable message.
  public var message: String
  /// Where.
  public var location: Location
  /// The executor's status for ``Code/executorStatus`` (init: 1 short, 2 magic, 3 version,
  /// 4 geometry, 5 id, 6 overflow; frame: 1 not initialised, 2 id, 3 overflow).
  public var executorStatus: UInt32?

  /// The most lines of a message: the rest is cut and counted. Messages quote text from the
  /// payload and the runtime (a shader compiler's report, a trap's backtrace, which WasmKit
  /// makes thousands of lines long for a stack exhaustion).
  public static let maxMessageLines = 16
  /// The most bytes (UTF-8) of a message: the rest is cut and counted.
  public static let maxMessageBytes = 2048

  /// Makes an error. A message longer than ``maxMessageLines`` or ``maxMessageBytes`` is cut
  /// there, with what was cut counted at its end.
  public init(
    _ code: Code, _ message: String, location: Location = Location(),
    executorStatus: UInt32? = nil
  ) {
    self.code = code
    self.message = Self.bounded(message)
    self.location = location
    self.executorStatus = executorStatus
  }

  /// `text`, or its first lines and bytes within the bounds and a count of the rest.
  static func bounded(_ text: String) -> String {
    let utf8 = text.utf8
    guard utf8.count > 256 || utf8.contains(0x0A) else { return text }
    var kept = 0
    var lines = 1
    for byte in utf8 {
      if kept == maxMessageBytes { break }
      if byte == 0x0A {
        if lines == maxMessageLines { break }
        lines += 1
      }
      kept += 1
    }
    guard kept < utf8.count else { return text }
    // The cut falls before a character, never inside one.
    let bytes = Array(utf8)
    while kept > 0, bytes[kept] & 0xC0 == 0x80 { kept -= 1 }
    let rest = bytes[kept...]
    let moreLines = rest.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
    return String(decoding: bytes[..<kept], as: UTF8.self)
      + " … [\(rest.count) more bytes, \(moreLines) more lines cut]"
  }

  /// `crcMismatch: … (chunk IDAT, offset 33)`.
  public var description: String {
    let at = location.description
    return "\(code): \(message)" + (at.isEmpty ? "" : " (\(at))")
  }
}

func hex2(_ byte: UInt8) -> String {
  let digits = Array("0123456789abcdef")
  return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
}

/// Lower-case hex of bytes, two digits each.
func hexString<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
  let digits: [UInt8] = Array("0123456789abcdef".utf8)
  var out = [UInt8]()
  out.reserveCapacity(bytes.count * 2)
  for b in bytes {
    out.append(digits[Int(b >> 4)])
    out.append(digits[Int(b & 0xF)])
  }
  return String(decoding: out, as: UTF8.self)
}
