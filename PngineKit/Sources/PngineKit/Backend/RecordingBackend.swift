/// The recording backend: checks every command (``CommandChecker``) and records what it was
/// asked, without a GPU. For tests, for hosts without a GPU, and as the reference of what a
/// GPU backend receives.
public final class RecordingBackend: GPUBackend {
  /// One recorded command.
  public struct Entry: Sendable, Hashable {
    /// The call (`init`, `frame`).
    public var call: String
    /// The command.
    public var command: Command
    /// The bytes it wrote into a buffer (`writeBuffer`, `writeTimeUniform`,
    /// `writePointerUniform`), if any.
    public var written: [UInt8]?
  }

  /// The checker's state after the last command.
  public private(set) var checker = CommandChecker()
  /// Everything executed, in order.
  public private(set) var entries: [Entry] = []
  /// Submits seen.
  public private(set) var submits = 0

  /// Makes an empty backend checking against `limits`.
  public init(limits: GPULimits = GPULimits()) { checker = CommandChecker(limits: limits) }

  /// Checks and records `commands`; stops at the first failing command (leaving no pass
  /// open).
  public func execute(
    _ commands: [DecodedCommand], blobs: [Int: Blob], call: String, inputs: FrameInputs
  ) throws(PngineError) {
    for (index, decoded) in commands.enumerated() {
      let blob = blobs[index]
      do {
        try checker.check(decoded, blob: blob, call: call)
      } catch {
        checker.abandonPass()
        throw error
      }
      var written: [UInt8]?
      switch decoded.command {
      case .writeBuffer:
        if case .bytes(let b)? = blob { written = b }
      case .writeTimeUniform(_, _, let size):
        written = inputs.timeUniformBytes(size: Int(size))
      case .writePointerUniform(_, _, let size):
        written = inputs.pointer.uniformBytes(size: Int(size))
      case .submit: submits += 1
      default: break
      }
      entries.append(Entry(call: call, command: decoded.command, written: written))
    }
  }

  /// Forgets the entries (not the defined resources).
  public func clearEntries() { entries.removeAll(keepingCapacity: true) }
}
