/// Where an overlay sits on a base frame, in the base frame's pixel coordinates
/// (origin top-left, y down).
public struct PlacementRect: Hashable, Sendable, CustomStringConvertible {
  /// Left edge.
  public var x: Double
  /// Top edge.
  public var y: Double
  /// Width; zero means "the overlay image's natural width".
  public var width: Double
  /// Height; zero means "the overlay image's natural height".
  public var height: Double

  /// Creates a rectangle.
  public init(x: Double, y: Double, width: Double, height: Double) {
    self.x = x
    self.y = y
    self.width = width
    self.height = height
  }

  /// A rectangle at a point with the image's natural size (width and height zero), as the
  /// protocol asks when a frame has no `coordinates` but its section has a `zone_top_left`.
  public static func at(x: Double, y: Double) -> PlacementRect {
    PlacementRect(x: x, y: y, width: 0, height: 0)
  }

  /// `[x, y, w, h]`.
  public var description: String { "[\(x), \(y), \(width), \(height)]" }
}
