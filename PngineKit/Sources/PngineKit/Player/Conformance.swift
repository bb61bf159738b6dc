import Logging

/// The conformance oracle's format: what a payload's own executor produced, in split mode,
/// as the lines of `cmdbufs/*.txt`.
///
/// ```
/// exports <export names in declaration order> abi <n>
/// init rc <u32> total <u32> cmds <u16> flags <u16> <hex of the whole buffer>
/// frame0 rc …            (frame(times[0], width, height))
/// frame1 rc …
/// ```
public enum PngineConformance {
  /// The executor's raw outputs for `init` and each time, in split mode (the oracle's),
  /// without decoding. A nonzero status is reported, not thrown.
  public static func run(
    png: [UInt8], times: [Float], width: UInt32, height: UInt32,
    limits: RuntimeLimits = RuntimeLimits(), formatLimits: FormatLimits = FormatLimits()
  ) throws(PngineError) -> (info: ExecutorInfo, abi: UInt32, calls: [ExecutorCallResult]) {
    let file = try PNGFile.read(png, limits: formatLimits)
    guard let bytes = file.payloadBytes else {
      throw PngineError(.noPayload, "the PNG has no pNGb chunk", location: .init(chunk: "pNGb"))
    }
    let payload = try PNGBPayload(bytes)
    guard let executorBytes = payload.executorBytes else {
      throw PngineError(
        .executorMissing, "the payload has no embedded executor",
        location: .init(chunk: "pNGb", byteOffset: 6))
    }
    let executor = try Executor(
      bytes: Array(executorBytes), limits: limits,
      logger: Logger(label: "pngine", factory: { _ in SwiftLogNoOpLogHandler() }))
    try executor.load(payload, singleBuffer: false)
    let abi = try executor.abiVersion()
    var calls = [try executor.callInit()]
    for t in times {
      calls.append(try executor.callFrame(time: t, width: width, height: height))
    }
    return (executor.info, abi, calls)
  }

  /// The oracle's lines for `png` (see the type's documentation).
  public static func oracleLines(
    png: [UInt8], times: [Float] = [0, 1], width: UInt32 = 512, height: UInt32 = 512
  ) throws(PngineError) -> [String] {
    let (info, abi, calls) = try run(png: png, times: times, width: width, height: height)
    var lines = ["exports \(info.exports.joined(separator: ",")) abi \(abi)"]
    for (index, call) in calls.enumerated() {
      let name = index == 0 ? "init" : "frame\(index - 1)"
      lines.append("\(name) \(oracleFields(call.bytes, status: call.status))")
    }
    return lines
  }

  static func oracleFields(_ bytes: [UInt8], status: UInt32) -> String {
    let view = ByteView(bytes)
    let total = view.u32le(0).map(String.init) ?? "?"
    let count = view.u16le(4).map(String.init) ?? "?"
    let flags = view.u16le(6).map(String.init) ?? "?"
    return "rc \(status) total \(total) cmds \(count) flags \(flags) \(hexString(bytes))"
  }
}
