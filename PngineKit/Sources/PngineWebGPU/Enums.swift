import CWGPU
import PngineKit

// WebGPU's JSON names → webgpu.h values. An unknown name is an invalid descriptor.

private func lookup<T>(_ table: [String: T], _ name: String, _ what: String) throws(PngineError)
  -> T
{
  guard let value = table[name] else {
    throw PngineError(.invalidDescriptor, "unknown \(what) \"\(name)\"")
  }
  return value
}

enum WGPUNames {
  static let textureFormats: [String: WGPUTextureFormat] = [
    "rgba8unorm": WGPUTextureFormat_RGBA8Unorm, "rgba8snorm": WGPUTextureFormat_RGBA8Snorm,
    "rgba8uint": WGPUTextureFormat_RGBA8Uint, "rgba8sint": WGPUTextureFormat_RGBA8Sint,
    "bgra8unorm": WGPUTextureFormat_BGRA8Unorm, "rgba16float": WGPUTextureFormat_RGBA16Float,
    "rgba32float": WGPUTextureFormat_RGBA32Float,
    "rgba8unorm-srgb": WGPUTextureFormat_RGBA8UnormSrgb,
    "bgra8unorm-srgb": WGPUTextureFormat_BGRA8UnormSrgb,
    "depth24plus": WGPUTextureFormat_Depth24Plus,
    "depth24plus-stencil8": WGPUTextureFormat_Depth24PlusStencil8,
    "depth32float": WGPUTextureFormat_Depth32Float, "stencil8": WGPUTextureFormat_Stencil8,
    "depth16unorm": WGPUTextureFormat_Depth16Unorm,
    "depth32float-stencil8": WGPUTextureFormat_Depth32FloatStencil8,
    "r32float": WGPUTextureFormat_R32Float, "rg32float": WGPUTextureFormat_RG32Float,
    "r32uint": WGPUTextureFormat_R32Uint, "r32sint": WGPUTextureFormat_R32Sint,
    "rg32uint": WGPUTextureFormat_RG32Uint, "rg32sint": WGPUTextureFormat_RG32Sint,
    "r8unorm": WGPUTextureFormat_R8Unorm, "rg8unorm": WGPUTextureFormat_RG8Unorm,
    "r16float": WGPUTextureFormat_R16Float, "rg16float": WGPUTextureFormat_RG16Float,
    "r8snorm": WGPUTextureFormat_R8Snorm, "r8uint": WGPUTextureFormat_R8Uint,
    "r8sint": WGPUTextureFormat_R8Sint, "rg8snorm": WGPUTextureFormat_RG8Snorm,
    "rg8uint": WGPUTextureFormat_RG8Uint, "rg8sint": WGPUTextureFormat_RG8Sint,
    "r16uint": WGPUTextureFormat_R16Uint, "r16sint": WGPUTextureFormat_R16Sint,
    "rg16uint": WGPUTextureFormat_RG16Uint, "rg16sint": WGPUTextureFormat_RG16Sint,
    "rgba16uint": WGPUTextureFormat_RGBA16Uint, "rgba16sint": WGPUTextureFormat_RGBA16Sint,
    "rgba32uint": WGPUTextureFormat_RGBA32Uint, "rgba32sint": WGPUTextureFormat_RGBA32Sint,
    "rgb10a2unorm": WGPUTextureFormat_RGB10A2Unorm, "rgb10a2uint": WGPUTextureFormat_RGB10A2Uint,
    "rg11b10ufloat": WGPUTextureFormat_RG11B10Ufloat,
    "rgb9e5ufloat": WGPUTextureFormat_RGB9E5Ufloat,
  ]

  static func textureFormat(_ name: String) throws(PngineError) -> WGPUTextureFormat {
    try lookup(textureFormats, name, "texture format")
  }

