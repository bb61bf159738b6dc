import Foundation

// The descriptors a PNGine payload writes as JSON shaped like WebGPU's: render pipelines,
// bind-group layouts and pipeline layouts.

/// A render-pipeline descriptor: JSON shaped like WebGPU's, with shader ids for modules.
public struct RenderPipelineDescriptor: Sendable, Hashable, Decodable {
  /// A vertex attribute.
  public struct Attribute: Sendable, Hashable, Decodable {
    /// `@location`.
    public var shaderLocation: UInt32
    /// Byte offset.
    public var offset: UInt64
    /// WebGPU vertex format, e.g. `float32x4`.
    public var format: String
  }
  /// A vertex buffer layout.
  public struct VertexBuffer: Sendable, Hashable, Decodable {
    /// Stride in bytes.
    public var arrayStride: UInt64
    /// `vertex` (default) or `instance`.
    public var stepMode: String?
    /// The attributes.
    public var attributes: [Attribute]
  }
  /// The vertex stage.
  public struct Vertex: Sendable, Hashable, Decodable {
    /// Shader id (default 0).
    public var shader: UInt16?
    /// Entry point.
    public var entryPoint: String
    /// Vertex buffers.
    public var buffers: [VertexBuffer]?
  }
  /// A blend component.
  public struct BlendComponent: Sendable, Hashable, Decodable {
    /// `add` etc.
    public var operation: String?
    /// `one` etc.
    public var srcFactor: String?
    /// `zero` etc.
    public var dstFactor: String?
  }
  /// A blend state.
  public struct Blend: Sendable, Hashable, Decodable {
    /// Colour.
    public var color: BlendComponent
    /// Alpha.
    public var alpha: BlendComponent
  }
  /// A colour target.
  public struct Target: Sendable, Hashable, Decodable {
    /// Format, `nil` for the canvas format.
    public var format: String?
    /// Blending.
    public var blend: Blend?
    /// Write mask (default all).
    public var writeMask: UInt32?

    /// Makes a target.
    public init(format: String?, blend: Blend? = nil, writeMask: UInt32? = nil) {
      self.format = format
      self.blend = blend
      self.writeMask = writeMask
    }
  }
  /// The fragment stage.
  public struct Fragment: Sendable, Hashable, Decodable {
    /// Shader id (default the vertex shader's).
    public var shader: UInt16?
    /// Entry point.
    public var entryPoint: String
    /// Targets; absent: one of `targetFormat`.
    public var targets: [Target]?
    /// Legacy single target format (`preferredCanvasFormat` or absent: the canvas format).
    public var targetFormat: String?
  }
  /// Primitive state.
  public struct Primitive: Sendable, Hashable, Decodable {
    /// `triangle-list` (default) etc.
    public var topology: String?
    /// `uint16` / `uint32` for strips.
    public var stripIndexFormat: String?
    /// `ccw` (default) / `cw`.
    public var frontFace: String?
    /// `none` (default) / `front` / `back`.
    public var cullMode: String?
  }
  /// A stencil face.
  public struct StencilFace: Sendable, Hashable, Decodable {
    /// Compare.
    public var compare: String?
    /// Fail op.
    public var failOp: String?
    /// Depth-fail op.
    public var depthFailOp: String?
    /// Pass op.
    public var passOp: String?
  }
  /// Depth and stencil.
  public struct DepthStencil: Sendable, Hashable, Decodable {
    /// Format, e.g. `depth24plus`.
    public var format: String
    /// Whether depth is written.
    public var depthWriteEnabled: Bool?
    /// Compare function.
    public var depthCompare: String?
    /// Stencil front.
    public var stencilFront: StencilFace?
    /// Stencil back.
    public var stencilBack: StencilFace?
    /// Masks.
    public var stencilReadMask: UInt32?
    /// Masks.
    public var stencilWriteMask: UInt32?
    /// Depth bias.
    public var depthBias: Int32?
    /// Slope scale.
    public var depthBiasSlopeScale: Float?
    /// Clamp.
    public var depthBiasClamp: Float?
  }
  /// Multisampling.
  public struct Multisample: Sendable, Hashable, Decodable {
    /// Samples.
    public var count: UInt32?
    /// Mask.
    public var mask: UInt32?
    /// Alpha to coverage.
    public var alphaToCoverageEnabled: Bool?
  }

