import Foundation

// Pure decoders of the descriptor blobs commands point at. The formats are upstream PNGine's
// (its DescriptorEncoder and its web host's decoders): a TLV blob is `[type tag][field
// count]` then per field `[field id][value type][value]`, value types 0x00 u32, 0x01 f32,
// 0x02 string id (u16), 0x03 array, 0x05 bool (u8), 0x06 u16, 0x07 enum (u8).

/// A descriptor that cannot be read: its error.
func invalidDescriptor(_ what: String) -> PngineError {
  PngineError(.invalidDescriptor, what)
}

private struct TLVReader {
  let bytes: [UInt8]
  var offset = 0
  init(_ bytes: [UInt8]) { self.bytes = bytes }
  mutating func u8() throws(PngineError) -> UInt8 {
    guard offset < bytes.count else {
      throw invalidDescriptor("descriptor ends early at byte \(offset)")
    }
    defer { offset += 1 }
    return bytes[offset]
  }
  mutating func u16() throws(PngineError) -> UInt16 {
    let a = UInt16(try u8())
    return a | UInt16(try u8()) << 8
  }
  mutating func u32() throws(PngineError) -> UInt32 {
    var v: UInt32 = 0
    for shift in stride(from: 0, to: 32, by: 8) { v |= UInt32(try u8()) << UInt32(shift) }
    return v
  }
  /// Skips a value of type `type` (unknown field ids never desync the cursor).
  mutating func skip(type: UInt8) throws(PngineError) {
    switch type {
    case 0x00, 0x01: _ = try u32()
    case 0x02, 0x06: _ = try u16()
    case 0x05, 0x07: _ = try u8()
    default:
      throw invalidDescriptor(
        "descriptor value type 0x\(String(type, radix: 16)) cannot be skipped")
    }
  }
}

/// A texture descriptor (TLV tag 0x01).
public struct TextureDescriptor: Sendable, Hashable {
  /// Width, or `nil`: the canvas width.
  public var width: UInt32?
  /// Height, or `nil`: the canvas height.
  public var height: UInt32?
  /// Depth or array layers (default 1).
  public var depthOrArrayLayers: UInt32 = 1
  /// Mip levels (default 1).
  public var mipLevelCount: UInt32 = 1
  /// Samples (default 1).
  public var sampleCount: UInt32 = 1
  /// Dimension: 0 `1d`, 1 `2d` (default), 2 `3d`.
  public var dimension: UInt8 = 1
  /// Format code (``TextureFormatCode``), or `nil`: the canvas format.
  public var format: UInt8?
  /// WebGPU usage bits (default RENDER_ATTACHMENT 0x10).
  public var usage: UInt32 = 0x10

  /// Whether the size follows the canvas (neither width nor height given).
  public var isCanvasBound: Bool { width == nil && height == nil }

  /// Decodes the blob.
  public init(decoding bytes: [UInt8]) throws(PngineError) {
    var r = TLVReader(bytes)
    _ = try r.u8()
    let count = try r.u8()
    for _ in 0..<count {
      let field = try r.u8()
      let type = try r.u8()
      switch (type, field) {
      case (0x00, 0x01): width = try r.u32()
      case (0x00, 0x02): height = try r.u32()
      case (0x00, 0x03): depthOrArrayLayers = try r.u32()
      case (0x00, 0x04): mipLevelCount = try r.u32()
      case (0x00, 0x05): sampleCount = try r.u32()
      case (0x07, 0x06): dimension = min(try r.u8(), 2)
      case (0x07, 0x07): format = try r.u8()
      case (0x07, 0x08):
        let u = try r.u8()
        usage = u == 0 ? 0x10 : UInt32(u)
      default: try r.skip(type: type)
      }
    }
  }
}

/// Upstream's texture format codes (`descriptors.zig`), as WebGPU names.
public enum TextureFormatCode {
  /// The WebGPU name of a code, or `nil` for an unknown one (the canvas format).
  public static func name(_ code: UInt8) -> String? { names[code] }

  static let names: [UInt8: String] = [
    0x00: "rgba8unorm", 0x01: "rgba8snorm", 0x02: "rgba8uint", 0x03: "rgba8sint",
    0x04: "bgra8unorm", 0x05: "rgba16float", 0x06: "rgba32float", 0x07: "rgba8unorm-srgb",
    0x08: "bgra8unorm-srgb", 0x10: "depth24plus", 0x11: "depth24plus-stencil8",
    0x12: "depth32float", 0x13: "stencil8", 0x14: "depth16unorm", 0x15: "depth32float-stencil8",
    0x20: "r32float", 0x21: "rg32float", 0x22: "r32uint", 0x23: "r32sint", 0x24: "rg32uint",
    0x25: "rg32sint", 0x30: "r8unorm", 0x31: "rg8unorm", 0x32: "r16float", 0x33: "rg16float",
    0x34: "r8snorm", 0x35: "r8uint", 0x36: "r8sint", 0x37: "rg8snorm", 0x38: "rg8uint",
    0x39: "rg8sint", 0x40: "r16uint", 0x41: "r16sint", 0x42: "rg16uint", 0x43: "rg16sint",
    0x50: "rgba16uint", 0x51: "rgba16sint", 0x60: "rgba32uint", 0x61: "rgba32sint",
    0x70: "rgb10a2unorm", 0x71: "rgb10a2uint", 0x72: "rg11b10ufloat", 0x73: "rgb9e5ufloat",
  ]
}