  static func vertexFormat(_ name: String) throws(PngineError) -> WGPUVertexFormat {
    let table: [String: WGPUVertexFormat] = [
      "float32": WGPUVertexFormat_Float32, "float32x2": WGPUVertexFormat_Float32x2,
      "float32x3": WGPUVertexFormat_Float32x3, "float32x4": WGPUVertexFormat_Float32x4,
      "uint32": WGPUVertexFormat_Uint32, "uint32x2": WGPUVertexFormat_Uint32x2,
      "uint32x3": WGPUVertexFormat_Uint32x3, "uint32x4": WGPUVertexFormat_Uint32x4,
      "sint32": WGPUVertexFormat_Sint32, "sint32x2": WGPUVertexFormat_Sint32x2,
      "sint32x3": WGPUVertexFormat_Sint32x3, "sint32x4": WGPUVertexFormat_Sint32x4,
      "float16x2": WGPUVertexFormat_Float16x2, "float16x4": WGPUVertexFormat_Float16x4,
      "unorm8x2": WGPUVertexFormat_Unorm8x2, "unorm8x4": WGPUVertexFormat_Unorm8x4,
      "snorm8x2": WGPUVertexFormat_Snorm8x2, "snorm8x4": WGPUVertexFormat_Snorm8x4,
      "uint8x2": WGPUVertexFormat_Uint8x2, "uint8x4": WGPUVertexFormat_Uint8x4,
      "sint8x2": WGPUVertexFormat_Sint8x2, "sint8x4": WGPUVertexFormat_Sint8x4,
      "unorm16x2": WGPUVertexFormat_Unorm16x2, "unorm16x4": WGPUVertexFormat_Unorm16x4,
      "snorm16x2": WGPUVertexFormat_Snorm16x2, "snorm16x4": WGPUVertexFormat_Snorm16x4,
      "uint16x2": WGPUVertexFormat_Uint16x2, "uint16x4": WGPUVertexFormat_Uint16x4,
      "sint16x2": WGPUVertexFormat_Sint16x2, "sint16x4": WGPUVertexFormat_Sint16x4,
    ]
    return try lookup(table, name, "vertex format")
  }

  static func topology(_ name: String?) throws(PngineError) -> WGPUPrimitiveTopology {
    let table: [String: WGPUPrimitiveTopology] = [
      "point-list": WGPUPrimitiveTopology_PointList, "line-list": WGPUPrimitiveTopology_LineList,
      "line-strip": WGPUPrimitiveTopology_LineStrip,
      "triangle-list": WGPUPrimitiveTopology_TriangleList,
      "triangle-strip": WGPUPrimitiveTopology_TriangleStrip,
    ]
    return try lookup(table, name ?? "triangle-list", "topology")
  }

  static func cullMode(_ name: String?) throws(PngineError) -> WGPUCullMode {
    let table: [String: WGPUCullMode] = [
      "none": WGPUCullMode_None, "front": WGPUCullMode_Front, "back": WGPUCullMode_Back,
    ]
    return try lookup(table, name ?? "none", "cull mode")
  }

  static func frontFace(_ name: String?) throws(PngineError) -> WGPUFrontFace {
    try lookup(["ccw": WGPUFrontFace_CCW, "cw": WGPUFrontFace_CW], name ?? "ccw", "front face")
  }

  static func indexFormat(_ name: String?) throws(PngineError) -> WGPUIndexFormat {
    guard let name else { return WGPUIndexFormat_Undefined }
    return try lookup(
      ["uint16": WGPUIndexFormat_Uint16, "uint32": WGPUIndexFormat_Uint32], name, "index format")
  }

  static func compare(_ name: String?) throws(PngineError) -> WGPUCompareFunction {
    guard let name else { return WGPUCompareFunction_Undefined }
    let table: [String: WGPUCompareFunction] = [
      "never": WGPUCompareFunction_Never, "less": WGPUCompareFunction_Less,
      "equal": WGPUCompareFunction_Equal, "less-equal": WGPUCompareFunction_LessEqual,
      "greater": WGPUCompareFunction_Greater, "not-equal": WGPUCompareFunction_NotEqual,
      "greater-equal": WGPUCompareFunction_GreaterEqual, "always": WGPUCompareFunction_Always,
    ]
    return try lookup(table, name, "compare function")
  }

