/// The pointer as a PNGine shader sees it: the 12 little-endian f32s that
/// `write_pointer_uniform` (opcode 0x26) writes, kept the way PNGine's web host keeps them.
///
/// | floats | meaning |
/// |---|---|
/// | 0, 1 | x, y: position over the canvas, 0…1 from its top left (y down) |
/// | 2, 3 | where the last press was; negative once released, 0 before any press |
/// | 4, 5 | movement since the last frame (summed), in the same units |
/// | 6 | buttons: 1 primary, 2 secondary, 4 middle |
/// | 7 | pressure (0.5 for a press that reports none; 0.5 while moving pressed) |
/// | 8 | modifiers (``Modifiers``) |
/// | 9, 10 | wheel steps since the last frame (±1 an event; +y scrolls down) |
/// | 11 | 0 |
///
/// With no pointer (headless, or none yet) every float is 0. A pure value: the view feeds it
/// touches or clicks, the renderer writes it into each frame and calls ``frameConsumed()``.
public struct PointerState: Sendable, Hashable {
  /// Keys held with the pointer, as upstream numbers them.
  public struct Modifiers: OptionSet, Sendable, Hashable {
    /// The bits.
    public let rawValue: UInt32
    /// Makes a set from its bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Shift.
    public static let shift = Modifiers(rawValue: 1)
    /// Control.
    public static let control = Modifiers(rawValue: 2)
    /// Alt (Option).
    public static let alt = Modifiers(rawValue: 4)
    /// Meta (Command).
    public static let meta = Modifiers(rawValue: 8)
    /// The space bar.
    public static let space = Modifiers(rawValue: 16)
  }

  /// Position, 0…1 from the canvas's top left.
  public private(set) var x: Float = 0
  /// Position, 0…1 from the canvas's top left (y down).
  public private(set) var y: Float = 0
  /// The last press (negative once released).
  public private(set) var clickX: Float = 0
  /// The last press (negative once released).
  public private(set) var clickY: Float = 0
  /// Movement since the last frame.
  public private(set) var dx: Float = 0
  /// Movement since the last frame.
  public private(set) var dy: Float = 0
  /// Buttons held (1 primary, 2 secondary, 4 middle).
  public private(set) var buttons: Float = 0
  /// Pressure, 0…1.
  public private(set) var pressure: Float = 0
  /// Keys held.
  public var modifiers: Modifiers = []
  /// Wheel steps since the last frame.
  public private(set) var scrollX: Float = 0
  /// Wheel steps since the last frame.
  public private(set) var scrollY: Float = 0

  /// At rest: all zero.
  public init() {}

  /// A press at (`x`, `y`) (0…1 over the canvas) with `buttons`; a `pressure` of 0 (a device
  /// that reports none) counts as 0.5.
  public mutating func down(x: Float, y: Float, buttons: Int = 1, pressure: Float = 0) {
    self.x = x
    self.y = y
    clickX = x
    clickY = y
    self.buttons = Float(buttons)
    self.pressure = pressure == 0 ? 0.5 : pressure
  }

  /// A move to (`x`, `y`), clamped into the canvas; the movement adds up until the next frame.
  public mutating func move(x: Float, y: Float) {
    let clampedX = min(1, max(0, x))
    let clampedY = min(1, max(0, y))
    dx += clampedX - self.x
    dy += clampedY - self.y
    self.x = clampedX
    self.y = clampedY
    pressure = buttons != 0 ? 0.5 : 0
  }

  /// The press ended (or was cancelled): the click's sign turns, buttons and pressure go to 0.
  public mutating func up() {
    clickX = -abs(clickX)
    clickY = -abs(clickY)
    buttons = 0
    pressure = 0
  }

  /// A wheel (or two-finger scroll) event: one step in each direction it moved.
  public mutating func scroll(dx: Float, dy: Float) {
    scrollX += Float(dx > 0 ? 1 : dx < 0 ? -1 : 0)
    scrollY += Float(dy > 0 ? 1 : dy < 0 ? -1 : 0)
  }

  /// A frame used the state: movement and wheel steps start again from 0.
  public mutating func frameConsumed() {
    dx = 0
    dy = 0
    scrollX = 0
    scrollY = 0
  }

  /// The bytes `write_pointer_uniform` writes: the 12 floats, little-endian, cut to `size` in
  /// whole floats (at most 48 bytes).
  public func uniformBytes(size: Int) -> [UInt8] {
    let values: [Float] = [
      x, y, clickX, clickY, dx, dy, buttons, pressure, Float(modifiers.rawValue), scrollX,
      scrollY, 0,
    ]
    return littleEndianFloatBytes(values, prefix: max(0, size) / 4 * 4)
  }
}