/// A sampler descriptor (TLV tag 0x03). Filters 0 nearest, 1 linear; address modes 0
/// clamp-to-edge, 1 repeat, 2 mirror-repeat; compare as WebGPU's compare-function order
/// starting at 1 (`never`), 0 none.
public struct SamplerDescriptor: Sendable, Hashable {
  /// Address modes U, V, W.
  public var addressModes: [UInt8] = [0, 0, 0]
  /// Mag, min and mipmap filters.
  public var magFilter: UInt8 = 0
  /// Min filter.
  public var minFilter: UInt8 = 0
  /// Mipmap filter.
  public var mipmapFilter: UInt8 = 0
  /// LOD clamps.
  public var lodMinClamp: Float = 0
  /// LOD clamps.
  public var lodMaxClamp: Float = 32
  /// Compare function code, `nil` for none.
  public var compare: UInt8?
  /// Max anisotropy (default 1).
  public var maxAnisotropy: UInt16 = 1

  /// Decodes the blob.
  public init(decoding bytes: [UInt8]) throws(PngineError) {
    var r = TLVReader(bytes)
    _ = try r.u8()
    let count = try r.u8()
    for _ in 0..<count {
      let field = try r.u8()
      let type = try r.u8()
      switch (type, field) {
      case (0x07, 0x01...0x03): addressModes[Int(field) - 1] = try r.u8()
      case (0x07, 0x04): magFilter = try r.u8()
      case (0x07, 0x05): minFilter = try r.u8()
      case (0x07, 0x06): mipmapFilter = try r.u8()
      case (0x07, 0x09): compare = try r.u8()
      case (0x01, 0x07): lodMinClamp = Float(bitPattern: try r.u32())
      case (0x01, 0x08): lodMaxClamp = Float(bitPattern: try r.u32())
      case (0x06, 0x0A): maxAnisotropy = try r.u16()
      default: try r.skip(type: type)
      }
    }
  }
}

/// One bind-group entry: a buffer (range), a texture's default view, a sampler, or an
/// explicit texture view.
public struct BindGroupEntry: Sendable, Hashable {
  /// Resource types: 0 buffer, 1 texture (default view), 2 sampler, 4 texture view.
  public enum Kind: UInt8, Sendable, Hashable {
    /// A buffer range.
    case buffer = 0
    /// A texture's default view.
    case texture = 1
    /// A sampler.
    case sampler = 2
    /// An explicit texture view (opcode 0x08).
    case textureView = 4
  }
  /// The binding number.
  public var binding: UInt32
  /// The resource type.
  public var kind: Kind
  /// The resource id.
  public var resource: UInt16
  /// Buffer offset.
  public var offset: UInt32
  /// Buffer size, 0 meaning the whole buffer from `offset`.
  public var size: UInt32

  /// Makes an entry.
  public init(binding: UInt32, kind: Kind, resource: UInt16, offset: UInt32 = 0, size: UInt32 = 0) {
    self.binding = binding
    self.kind = kind
    self.resource = resource
    self.offset = offset
    self.size = size
  }
}

/// A bind-group descriptor (TLV tag 0x07 or 0x03): the group index and its entries.
public struct BindGroupDescriptor: Sendable, Hashable {
  /// The group index the layout is taken from (`getBindGroupLayout(group)`).
  public var group: UInt32 = 0
  /// The entries.
  public var entries: [BindGroupEntry] = []

  /// Bit 15 of the layout id: the id is a bind-group layout (opcode 0x0A), not a pipeline.
  public static let layoutTag: UInt16 = 0x8000

  /// Decodes the blob.
  public init(decoding bytes: [UInt8]) throws(PngineError) {
    var r = TLVReader(bytes)
    _ = try r.u8()
    let count = try r.u8()
    for _ in 0..<count {
      let field = try r.u8()
      let type = try r.u8()
      switch (field, type) {
      case (0x01, 0x07): group = UInt32(try r.u8())
      case (0x02, 0x03):
        let n = try r.u8()
        for _ in 0..<n {
          let binding = UInt32(try r.u8())
          let rawKind = try r.u8()
          guard let kind = BindGroupEntry.Kind(rawValue: rawKind) else {
            throw invalidDescriptor("bind-group entry \(binding) has resource type \(rawKind)")
          }
          let resource = try r.u16()
          var offset: UInt32 = 0
          var size: UInt32 = 0
          if kind == .buffer {
            offset = try r.u32()
            size = try r.u32()
          }
          entries.append(
            BindGroupEntry(
              binding: binding, kind: kind, resource: resource, offset: offset, size: size))
        }
      default: try r.skip(type: type)
      }
    }
  }
}

/// A compute-pipeline descriptor: `[0x06][shader u16][entry length u8][entry][layout u16]?`.
public struct ComputePipelineDescriptor: Sendable, Hashable {
  /// The shader module id.
  public var shader: UInt16
  /// The entry point.
  public var entryPoint: String
  /// A pipeline layout id (opcode 0x0C), or `nil` for `auto`.
  public var layout: UInt16?

  /// Decodes the blob.
  public init(decoding bytes: [UInt8]) throws(PngineError) {
    guard bytes.count >= 4 else {
      throw invalidDescriptor("compute-pipeline descriptor of \(bytes.count) bytes")
    }
    shader = UInt16(bytes[1]) | UInt16(bytes[2]) << 8
    let n = Int(bytes[3])
    guard n > 0, bytes.count >= 4 + n else {
      throw invalidDescriptor(
        "compute-pipeline descriptor: entry point of \(n) bytes in \(bytes.count)")
    }
    entryPoint = String(decoding: bytes[4..<(4 + n)], as: UTF8.self)
    if bytes.count >= 6 + n {
      let id = UInt16(bytes[4 + n]) | UInt16(bytes[5 + n]) << 8
      layout = id == 0xFFFF ? nil : id
    }
  }
}
