/// A mouth shape, in the nine-shape set Rhubarb Lip Sync uses (Preston Blair's A–H plus X).
///
/// | viseme | mouth | sounds |
/// |---|---|---|
/// | `A` | closed, lips pressed | P, B, M |
/// | `B` | slightly open, teeth clenched | most consonants (K, S, T, ...), EE |
/// | `C` | open | EH, AE |
/// | `D` | wide open | AA |
/// | `E` | slightly rounded | AO, ER |
/// | `F` | puckered | UW, OW, W |
/// | `G` | upper teeth on the lower lip | F, V |
/// | `H` | tongue raised | long L |
/// | `X` | at rest | silence |
public enum Viseme: String, CaseIterable, Hashable, Sendable, Codable, Comparable {
  /// Closed mouth, lips pressed (P, B, M).
  case a = "A"
  /// Slightly open, teeth clenched (most consonants, EE).
  case b = "B"
  /// Open (EH, AE).
  case c = "C"
  /// Wide open (AA).
  case d = "D"
  /// Slightly rounded (AO, ER).
  case e = "E"
  /// Puckered (UW, OW, W).
  case f = "F"
  /// Upper teeth on the lower lip (F, V).
  case g = "G"
  /// Tongue raised (L).
  case h = "H"
  /// At rest (silence).
  case x = "X"

  /// The sprite file name of this mouth in an avatar pack, e.g. `mouth_A.webp`.
  public var sheetFilename: String { "mouth_\(rawValue).webp" }

  /// The viseme a sprite file name (``sheetFilename``) stands for, or nil.
  public init?(sheetFilename: String) {
    guard sheetFilename.hasPrefix("mouth_"), sheetFilename.hasSuffix(".webp") else { return nil }
    let label = sheetFilename.dropFirst("mouth_".count).dropLast(".webp".count)
    self.init(rawValue: String(label))
  }

  /// The coarse phoneme class sent as a frame's `char`: `"silence"` for X, `"vowel"` for the
  /// open shapes C, D, E and F, `"consonant"` for A, B, G and H.
  public var phonemeClass: String {
    switch self {
    case .x: "silence"
    case .c, .d, .e, .f: "vowel"
    case .a, .b, .g, .h: "consonant"
    }
  }

  /// Orders A … H, then X.
  public static func < (lhs: Viseme, rhs: Viseme) -> Bool { lhs.rawValue < rhs.rawValue }
}
