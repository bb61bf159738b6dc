import LIVAProtocol

/// An overlay image placed on a base frame.
public struct PlacedOverlay: Sendable {
  /// The decoded overlay (e.g. a mouth sprite).
  public var image: RGBAImage
  /// Where it goes, in the **base frame's** pixel coordinates; a zero width or height means
  /// the image's natural width or height.
  public var rect: PlacementRect

  /// Creates a placed overlay.
  public init(image: RGBAImage, rect: PlacementRect) {
    self.image = image
    self.rect = rect
  }
}

/// How a base frame of another size (or aspect) than the target is fitted into it.
public enum ContentMode: String, Hashable, Sendable, CaseIterable, Codable {
  /// The whole frame, scaled to the target's width and height independently (squashed when
  /// the aspects differ).
  case stretch
  /// The whole frame, scaled by one factor to fit inside the target, centred; the bands left
  /// over are the background colour (letterbox or pillarbox).
  case aspectFit
  /// The frame scaled by one factor to cover the target, centred; what spills over is cut.
  case aspectFill
}

/// Draws a base frame and its overlays into an RGBA frame of a fixed target size.
///
/// - The base frame is fitted to the target by the ``contentMode`` (bilinear; copied as is
///   when the sizes match). Overlay rectangles are transformed with it.
/// - Each overlay is resampled into its rectangle (bilinear on premultiplied colour, an exact
///   copy when it lands 1:1 on whole pixels) and blended *over* the base with straight-alpha
///   arithmetic.
/// - With a ``featherWidth`` above zero, each overlay fades out over that many target pixels
///   inside the ellipse inscribed in its rectangle (smoothstep falloff), so no seam shows
///   where the sprite meets the base. Zero gives hard rectangular edges.
/// - Overlays whose rectangle is degenerate, entirely off-frame, or more than four times the
///   target's width or height are skipped.
/// - When ``render(base:baseKey:overlays:)`` gets the same `baseKey` as last time, only the
///   rectangles of the previous overlays are restored from the cached scaled base and the
///   new overlays drawn: the cost is proportional to the overlay area, not the frame.
///
/// Owned by the render thread; not thread-safe, by design.
public final class Compositor {
  /// How a call to ``render(base:baseKey:overlays:)`` produced its frame.
  public enum RenderKind: Hashable, Sendable {
    /// The base frame was (re)drawn in full.
    case full
    /// The base was unchanged: only overlay regions were redrawn.
    case overlaysOnly
  }

  /// Target width in pixels.
  public let width: Int
  /// Target height in pixels.
  public let height: Int
  /// The width of the soft elliptical edge, in target pixels; 0 for hard edges.
  public let featherWidth: Double
  /// How a base frame of another size is fitted into the target.
  public let contentMode: ContentMode
  /// The colour of the bands ``ContentMode/aspectFit`` leaves.
  public let background: RGBA

  /// The last rendered frame. Reading it shares storage; holding on to the copy while
  /// rendering again makes the next render copy the whole frame, so prefer ``withFrame(_:)``.
  public private(set) var frame: RGBAImage

  private var scaledBase: RGBAImage?
  private var lastBaseKey: BaseFrameRef?
  private var dirty: [PixelBox] = []
  private var geometryCache: [GeometryKey: OverlayGeometry] = [:]
  /// Bytes of masks in ``geometryCache``; the cache is emptied above 8 MiB.
  private var geometryBytes = 0

  /// Creates a compositor for a `width`×`height` target (each at least 1).
  public init(
    width: Int, height: Int, featherWidth: Double = 0, contentMode: ContentMode = .stretch,
    background: RGBA = RGBA(0, 0, 0, 255)
  ) {
    self.width = max(1, width)
    self.height = max(1, height)
    self.featherWidth = featherWidth.isFinite ? max(0, featherWidth) : 0
    self.contentMode = contentMode
    self.background = background
    self.frame = RGBAImage(width: self.width, height: self.height, fill: background)
  }

