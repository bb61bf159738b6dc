/// A generator of hostile executors: PNGs whose embedded WebAssembly module implements the
/// executor ABI and writes the command streams of its author's choosing, or misbehaves.
///
/// Mutated fixtures only change what a real executor reads; an attacker writes the executor
/// itself. Each input here is a new module, built byte by byte (``WasmModuleWriter``), that
/// replays a real scene (a fixture's `init` and frame streams, recorded with their blobs) from
/// data segments, after mutating it where a host is weakest:
/// - **fields**: ids, sizes, usages, counts, offsets and op codes of one command set to
///   extremes or random bytes; one command's blob pointer or length sent out of memory;
/// - **structure**: a command dropped, repeated or moved, an id swapped for another of the
///   scene's (a buffer used as a texture), GPU work at its limits (draws of 2³²−1 vertices or
///   instances, dispatches of 65535³), the truncated flag set, a status returned;
/// - **text**: WGSL replaced by a construct that makes a shader compiler recurse (templates,
///   operator and unary chains, `else if` chains, brackets, thousands to tens of thousands
///   deep), or bytes of WGSL and descriptor JSON mutated;
/// - **behaviour**: `frame` or `init` looping forever, trapping, recursing out of its stack,
///   growing memory to its limit, lying about its command buffer's pointer or length.
///
/// The same seed and index give the same PNG. Whatever it makes, a host must answer with a
/// ``PngineError`` and live: `pngine fuzz-gpu --executors` renders the inputs on the GPU in
/// child processes and counts aborts.
public struct ExecutorFuzzer: Sendable {
  /// One command of a scene: its bytes (opcode first) and the blob it points at, if any.
  public struct Op: Sendable, Hashable {
    /// The command's bytes, opcode first; a blob's pointer and length are rewritten on build.
    public var bytes: [UInt8]
    /// The blob's bytes.
    public var blob: [UInt8]?
    /// Where in `bytes` the blob's u32 pointer sits (its u32 length follows).
    public var blobField: Int?

    /// Makes a command.
    public init(bytes: [UInt8], blob: [UInt8]? = nil, blobField: Int? = nil) {
      self.bytes = bytes
      self.blob = blob
      self.blobField = blobField
    }
  }

  /// What the generated module does besides writing its streams.
  public enum Behaviour: String, Sendable, CaseIterable {
    /// Writes its streams, as a real executor.
    case plain
    /// `frame` loops forever.
    case frameLoops
    /// `init` loops forever.
    case initLoops
    /// `frame` executes `unreachable`.
    case frameTraps
    /// `frame` calls itself until the WebAssembly stack is exhausted.
    case frameRecurses
    /// `frame` grows memory by 65,535 pages first.
    case frameGrows
    /// `getCommandLen` answers 2³²−1.
    case lengthLies
    /// `getCommandLen` answers 3 (shorter than a header).
    case lengthShort
    /// `getCommandPtr` answers a pointer past memory.
    case pointerPastMemory
    /// `frame` returns status 7.
    case frameStatus
  }

  /// A scene: the `init` and frame streams as commands, and their layout.
  public struct Scene: Sendable, Hashable {
    /// `init`'s commands (its `end` included when it had one).
    public var initOps: [Op]
    /// A frame's commands.
    public var frameOps: [Op]
    /// The layout the streams were written in (the module declares it).
    public var layout: CommandLayout

    /// Makes a scene.
    public init(initOps: [Op], frameOps: [Op], layout: CommandLayout) {
      self.initOps = initOps
      self.frameOps = frameOps
      self.layout = layout
    }

    /// Records the scene of a PNGine PNG: its executor's `init` and the frame at `time`.
    public static func record(png: [UInt8], time: Float = 0.5) throws(PngineError) -> Scene {
      let animation = PngineAnimation()
      let report = try animation.load(png: png)
      let layout = report.executor.layout
      let frame = try animation.frame(time: time, width: 64, height: 64)
      return Scene(
        initOps: try ops(report.initOutput, layout: layout),
        frameOps: try ops(frame, layout: layout), layout: layout)
    }