  /// Vertex stage.
  public var vertex: Vertex
  /// Fragment stage (absent: depth only).
  public var fragment: Fragment?
  /// Primitive state.
  public var primitive: Primitive?
  /// Depth and stencil.
  public var depthStencil: DepthStencil?
  /// Multisampling.
  public var multisample: Multisample?
  /// A pipeline layout id (opcode 0x0C), or `nil` for `auto`.
  public var layoutId: UInt16?

  /// Decodes the JSON blob.
  public init(decoding bytes: [UInt8]) throws(PngineError) {
    do {
      self = try JSONDecoder().decode(Self.self, from: Data(bytes))
    } catch {
      throw invalidDescriptor("render-pipeline JSON: \(error)")
    }
  }

  /// The shader ids this pipeline uses.
  public var shaders: [UInt16] {
    let v = vertex.shader ?? 0
    return fragment.map { [v, $0.shader ?? v] } ?? [v]
  }
}

/// A bind-group-layout descriptor: JSON shaped like WebGPU's `GPUBindGroupLayoutDescriptor`.
public struct BindGroupLayoutDescriptor: Sendable, Hashable, Decodable {
  /// One entry.
  public struct Entry: Sendable, Hashable, Decodable {
    /// Buffer binding.
    public struct Buffer: Sendable, Hashable, Decodable {
      /// `uniform` (default), `storage`, `read-only-storage`.
      public var type: String?
      /// Dynamic offsets.
      public var hasDynamicOffset: Bool?
      /// Minimum size.
      public var minBindingSize: UInt64?
    }
    /// Sampler binding.
    public struct Sampler: Sendable, Hashable, Decodable {
      /// `filtering` (default), `non-filtering`, `comparison`.
      public var type: String?
    }
    /// Texture binding.
    public struct Texture: Sendable, Hashable, Decodable {
      /// `float` (default) etc.
      public var sampleType: String?
      /// `2d` (default) etc.
      public var viewDimension: String?
      /// Multisampled.
      public var multisampled: Bool?
    }
    /// Storage texture binding.
    public struct StorageTexture: Sendable, Hashable, Decodable {
      /// `write-only` (default) etc.
      public var access: String?
      /// Format.
      public var format: String
      /// `2d` (default) etc.
      public var viewDimension: String?
    }
    /// Binding number.
    public var binding: UInt32
    /// Shader stages (1 vertex, 2 fragment, 4 compute).
    public var visibility: UInt32
    /// Buffer.
    public var buffer: Buffer?
    /// Sampler.
    public var sampler: Sampler?
    /// Texture.
    public var texture: Texture?
    /// Storage texture.
    public var storageTexture: StorageTexture?
  }
  /// The entries.
  public var entries: [Entry]

  /// Decodes the JSON blob.
  public init(decoding bytes: [UInt8]) throws(PngineError) {
    do {
      self = try JSONDecoder().decode(Self.self, from: Data(bytes))
    } catch {
      throw invalidDescriptor("bind-group-layout JSON: \(error)")
    }
  }
}

/// A pipeline-layout descriptor: JSON `{"bindGroupLayouts": [ids]}`.
public struct PipelineLayoutDescriptor: Sendable, Hashable, Decodable {
  /// Bind-group-layout ids (opcode 0x0A), one per group.
  public var bindGroupLayouts: [UInt16]

  /// Decodes the JSON blob.
  public init(decoding bytes: [UInt8]) throws(PngineError) {
    do {
      self = try JSONDecoder().decode(Self.self, from: Data(bytes))
    } catch {
      throw invalidDescriptor("pipeline-layout JSON: \(error)")
    }
  }
}