  /// Where a base frame of `baseWidth`×`baseHeight` lands in the target: its scale on each
  /// axis and the target position of its top-left corner.
  public func placement(baseWidth: Int, baseHeight: Int) -> (
    scaleX: Double, scaleY: Double, x: Double, y: Double
  ) {
    let scaleX = Double(width) / Double(max(1, baseWidth))
    let scaleY = Double(height) / Double(max(1, baseHeight))
    let uniform: Double
    switch contentMode {
    case .stretch: return (scaleX, scaleY, 0, 0)
    case .aspectFit: uniform = min(scaleX, scaleY)
    case .aspectFill: uniform = max(scaleX, scaleY)
    }
    return (
      uniform, uniform, (Double(width) - Double(baseWidth) * uniform) / 2,
      (Double(height) - Double(baseHeight) * uniform) / 2
    )
  }

  /// Gives `body` read access to the last rendered frame's pixels without copying.
  public func withFrame<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    try frame.pixels.withUnsafeBufferPointer(body)
  }

  /// Renders `overlays` over `base` into ``frame``.
  ///
  /// - Parameter baseKey: the base frame drawn; when equal to the previous call's, the base is
  ///   assumed unchanged and only overlay regions are redrawn. Pass nil to force a full redraw
  ///   (e.g. when the frame's animation was replaced by another version since).
  @discardableResult
  public func render(base: RGBAImage, baseKey: BaseFrameRef?, overlays: [PlacedOverlay])
    -> RenderKind
  {
    let kind: RenderKind
    if let baseKey, baseKey == lastBaseKey, let scaledBase {
      for box in dirty { copy(box, from: scaledBase) }
      kind = .overlaysOnly
    } else {
      let scaled = scale(base)
      scaledBase = scaled
      // Copy into the existing frame buffer (no allocation unless someone holds `frame`).
      frame.pixels.withUnsafeMutableBufferPointer { dst in
        scaled.pixels.withUnsafeBufferPointer { src in
          dst.baseAddress!.update(from: src.baseAddress!, count: dst.count)
        }
      }
      kind = .full
    }
    lastBaseKey = baseKey
    dirty.removeAll(keepingCapacity: true)
    let place = placement(baseWidth: base.width, baseHeight: base.height)
    for overlay in overlays {
      if let box = draw(overlay, place) { dirty.append(box) }
    }
    return kind
  }

  /// Forgets the cached base: the next render is a full one.
  public func invalidate() {
    lastBaseKey = nil
    scaledBase = nil
  }

  // MARK: - Base scaling

  private func scale(_ base: RGBAImage) -> RGBAImage {
    if base.width == width && base.height == height { return base }
    // Reuse the previous scaled buffer (when no one else holds it) instead of allocating.
    var output: RGBAImage
    if let previous = scaledBase, previous.width == width, previous.height == height {
      scaledBase = nil
      output = previous
    } else {
      output = RGBAImage(width: width, height: height)
    }
    let place = placement(baseWidth: base.width, baseHeight: base.height)
    let extentX = Double(base.width) * place.scaleX
    let extentY = Double(base.height) * place.scaleY
    let xs = Self.samplingTable(count: width, source: base.width, start: place.x, extent: extentX)
    let ys = Self.samplingTable(count: height, source: base.height, start: place.y, extent: extentY)
    // The target pixels whose centres the frame covers; the rest is background.
    func covered(_ count: Int, _ start: Double, _ extent: Double) -> Range<Int> {
      let first = max(0, Int((start - 0.5).rounded(.up)))
      let end = min(count, Int((start + extent - 0.5).rounded(.up)))
      return first..<max(first, end)
    }
    let columns = covered(width, place.x, extentX)
    let rows = covered(height, place.y, extentY)
    if columns.count < width || rows.count < height {
      let fill = [background.r, background.g, background.b, background.a]
      output.pixels.withUnsafeMutableBufferPointer { dst in
        func paint(_ y: Int, _ xs: Range<Int>) {
          for x in xs { for c in 0..<4 { dst[(y * width + x) * 4 + c] = fill[c] } }
        }
        for y in 0..<height {
          if rows.contains(y) {
            paint(y, 0..<columns.lowerBound)
            paint(y, columns.upperBound..<width)
          } else {
            paint(y, 0..<width)
          }
        }
      }
    }
    base.pixels.withUnsafeBufferPointer { src in
      output.pixels.withUnsafeMutableBufferPointer { dst in
        let srcStride = base.width * 4
        for y in rows {
          let sy = ys[y]
          let row0 = sy.index * srcStride
          let row1 = sy.next * srcStride
          let wy = sy.weight
          var d = (y * width + columns.lowerBound) * 4
          for x in columns {
            let sx = xs[x]
            let a = sx.index * 4
            let b = sx.next * 4
            let wx = sx.weight
            for c in 0..<4 {
              let top = Int(src[row0 + a + c]) * (256 - wx) + Int(src[row0 + b + c]) * wx
              let bottom = Int(src[row1 + a + c]) * (256 - wx) + Int(src[row1 + b + c]) * wx
              dst[d + c] = UInt8((top * (256 - wy) + bottom * wy + 32768) >> 16)
            }
            d += 4
          }
        }
      }
    }
    return output
  }

  // MARK: - Overlays

  private func copy(_ box: PixelBox, from source: RGBAImage) {
    source.pixels.withUnsafeBufferPointer { src in
      frame.pixels.withUnsafeMutableBufferPointer { dst in
        let rowBytes = (box.x1 - box.x0) * 4
        for y in box.y0..<box.y1 {
          let offset = (y * width + box.x0) * 4
          (dst.baseAddress! + offset).update(from: src.baseAddress! + offset, count: rowBytes)
        }
      }
    }
  }

  /// Draws one overlay and returns the target pixels it touched.
  private func draw(
    _ overlay: PlacedOverlay, _ place: (scaleX: Double, scaleY: Double, x: Double, y: Double)
  ) -> PixelBox? {
    let image = overlay.image
    let rectWidth = overlay.rect.width > 0 ? overlay.rect.width : Double(image.width)
    let rectHeight = overlay.rect.height > 0 ? overlay.rect.height : Double(image.height)
    let x = place.x + overlay.rect.x * place.scaleX
    let y = place.y + overlay.rect.y * place.scaleY
    let w = rectWidth * place.scaleX
    let h = rectHeight * place.scaleY
    // Degenerate, off-screen or absurdly large rectangles (they come from the server) are
    // skipped: the geometry of an overlay costs memory in proportion to its area.
    guard w >= 0.5, h >= 0.5, x.isFinite, y.isFinite, w.isFinite, h.isFinite,
      w <= Double(4 * width), h <= Double(4 * height),
      x < Double(width), y < Double(height), x + w > 0, y + h > 0
    else { return nil }
    let originX = Int(x.rounded(.down))
    let originY = Int(y.rounded(.down))
    let key = GeometryKey(
      sourceWidth: image.width, sourceHeight: image.height, fractionX: x - Double(originX),
      fractionY: y - Double(originY), width: w, height: h, feather: featherWidth)
    let geometry = self.geometry(for: key)
    // Clip the geometry's pixel grid (origin at originX/originY) to the target.
    let box = PixelBox(
      x0: max(0, originX), y0: max(0, originY),
      x1: min(width, originX + geometry.columns.count),
      y1: min(height, originY + geometry.rows.count))
    guard box.x0 < box.x1, box.y0 < box.y1 else { return nil }
    blend(image, geometry, originX: originX, originY: originY, box: box)
    return box
  }

  private func geometry(for key: GeometryKey) -> OverlayGeometry {
    if let cached = geometryCache[key] { return cached }
    let geometry = OverlayGeometry(key)
    if geometryBytes + geometry.mask.count > 8 << 20 {
      geometryCache.removeAll(keepingCapacity: true)
      geometryBytes = 0
    }
    geometryCache[key] = geometry
    geometryBytes += geometry.mask.count
    return geometry
  }

  private func blend(
    _ image: RGBAImage, _ geometry: OverlayGeometry, originX: Int, originY: Int, box: PixelBox
  ) {
    let targetWidth = width
    let sourceStride = image.width * 4
    image.pixels.withUnsafeBufferPointer { src in
      frame.pixels.withUnsafeMutableBufferPointer { dst in
        geometry.mask.withUnsafeBufferPointer { mask in
          for ty in box.y0..<box.y1 {
            let gy = ty - originY
            let row = geometry.rows[gy]
            let maskRow = gy * geometry.columns.count
            var d = (ty * targetWidth + box.x0) * 4
            for tx in box.x0..<box.x1 {
              defer { d += 4 }
              let gx = tx - originX
              let m = Int(mask[maskRow + gx])
              if m == 0 { continue }
              let column = geometry.columns[gx]
              // Premultiplied source sample (0...255 scale).
              var r: Int
              var g: Int
              var b: Int
              var a: Int
              if geometry.isExact {
                let s = row.index * sourceStride + column.index * 4
                a = Int(src[s + 3])
                r = (Int(src[s]) * a + 127) / 255
                g = (Int(src[s + 1]) * a + 127) / 255
                b = (Int(src[s + 2]) * a + 127) / 255
              } else {
                let wx = column.weight
                let wy = row.weight
                let weights = (
                  (256 - wx) * (256 - wy), wx * (256 - wy), (256 - wx) * wy, wx * wy
                )
                let s00 = row.index * sourceStride + column.index * 4
                let s01 = row.index * sourceStride + column.next * 4
                let s10 = row.next * sourceStride + column.index * 4
                let s11 = row.next * sourceStride + column.next * 4
                let a00 = Int(src[s00 + 3]) * weights.0
                let a01 = Int(src[s01 + 3]) * weights.1
                let a10 = Int(src[s10 + 3]) * weights.2
                let a11 = Int(src[s11 + 3]) * weights.3
                a = (a00 + a01 + a10 + a11 + 32768) >> 16
                // Sum of colour × alpha × weight, scaled back to 0...255.
                func channel(_ c: Int) -> Int {
                  let sum =
                    Int(src[s00 + c]) * a00 + Int(src[s01 + c]) * a01 + Int(src[s10 + c]) * a10
                    + Int(src[s11 + c]) * a11
                  return (sum / 255 + 32768) >> 16
                }
                r = channel(0)
                g = channel(1)
                b = channel(2)
              }
              if m != 255 {
                r = (r * m + 127) / 255
                g = (g * m + 127) / 255
                b = (b * m + 127) / 255
                a = (a * m + 127) / 255
              }
              if a == 0 { continue }
              let inverse = 255 - a
              let da = Int(dst[d + 3])
              if da == 255 {
                dst[d] = UInt8(min(255, r + (Int(dst[d]) * inverse + 127) / 255))
                dst[d + 1] = UInt8(min(255, g + (Int(dst[d + 1]) * inverse + 127) / 255))
                dst[d + 2] = UInt8(min(255, b + (Int(dst[d + 2]) * inverse + 127) / 255))
              } else {
                // General "over" with a translucent destination, back to straight alpha.
                let dstWeight = da * inverse  // 0...255², destination's share × 255
                let outA = a + (dstWeight + 127) / 255
                if outA == 0 { continue }
                func mix(_ source: Int, _ destination: UInt8) -> UInt8 {
                  let premultiplied = source * 255 + (Int(destination) * dstWeight + 127) / 255
                  return UInt8(min(255, (premultiplied + outA / 2) / outA))
                }
                dst[d] = mix(r, dst[d])
                dst[d + 1] = mix(g, dst[d + 1])
                dst[d + 2] = mix(b, dst[d + 2])
                dst[d + 3] = UInt8(min(255, outA))
              }
            }
          }
        }
      }
    }
  }

  // MARK: - Geometry

  /// Bilinear sample positions: for each destination pixel, a source index, its neighbour and
  /// the neighbour's weight in 1/256.
  struct Sample {
    var index: Int
    var next: Int
    var weight: Int
  }

  /// Samples for `count` destination pixels covering `extent` destination pixels starting at
  /// `start` (a fraction of a pixel), over a source of `source` pixels.
  static func samplingTable(count: Int, source: Int, start: Double, extent: Double) -> [Sample] {
    let ratio = Double(source) / extent
    return (0..<count).map { i in
      let position = (Double(i) + 0.5 - start) * ratio - 0.5
      let clamped = min(max(position, 0), Double(source - 1))
      let index = Int(clamped.rounded(.down))
      let weight = Int(((clamped - Double(index)) * 256).rounded())
      return Sample(index: index, next: min(index + 1, source - 1), weight: min(weight, 256))
    }
  }

  private struct PixelBox {
    var x0: Int
    var y0: Int
    var x1: Int
    var y1: Int
  }

  private struct GeometryKey: Hashable {
    var sourceWidth: Int
    var sourceHeight: Int
    var fractionX: Double
    var fractionY: Double
    var width: Double
    var height: Double
    var feather: Double
  }

  /// The sampling tables and feather mask of one overlay placement, reused across frames.
  private struct OverlayGeometry {
    var columns: [Sample]
    var rows: [Sample]
    /// Coverage × feather per pixel of the grid, 0...255.
    var mask: [UInt8]
    /// 1:1 on whole pixels: sample without interpolation.
    var isExact: Bool

    init(_ key: GeometryKey) {
      let right = key.fractionX + key.width
      let bottom = key.fractionY + key.height
      let columnCount = Int(right.rounded(.up))
      let rowCount = Int(bottom.rounded(.up))
      columns = Compositor.samplingTable(
        count: columnCount, source: key.sourceWidth, start: key.fractionX, extent: key.width)
      rows = Compositor.samplingTable(
        count: rowCount, source: key.sourceHeight, start: key.fractionY, extent: key.height)
      isExact =
        key.fractionX == 0 && key.fractionY == 0 && key.width == Double(key.sourceWidth)
        && key.height == Double(key.sourceHeight)
      let a = key.width / 2
      let b = key.height / 2
      let cx = key.fractionX + a
      let cy = key.fractionY + b
      var mask = [UInt8](repeating: 0, count: columnCount * rowCount)
      for gy in 0..<rowCount {
        // Vertical coverage of this pixel row by the rectangle.
        let coverY = min(Double(gy + 1), bottom) - max(Double(gy), key.fractionY)
        for gx in 0..<columnCount {
          let coverX = min(Double(gx + 1), right) - max(Double(gx), key.fractionX)
          var value = max(0, min(1, coverX)) * max(0, min(1, coverY))
          if key.feather > 0, value > 0 {
            let dx = Double(gx) + 0.5 - cx
            let dy = Double(gy) + 0.5 - cy
            // Signed distance to the ellipse, ≈ F / |∇F| with F = x²/a² + y²/b² - 1.
            let f = dx * dx / (a * a) + dy * dy / (b * b) - 1
            let gradient = (4 * dx * dx / (a * a * a * a) + 4 * dy * dy / (b * b * b * b))
              .squareRoot()
            let inside = gradient > 0 ? -f / gradient : .infinity
            let t = max(0, min(1, inside / key.feather))
            value *= t * t * (3 - 2 * t)
          }
          mask[gy * columnCount + gx] = UInt8((value * 255).rounded())
        }
      }
      self.mask = mask
    }
  }
}