    /// Splits a call's output into commands with their blobs.
    static func ops(_ output: FrameOutput, layout: CommandLayout) throws(PngineError) -> [Op] {
      let bytes = output.result.bytes
      let buffer = try CommandBuffer(decoding: bytes, layout: layout)
      let ends = buffer.commands.dropFirst().map(\.offset) + [Int(buffer.totalLength)]
      return zip(buffer.commands.indices, ends).map { index, end in
        let command = buffer.commands[index]
        var op = Op(bytes: Array(bytes[command.offset..<end]))
        if let ref = command.command.blobs.first, case .bytes(let blob)? = output.blobs[index] {
          op.blob = blob
          op.blobField = Self.field(of: ref, in: op.bytes)
        }
        return op
      }
    }

    /// Where `ref`'s pointer and length sit in a command's bytes.
    static func field(of ref: BlobRef, in bytes: [UInt8]) -> Int? {
      let view = ByteView(bytes)
      return (1..<bytes.count).first {
        view.u32le($0) == ref.pointer && view.u32le($0 + 4) == ref.length
      }
    }
  }

  private let scenes: [Scene]
  private let seed: UInt64

  /// A generator over recorded `scenes` (non-empty) with `seed`.
  public init(seed: UInt64, scenes: [Scene]) {
    self.seed = seed
    self.scenes = scenes
  }

  /// Input `index`: the PNG and a line saying what was done to it.
  public func input(_ index: Int) -> (png: [UInt8], summary: String) {
    var rng = SplitMix64(
      seed: seed &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(index) &* 0xD6E8_FEB8_6659_FD93)
    let sceneIndex = rng.next(scenes.count)
    var scene = scenes[sceneIndex]
    var notes = ["scene \(sceneIndex)"]
    var behaviour = Behaviour.plain
    var status: UInt32 = 0
    // One input in eight misbehaves; the rest write mutated streams.
    if rng.next(8) == 0 {
      behaviour = Behaviour.allCases[1 + rng.next(Behaviour.allCases.count - 1)]
      notes.append(behaviour.rawValue)
    }
    let edits = 1 + rng.next(3)
    for _ in 0..<edits {
      let inInit = rng.next(3) == 0
      var ops = inInit ? scene.initOps : scene.frameOps
      notes.append((inInit ? "init " : "frame ") + Self.mutate(&ops, &rng, &status))
      if inInit { scene.initOps = ops } else { scene.frameOps = ops }
    }
    if status != 0 { behaviour = .frameStatus }
    return (Self.png(scene, behaviour: behaviour), notes.joined(separator: "; "))
  }

  // MARK: - Mutations