  /// Upstream's sampler compare codes: 1 never … 8 always (WebGPU's order).
  static func compare(code: UInt8) -> WGPUCompareFunction {
    let order = [
      WGPUCompareFunction_Never, WGPUCompareFunction_Less, WGPUCompareFunction_Equal,
      WGPUCompareFunction_LessEqual, WGPUCompareFunction_Greater, WGPUCompareFunction_NotEqual,
      WGPUCompareFunction_GreaterEqual, WGPUCompareFunction_Always,
    ]
    return code >= 1 && Int(code) <= order.count
      ? order[Int(code) - 1] : WGPUCompareFunction_Undefined
  }

  static func stencilOperation(_ name: String?) throws(PngineError) -> WGPUStencilOperation {
    let table: [String: WGPUStencilOperation] = [
      "keep": WGPUStencilOperation_Keep, "zero": WGPUStencilOperation_Zero,
      "replace": WGPUStencilOperation_Replace, "invert": WGPUStencilOperation_Invert,
      "increment-clamp": WGPUStencilOperation_IncrementClamp,
      "decrement-clamp": WGPUStencilOperation_DecrementClamp,
      "increment-wrap": WGPUStencilOperation_IncrementWrap,
      "decrement-wrap": WGPUStencilOperation_DecrementWrap,
    ]
    return try lookup(table, name ?? "keep", "stencil operation")
  }

  static func blendOperation(_ name: String?) throws(PngineError) -> WGPUBlendOperation {
    let table: [String: WGPUBlendOperation] = [
      "add": WGPUBlendOperation_Add, "subtract": WGPUBlendOperation_Subtract,
      "reverse-subtract": WGPUBlendOperation_ReverseSubtract, "min": WGPUBlendOperation_Min,
      "max": WGPUBlendOperation_Max,
    ]
    return try lookup(table, name ?? "add", "blend operation")
  }

  static func blendFactor(_ name: String?, default fallback: String) throws(PngineError)
    -> WGPUBlendFactor
  {
    let table: [String: WGPUBlendFactor] = [
      "zero": WGPUBlendFactor_Zero, "one": WGPUBlendFactor_One, "src": WGPUBlendFactor_Src,
      "one-minus-src": WGPUBlendFactor_OneMinusSrc, "src-alpha": WGPUBlendFactor_SrcAlpha,
      "one-minus-src-alpha": WGPUBlendFactor_OneMinusSrcAlpha, "dst": WGPUBlendFactor_Dst,
      "one-minus-dst": WGPUBlendFactor_OneMinusDst, "dst-alpha": WGPUBlendFactor_DstAlpha,
      "one-minus-dst-alpha": WGPUBlendFactor_OneMinusDstAlpha,
      "src-alpha-saturated": WGPUBlendFactor_SrcAlphaSaturated,
      "constant": WGPUBlendFactor_Constant, "one-minus-constant": WGPUBlendFactor_OneMinusConstant,
    ]
    return try lookup(table, name ?? fallback, "blend factor")
  }

  static func viewDimension(_ name: String?) throws(PngineError) -> WGPUTextureViewDimension {
    let table: [String: WGPUTextureViewDimension] = [
      "1d": WGPUTextureViewDimension_1D, "2d": WGPUTextureViewDimension_2D,
      "2d-array": WGPUTextureViewDimension_2DArray, "cube": WGPUTextureViewDimension_Cube,
      "cube-array": WGPUTextureViewDimension_CubeArray, "3d": WGPUTextureViewDimension_3D,
    ]
    return try lookup(table, name ?? "2d", "view dimension")
  }
}
