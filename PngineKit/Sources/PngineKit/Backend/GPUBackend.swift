/// The values the host fills in for a call, as upstream's web host does: the animation time
/// and the canvas size (`write_time_uniform` writes `[time, width, height, width/height]`).
public struct FrameInputs: Sendable, Hashable {
  /// Seconds since the animation started.
  public var time: Float
  /// Canvas width in pixels.
  public var width: UInt32
  /// Canvas height in pixels.
  public var height: UInt32
  /// The pointer (``PointerState``; at rest when there is none).
  public var pointer: PointerState

  /// Makes inputs.
  public init(time: Float, width: UInt32, height: UInt32, pointer: PointerState = PointerState()) {
    self.time = time
    self.width = width
    self.height = height
    self.pointer = pointer
  }

  /// The bytes `write_time_uniform` writes: four little-endian f32 `[time, width, height,
  /// width / height]` (height 0 counts as 1, as upstream), cut to `size` (at most 16).
  public func timeUniformBytes(size: Int) -> [UInt8] {
    let w = Float(width)
    let h = Float(height)
    return littleEndianFloatBytes([time, w, h, w / (h == 0 ? 1 : h)], prefix: size)
  }
}

/// Something that carries out a command stream: the recording backend (``RecordingBackend``)
/// or a GPU (the `PngineWebGPU` module's `WebGPUBackend`).
///
/// A backend receives `init`'s stream once, then each frame's, in order. It throws a
/// ``PngineError`` whose location names the offending command (opcode, offset, call) and
/// whose message carries the GPU's own words (a WGSL compile error, a validation message).
/// Backends are not `Sendable`: a GPU's handles are confined to the thread that owns the
/// backend.
public protocol GPUBackend: AnyObject {
  /// Executes one call's commands. `blobs` holds each command's resolved blob by its index
  /// in `commands`.
  func execute(
    _ commands: [DecodedCommand], blobs: [Int: Blob], call: String, inputs: FrameInputs
  ) throws(PngineError)
}

extension GPUBackend {
  /// Executes a decoded call (``PngineAnimation/frame(time:width:height:)``'s output or
  /// ``LoadReport/initOutput``).
  public func execute(_ output: FrameOutput, inputs: FrameInputs) throws(PngineError) {
    try execute(
      output.buffer.commands, blobs: output.blobs, call: output.result.call, inputs: inputs)
  }
}

extension DecodedCommand {
  /// Where this command is, for an error about it.
  public func location(call: String) -> PngineError.Location {
    PngineError.Location(byteOffset: offset, opcode: opcode, call: call)
  }
}