  /// One structure-aware edit of `ops`; returns what it did.
  static func mutate(_ ops: inout [Op], _ rng: inout SplitMix64, _ status: inout UInt32)
    -> String
  {
    guard !ops.isEmpty else { return "nothing" }
    let at = rng.next(ops.count)
    switch rng.next(12) {
    case 0, 1, 2:
      // A field of one command: a byte or a u16/u32 set to an extreme.
      guard ops[at].bytes.count > 1 else { return "nothing" }
      let i = 1 + rng.next(ops[at].bytes.count - 1)
      let value: UInt32 = [0, 1, 0xFF, 0xFFFF, 0xFFFE, 0xFFFF_FFFF, 0x8000_0000, 0x3FF, 2][
        rng.next(9)]
      let width = [1, 2, 4][rng.next(3)]
      for k in 0..<width where i + k < ops[at].bytes.count {
        ops[at].bytes[i + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(k)))
      }
      return "field \(at)+\(i) = \(value) (\(width) bytes)"
    case 3:
      let removed = ops.remove(at: at)
      return "drop \(at) (0x\(hex2(removed.bytes.first ?? 0)))"
    case 4:
      let times = [2, 3, 100][rng.next(3)]
      ops.insert(contentsOf: repeatElement(ops[at], count: times - 1), at: at)
      return "repeat \(at) x\(times)"
    case 5:
      let op = ops.remove(at: at)
      let to = rng.next(ops.count + 1)
      ops.insert(op, at: to)
      return "move \(at) to \(to)"
    case 6:
      // An id swapped for one another command created: a resource used as another kind.
      let created = ops.filter { (0x01...0x0D).contains($0.bytes.first ?? 0) && $0.bytes.count > 2 }
      guard let other = created.randomElement(using: &rng), ops[at].bytes.count >= 3 else {
        return "nothing"
      }
      ops[at].bytes[1] = other.bytes[1]
      ops[at].bytes[2] = other.bytes[2]
      return "id of \(at) = \(ByteView(other.bytes).u16le(1) ?? 0)"
    case 7:
      // GPU work at its limits, in place of (or beside) the scene's own.
      let huge: [UInt32] = [0xFFFF_FFFF, 65535, 1 << 24, 1 << 20, 3]
      func pick() -> UInt32 { huge[rng.next(huge.count)] }
      let work: [UInt8]
      switch rng.next(3) {
      case 0: work = [0x15] + le32(pick()) + le32(pick()) + le32(0) + le32(0)
      case 1: work = [0x16] + le32(pick()) + le32(pick()) + le32(0) + le32(0) + le32(0)
      default: work = [0x18] + le32(pick()) + le32(pick()) + le32(pick())
      }
      let target =
        ops.firstIndex { op in op.bytes.first.map { [0x15, 0x16, 0x18].contains($0) } ?? false }
        ?? at
      ops[target] = Op(bytes: work)
      return "work \(target) = \(work.map { hex2($0) }.joined())"
    case 8:
      // A shader replaced by one that makes a compiler recurse.
      guard let shader = ops.firstIndex(where: { $0.bytes.first == 0x04 && $0.blob != nil }) else {
        return "nothing"
      }
      let depth = [100, 1_000, 5_000, 20_000][rng.next(4)]
      let (name, wgsl) = deepWGSL(kind: rng.next(6), depth: depth)
      ops[shader].blob = Array(wgsl.utf8)
      return "wgsl \(shader) = \(name) \(depth)"
    case 9:
      // A blob's bytes (WGSL, JSON, binary descriptors) mutated.
      guard
        let blobbed = ops.indices.filter({ ops[$0].blob?.isEmpty == false }).randomElement(
          using: &rng)
      else { return "nothing" }
      var blob = ops[blobbed].blob!
      let i = rng.next(blob.count)
      switch rng.next(4) {
      case 0: blob[i] ^= UInt8(1 << rng.next(8))
      case 1: blob.insert(contentsOf: Array("99999999".utf8), at: i)
      case 2: blob[i] = [0x80, 0xC0, 0xFF, 0x00, 0x22, 0x7B][rng.next(6)]
      default: blob.removeSubrange(i..<min(blob.count, i + 1 + rng.next(16)))
      }
      ops[blobbed].blob = blob
      return "blob \(blobbed) at \(i)"
    case 10:
      // A blob pointer or length out of memory (a field the build would otherwise fill).
      guard let blobbed = ops.indices.first(where: { ops[$0].blobField != nil }) else {
        return "nothing"
      }
      let field = ops[blobbed].blobField!
      ops[blobbed].blobField = nil
      let pointer: UInt32 = [0xFFFF_FFF0, 0x7FFF_FFFF, 0][rng.next(3)]
      let length: UInt32 = [0xFFFF_FFFF, 1 << 30, 16][rng.next(3)]
      ops[blobbed].bytes.replaceSubrange(field..<(field + 8), with: le32(pointer) + le32(length))
      return "blob ref \(blobbed) = \(pointer)+\(length)"
    default:
      // The truncated flag, or a status: each is the executor saying it failed.
      if rng.next(2) == 0 {
        status = 7
        return "status 7"
      }
      ops.insert(Op(bytes: [0xFE, 0xED]), at: 0)  // read by the build as "set the flag"
      return "truncated flag"
    }
  }

  /// WGSL whose structure makes a compiler recurse `depth` deep: nested templates, an
  /// operator chain, a unary run, nested brackets, an `else if` chain, a swizzle chain.
  public static func deepWGSL(kind: Int, depth: Int) -> (String, String) {
    let body: String
    let name: String
    switch kind % 6 {
    case 0:
      name = "templates"
      body =
        "var<private> t: " + String(repeating: "array<", count: depth) + "f32"
        + String(repeating: ", 1>", count: depth) + ";\n"
        + "@fragment fn fs() -> @location(0) vec4f { return vec4f(1.0); }"
    case 1:
      name = "operators"
      body =
        "@fragment fn fs() -> @location(0) vec4f { let x = 1.0"
        + String(repeating: " + 1.0", count: depth) + "; return vec4f(x); }"
    case 2:
      name = "unary"
      body =
        "@fragment fn fs() -> @location(0) vec4f { let x = " + String(repeating: "-", count: depth)
        + "1.0; return vec4f(x); }"
    case 3:
      name = "brackets"
      body =
        "@fragment fn fs() -> @location(0) vec4f { let x = " + String(repeating: "(", count: depth)
        + "1.0" + String(repeating: ")", count: depth) + "; return vec4f(x); }"
    case 4:
      name = "else-if"
      body =
        "@fragment fn fs() -> @location(0) vec4f { var x = 0.0; if x > 0.0 { x = 1.0; }"
        + String(repeating: " else if x > 1.0 { x = 2.0; }", count: depth) + " return vec4f(x); }"
    default:
      name = "swizzles"
      body =
        "@fragment fn fs() -> @location(0) vec4f { let v = vec4f(1.0); return v"
        + String(repeating: ".xyzw", count: depth) + "; }"
    }
    return (name, body)
  }

  // MARK: - Building

  /// Where the streams and blobs go in the module's memory (below: its bookkeeping).
  static let streamBase = 4096

  /// The PNG of `scene` with an executor behaving as `behaviour`.
  public static func png(_ scene: Scene, behaviour: Behaviour = .plain) -> [UInt8] {
    var image: [UInt8] = []
    func place(_ ops: [Op]) -> (pointer: Int, length: Int) {
      // Blobs first, then the buffer that points at them.
      var truncated = false
      var commands: [[UInt8]] = []
      for op in ops {
        if op.bytes == [0xFE, 0xED] {
          truncated = true
          continue
        }
        var bytes = op.bytes
        if let blob = op.blob, let field = op.blobField, field + 8 <= bytes.count {
          let pointer = streamBase + image.count
          image += blob
          bytes.replaceSubrange(
            field..<(field + 8), with: le32(UInt32(pointer)) + le32(UInt32(blob.count)))
        }
        commands.append(bytes)
      }
      let body = commands.flatMap { $0 }
      let length = 8 + body.count
      let pointer = streamBase + image.count
      image +=
        le32(UInt32(length)) + le16(UInt16(truncatingIfNeeded: commands.count))
        + le16(truncated ? 1 : 0) + body
      return (pointer, length)
    }
    let initStream = place(scene.initOps)
    let frameStream = place(scene.frameOps)
    // The host copies the payload (this module included, so about the image's size) to the
    // bytecode pointer: it goes after the image, and the (empty) data after it.
    let page = 65536
    let bytecode = (streamBase + image.count + page - 1) / page * page
    let data = bytecode + (image.count + 2 * page) / page * page
    let pages = data / page + 2
    let wasm = module(
      image: image, pages: pages, bytecode: bytecode, data: data, initStream: initStream,
      frameStream: frameStream,
      legacy: scene.layout == .legacy, behaviour: behaviour)
    return PngineFuzzer.testPNG(with: [1, 0] + payload(executor: wasm))
  }

  /// A payload: header, the executor, then empty string, data, WGSL and uniform tables.
  static func payload(executor: [UInt8]) -> [UInt8] {
    let strings = UInt32(PNGBHeader.size + executor.count)
    let data = strings + 2
    let wgsl = data + 2
    let uniforms = wgsl + 1
    var out = Array("PNGB".utf8) + [0, 0, 1, 0, 0, 0, 0, 0]
    for value in [
      UInt32(PNGBHeader.size), UInt32(executor.count), strings, data, wgsl, uniforms, uniforms,
    ] {
      out += le32(value)
    }
    return out + executor + [0, 0, 0, 0, 0]
  }

  /// The executor module: memory with the streams in a data segment and the ABI's exports.
  /// Address 0 holds the current buffer's pointer, 4 its length.
  static func module(
    image: [UInt8], pages: Int, bytecode: Int, data: Int, initStream: (pointer: Int, length: Int),
    frameStream: (pointer: Int, length: Int), legacy: Bool, behaviour: Behaviour
  ) -> [UInt8] {
    var writer = WasmModuleWriter()
    if legacy { writer.importFunction(module: "env", name: "log", params: [.i32, .i32]) }
    func setCurrent(_ stream: (pointer: Int, length: Int)) -> [UInt8] {
      Wasm.i32Const(0) + Wasm.i32Const(Int32(stream.pointer)) + Wasm.i32Store
        + Wasm.i32Const(4) + Wasm.i32Const(Int32(stream.length)) + Wasm.i32Store
    }
    let constant = { (value: Int32) in Wasm.i32Const(value) }
    writer.export("getBytecodePtr", results: [.i32], body: constant(Int32(bytecode)))
    writer.export("setBytecodeLen", params: [.i32], body: [])
    writer.export("getDataPtr", results: [.i32], body: constant(Int32(data)))
    writer.export("setDataLen", params: [.i32], body: [])
    let pointer: [UInt8] =
      behaviour == .pointerPastMemory
      ? constant(Int32(truncatingIfNeeded: pages * 65536 + 16))
      : Wasm.i32Const(0) + Wasm.i32Load
    writer.export("getCommandPtr", results: [.i32], body: pointer)
    let length: [UInt8] =
      switch behaviour {
      case .lengthLies: constant(-1)
      case .lengthShort: constant(3)
      default: Wasm.i32Const(4) + Wasm.i32Load
      }
    writer.export("getCommandLen", results: [.i32], body: length)
    var initBody = setCurrent(initStream)
    if behaviour == .initLoops { initBody = Wasm.loopForever + initBody }
    writer.export("init", results: [.i32], body: initBody + Wasm.i32Const(0))
    var frameBody = setCurrent(frameStream)
    let frameIndex = writer.functionCount
    switch behaviour {
    case .frameLoops: frameBody = Wasm.loopForever + frameBody
    case .frameTraps: frameBody = [0x00] + frameBody
    case .frameGrows: frameBody = Wasm.i32Const(65535) + [0x40, 0x00, 0x1A] + frameBody
    case .frameRecurses:
      // Calls itself with its own arguments: the stack runs out before anything returns.
      frameBody = [0x20, 0x00, 0x20, 0x01, 0x20, 0x02, 0x10] + Wasm.uleb(frameIndex) + [0x1A]
    default: break
    }
    let status: Int32 = behaviour == .frameStatus ? 7 : 0
    writer.export(
      "frame", params: [.f32, .i32, .i32], results: [.i32], body: frameBody + constant(status))
    writer.memory(pages: pages, data: [(0, Array(repeating: 0, count: 8)), (streamBase, image)])
    return writer.bytes()
  }
}

private func le32(_ v: UInt32) -> [UInt8] {
  [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
}

private func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
