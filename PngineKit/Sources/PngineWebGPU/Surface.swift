import CPngineWGPU
import CWGPU
import PngineKit

/// The native thing a ``WebGPUBackend`` presents to: the only platform-specific part of the
/// surface path. Everything after it (capabilities, configuration, the per-frame current
/// texture, presenting) is the same on every platform.
///
/// The pointers are borrowed: the caller keeps the layer (or display and window) alive for
/// as long as the backend exists.
public enum SurfaceSource: @unchecked Sendable {
  /// A `CAMetalLayer` (`Unmanaged.passUnretained(layer).toOpaque()`), for Apple platforms
  /// (`WGPUSurfaceSourceMetalLayer`).
  case metalLayer(UnsafeMutableRawPointer)
  /// An Xlib `Display *` and an X11 `Window` id (`WGPUSurfaceSourceXlibWindow`), for Linux;
  /// what the tests use, on a virtual X server.
  case xlibWindow(display: UnsafeMutableRawPointer, window: UInt64)
}

/// What `wgpuSurfaceGetCurrentTexture` answered for a frame.
public enum SurfaceTextureStatus: Equatable, Sendable, CustomStringConvertible {
  /// A texture that matches the surface.
  case optimal
  /// A texture to draw into and present, but the surface wants reconfiguring (it is, after
  /// the frame).
  case suboptimal
  /// No texture in time: the frame is skipped.
  case timeout
  /// The window changed under the surface: reconfigured, the frame skipped.
  case outdated
  /// The surface was lost: reconfigured, the frame skipped.
  case lost
  /// Anything else (`WGPUSurfaceGetCurrentTextureStatus_Error` or an unknown value, kept):
  /// a ``PngineError/Code/surfaceFailed``.
  case error(UInt32)

  /// The status of webgpu.h's `WGPUSurfaceGetCurrentTextureStatus` raw value.
  public init(rawStatus: UInt32) {
    switch rawStatus {
    case WGPUSurfaceGetCurrentTextureStatus_SuccessOptimal.rawValue: self = .optimal
    case WGPUSurfaceGetCurrentTextureStatus_SuccessSuboptimal.rawValue: self = .suboptimal
    case WGPUSurfaceGetCurrentTextureStatus_Timeout.rawValue: self = .timeout
    case WGPUSurfaceGetCurrentTextureStatus_Outdated.rawValue: self = .outdated
    case WGPUSurfaceGetCurrentTextureStatus_Lost.rawValue: self = .lost
    default: self = .error(rawStatus)
    }
  }

  /// Whether a texture came with the status (draw and present it).
  public var hasTexture: Bool { self == .optimal || self == .suboptimal }

  /// Whether the frame is skipped after reconfiguring (timeout, outdated, lost): a transient
  /// state of the window, not an error.
  public var skipsFrame: Bool { self == .timeout || self == .outdated || self == .lost }

  /// The status's name (`outdated`…).
  public var description: String {
    switch self {
    case .optimal: "optimal"
    case .suboptimal: "suboptimal"
    case .timeout: "timeout"
    case .outdated: "outdated"
    case .lost: "lost"
    case .error(let raw): "error (\(raw))"
    }
  }
}

/// What presenting a frame came to.
public enum SurfaceFrame: Equatable, Sendable {
  /// Drawn and presented (`optimal` or `suboptimal`; a suboptimal surface is reconfigured
  /// after presenting).
  case presented(SurfaceTextureStatus)
  /// Not drawn: the surface had no texture (`timeout`, `outdated`, `lost`); it was
  /// reconfigured and the next frame tries again. The executor's `frame` did not run.
  case skipped(SurfaceTextureStatus)
}

/// The surface's format and alpha mode, chosen from its capabilities.
public enum SurfaceFormatChoice {
  /// The format to configure: `bgra8unorm`, else `rgba8unorm` (non-sRGB, so that the same
  /// shader output gives the same bytes as the offscreen `rgba8unorm` canvas: no sRGB encoding
  /// on write), else the surface's first non-sRGB format, else its first; `nil` when it lists
  /// none. Pipelines whose targets name no format and textures without one use it, as upstream
  /// uses the preferred canvas format.
  public static func format(from formats: [WGPUTextureFormat]) -> WGPUTextureFormat? {
    for preferred in [WGPUTextureFormat_BGRA8Unorm, WGPUTextureFormat_RGBA8Unorm]
    where formats.contains(preferred) {
      return preferred
    }
    let srgb = [WGPUTextureFormat_BGRA8UnormSrgb, WGPUTextureFormat_RGBA8UnormSrgb]
    return formats.first { !srgb.contains($0) } ?? formats.first
  }

  /// The alpha mode: `opaque` when offered (a canvas composited as an opaque layer, as a
  /// `CAMetalLayer` with `isOpaque` is), else the surface's first (what `auto` would pick).
  /// `transparent` (a canvas whose clear colour lets what is behind show through): the first
  /// of `premultiplied` (WebGPU's canvas and a `CAMetalLayer` both blend premultiplied),
  /// `inherit` (the layer's own setting) and `unpremultiplied` that is offered, else `opaque`.
  public static func alphaMode(from modes: [WGPUCompositeAlphaMode], transparent: Bool = false)
    -> WGPUCompositeAlphaMode
  {
    if transparent {
      for wanted in [
        WGPUCompositeAlphaMode_Premultiplied, WGPUCompositeAlphaMode_Inherit,
        WGPUCompositeAlphaMode_Unpremultiplied,
      ] where modes.contains(wanted) {
        return wanted
      }
    }
    return modes.contains(WGPUCompositeAlphaMode_Opaque)
      ? WGPUCompositeAlphaMode_Opaque : (modes.first ?? WGPUCompositeAlphaMode_Auto)
  }

  /// The name of a format the backend knows (`bgra8unorm`…), else its raw value in hex.
  public static func name(of format: WGPUTextureFormat) -> String {
    WGPUNames.textureFormats.first { $0.value == format }?.key
      ?? "0x" + String(format.rawValue, radix: 16)
  }
}
