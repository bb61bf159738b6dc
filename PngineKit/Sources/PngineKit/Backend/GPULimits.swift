/// The values every command is checked against before a GPU backend sees it (see
/// ``CommandChecker``): WebGPU's default limits, which every adapter meets, and the budgets
/// of one animation.
///
/// wgpu-native answers many bad values not with an error but by aborting the process: an
/// unknown flag bit, a null handle, a shader whose error it cannot format, a submit or a
/// queue write it rejects. A PNG is untrusted input, so nothing from it reaches such a call
/// unchecked; a value outside these limits is a ``PngineError`` naming the command, and the
/// app lives.
public struct GPULimits: Sendable, Hashable {
  /// The largest buffer, in bytes (WebGPU's default `maxBufferSize`, 256 MiB).
  public var maxBufferSize: UInt64 = 256 << 20
  /// The largest width or height of a 1D or 2D texture (WebGPU's default, 8192).
  public var maxTextureDimension2D: UInt32 = 8192
  /// The largest size of a 3D texture along any axis (WebGPU's default, 2048).
  public var maxTextureDimension3D: UInt32 = 2048
  /// The most array layers of a 2D texture (WebGPU's default, 256).
  public var maxTextureArrayLayers: UInt32 = 256
  /// The most bind groups of a pipeline, so the highest `setBindGroup` slot plus one
  /// (WebGPU's default, 4).
  public var maxBindGroups: UInt8 = 4
  /// The most vertex buffers, so the highest `setVertexBuffer` slot plus one (WebGPU's
  /// default, 8).
  public var maxVertexBuffers: UInt8 = 8
  /// The most workgroups of a dispatch along one axis (WebGPU's default, 65535).
  public var maxComputeWorkgroupsPerDimension: UInt32 = 65535
  /// The highest binding number in a bind group or its layout (WebGPU's
  /// `maxBindingsPerBindGroup` minus one, 999).
  public var maxBindingIndex: UInt32 = 999
  /// The largest WGSL module, in bytes (1 MiB; real ones are a few KiB).
  public var maxShaderSourceBytes: Int = 1 << 20
  /// How deep brackets, braces and template lists may nest in WGSL (64; see
  /// ``ShaderStructure/nesting``): the shader compiler's parser recurses once per level.
  public var maxShaderNesting: Int = 64
  /// The tallest expression tree a WGSL shader may make (256; see
  /// ``ShaderStructure/expressionHeight``): the compiler's lowerer recurses once per level,
  /// and a chain of operators parsed by a loop still makes a tree as tall as the chain.
  public var maxShaderExpressionHeight: Int = 256
  /// How deep blocks, `else if` arms included, may nest (64; see
  /// ``ShaderStructure/blockDepth``): the compiler's lowerer, validator and SPIR-V writer
  /// recurse once per block, and each `else if` arm is a block inside the one before.
  public var maxShaderBlockDepth: Int = 64
  /// The most module-scope declarations of one shader (1,024): a chain of names used before
  /// they are declared, or of types built from one another, makes the compiler recurse once
  /// per link.
  public var maxShaderDeclarations: Int = 1024
  /// The stack of the thread shader modules and pipelines are made on (8 MiB): the shader
  /// compiler recurses, and a thread of its own gets this much whatever thread asked (an
  /// Apple secondary thread has 512 KiB). The worst shader within the limits above was
  /// measured to need far less (see `scripts/measure-shader-stack`).
  public var shaderCompilerStackBytes: Int = 8 << 20
  /// Indirect draws and dispatches read their arguments from a buffer. The host keeps what it
  /// wrote into buffers made for them (usage INDIRECT without STORAGE or QUERY_RESOLVE, up to
  /// this many bytes each: 64 KiB) and bounds those arguments as a direct command's.
  public var maxIndirectBufferBytes: Int = 64 << 10
  /// Vertices (or indices) × instances one indirect draw may ask for (2²⁴, as
  /// `FrameBudgets.maxVerticesPerDraw`).
  public var maxIndirectVertices: UInt64 = 1 << 24
  /// Workgroups (x·y·z) one indirect dispatch may ask for (2²⁰, as
  /// `FrameBudgets.maxWorkgroupsPerDispatch`).
  public var maxIndirectWorkgroups: UInt64 = 1 << 20
  /// Whether an indirect command may read arguments the GPU wrote (a compute shader, a copy,
  /// a query resolve), which no host check can bound; off by default: such a command is
  /// refused with `budgetExceeded`.
  public var allowsUnboundedIndirect = false
  /// GPU memory one animation may allocate, buffers and textures together, in bytes (512 MiB
  /// by default). Textures count their estimated size (all mip levels and samples).
  public var gpuByteBudget: UInt64 = 512 << 20
  /// How long one submit of a frame's GPU work (or of the canvas read-back) may take, waited
  /// for on the device's own thread: 10 s by default. Budgets bound how much work a command
  /// asks for, not what each shader invocation costs (a loop over a whole buffer per
  /// invocation), so time is the last bound. Past it the device is given up: the animation
  /// fails with `gpuTimeout`, the others on the device with `deviceLost` (and move to a new
  /// device), and the app's thread is free again. A real GPU's work runs after the submit
  /// returns, under the system's own watchdog; a CPU driver (lavapipe) does it inside the
  /// submit, where this is the only end it has. The default leaves a CPU driver room for a
  /// full-screen shader at 1280×768 (about 2 s a frame measured on lavapipe).
  public var submitTimeout: Duration = .seconds(10)

  /// WebGPU's defaults and the default budgets.
  public init() {}
}

/// WebGPU's flag sets and value ranges, for checking a payload's values before they reach a
/// GPU call.
public enum GPUValueRules {
  /// `GPUBufferUsage`: MAP_READ 0x1 … QUERY_RESOLVE 0x200.
  public static let bufferUsageBits: UInt32 = 0x3FF
  /// `GPUTextureUsage`: COPY_SRC 0x1 … RENDER_ATTACHMENT 0x10.
  public static let textureUsageBits: UInt32 = 0x1F
  /// `GPUShaderStage`: VERTEX 0x1, FRAGMENT 0x2, COMPUTE 0x4.
  public static let shaderStageBits: UInt32 = 0x7
  /// `GPUColorWrite`: RED 0x1 … ALPHA 0x8.
  public static let colorWriteBits: UInt32 = 0xF

  /// Why a buffer usage is not one WebGPU allows, or nil. 0 is the host's "copy destination".
  public static func bufferUsageProblem(_ usage: UInt32) -> String? {
    if usage & ~bufferUsageBits != 0 {
      return "usage 0x\(String(usage, radix: 16)) has bits outside GPUBufferUsage"
    }
    if usage & 0x1 != 0, usage & ~UInt32(0x1 | 0x8) != 0 {
      return "usage 0x\(String(usage, radix: 16)): MAP_READ goes only with COPY_DST"
    }
    if usage & 0x2 != 0, usage & ~UInt32(0x2 | 0x4) != 0 {
      return "usage 0x\(String(usage, radix: 16)): MAP_WRITE goes only with COPY_SRC"
    }
    return nil
  }

  /// A buffer's usage as the backends create it: 0 means COPY_DST.
  public static func effectiveBufferUsage(_ usage: UInt16) -> UInt32 {
    usage == 0 ? 0x8 : UInt32(usage)
  }

  /// A buffer's size as the backends allocate it: rounded up to 4 bytes.
  public static func allocatedSize(_ size: UInt32) -> UInt64 { (UInt64(size) + 3) / 4 * 4 }

  /// Why a texture descriptor is outside WebGPU's rules or `limits`, or nil. `canvas` is the
  /// size a texture without one takes.
  public static func textureProblem(
    _ t: TextureDescriptor, canvas: (width: UInt32, height: UInt32), limits: GPULimits
  ) -> String? {
    if t.usage == 0 || t.usage & ~textureUsageBits != 0 {
      return "usage 0x\(String(t.usage, radix: 16)) is not a GPUTextureUsage set"
    }
    let width = t.width ?? canvas.width
    let height = t.height ?? canvas.height
    let layers = t.depthOrArrayLayers
    guard width > 0, height > 0, layers > 0 else {
      return "size \(width)×\(height)×\(layers) has a zero side"
    }
    switch t.dimension {
    case 0:
      guard width <= limits.maxTextureDimension2D, height == 1, layers == 1 else {
        return "a 1D texture of \(width)×\(height)×\(layers)"
      }
    case 2:
      let cap = limits.maxTextureDimension3D
      guard width <= cap, height <= cap, layers <= cap else {
        return "a 3D texture of \(width)×\(height)×\(layers) exceeds \(cap)"
      }
    default:
      let cap = limits.maxTextureDimension2D
      guard width <= cap, height <= cap, layers <= limits.maxTextureArrayLayers else {
        return
          "a 2D texture of \(width)×\(height)×\(layers) exceeds \(cap)×\(cap)×\(limits.maxTextureArrayLayers)"
      }
    }
    guard t.sampleCount == 1 || t.sampleCount == 4 else {
      return "sample count \(t.sampleCount) (WebGPU allows 1 or 4)"
    }
    let largest = max(width, height, t.dimension == 2 ? layers : 1)
    let maxLevels = UInt32(32 - largest.leadingZeroBitCount)
    guard (1...maxLevels).contains(t.mipLevelCount) else {
      return "\(t.mipLevelCount) mip levels for a largest side of \(largest)"
    }
    if t.sampleCount > 1, t.mipLevelCount != 1 || t.dimension != 1 || layers != 1 {
      return "a multisampled texture must be 2D with one level and one layer"
    }
    return nil
  }

  /// A texture's estimated size in bytes: every level and sample, at the widest texel of its
  /// format (16 bytes when the format is unknown here).
  public static func textureBytes(
    _ t: TextureDescriptor, canvas: (width: UInt32, height: UInt32)
  ) -> UInt64 {
    let texel: UInt64 =
      switch t.format.flatMap(TextureFormatCode.name) {
      case "rgba32float", "rgba32uint", "rgba32sint": 16
      case "rgba16float", "rgba16uint", "rgba16sint", "rg32float", "rg32uint", "rg32sint": 8
      case "r8unorm", "r8snorm", "r8uint", "r8sint", "stencil8": 1
      case "rg8unorm", "rg8snorm", "rg8uint", "rg8sint", "r16float", "r16uint", "r16sint",
        "depth16unorm":
        2
      case nil: 4
      default: 4
      }
    let base =
      UInt64(t.width ?? canvas.width) * UInt64(t.height ?? canvas.height)
      * UInt64(t.depthOrArrayLayers) * texel * UInt64(max(t.sampleCount, 1))
    // A full mip chain adds at most a third.
    return t.mipLevelCount > 1 ? base + base / 3 : base
  }

  /// Why a sampler descriptor is outside WebGPU's rules, or nil.
  public static func samplerProblem(_ s: SamplerDescriptor) -> String? {
    guard s.lodMinClamp.isFinite, s.lodMaxClamp.isFinite, s.lodMinClamp >= 0,
      s.lodMaxClamp >= s.lodMinClamp
    else {
      return "LOD clamps \(s.lodMinClamp)…\(s.lodMaxClamp) (want 0 ≤ min ≤ max, finite)"
    }
    guard s.maxAnisotropy >= 1 else { return "maxAnisotropy 0 (at least 1)" }
    if s.maxAnisotropy > 1, s.magFilter != 1 || s.minFilter != 1 || s.mipmapFilter != 1 {
      return "maxAnisotropy \(s.maxAnisotropy) needs linear filters"
    }
    if let compare = s.compare, compare > 8 { return "compare function \(compare) is unknown" }
    return nil
  }

  /// Why a bind-group-layout entry is outside WebGPU's rules or `limits`, or nil: visibility
  /// within `GPUShaderStage`, exactly one resource type.
  public static func layoutEntryProblem(
    _ e: BindGroupLayoutDescriptor.Entry, limits: GPULimits
  ) -> String? {
    guard e.visibility & ~shaderStageBits == 0 else {
      return
        "binding \(e.binding): visibility 0x\(String(e.visibility, radix: 16)) is not a GPUShaderStage set"
    }
    guard e.binding <= limits.maxBindingIndex else {
      return "binding \(e.binding) exceeds \(limits.maxBindingIndex)"
    }
    let kinds = [e.buffer != nil, e.sampler != nil, e.texture != nil, e.storageTexture != nil]
    guard kinds.filter({ $0 }).count == 1 else {
      return "binding \(e.binding) names \(kinds.filter { $0 }.count) resource types (want one)"
    }
    return nil
  }

  /// Why a render pipeline's values are outside WebGPU's flag sets, or nil.
  public static func renderPipelineProblem(_ d: RenderPipelineDescriptor) -> String? {
    for target in d.fragment?.targets ?? [] {
      if let mask = target.writeMask, mask & ~colorWriteBits != 0 {
        return "write mask 0x\(String(mask, radix: 16)) is not a GPUColorWrite set"
      }
    }
    if let count = d.multisample?.count, count != 1, count != 4 {
      return "multisample count \(count) (WebGPU allows 1 or 4)"
    }
    return nil
  }
}
