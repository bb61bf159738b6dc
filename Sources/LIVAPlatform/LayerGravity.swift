import LIVAMedia

/// How a layer scales frames that are not its size (`CALayerContentsGravity`, reduced): the
/// GPU scales the avatar's frames to the view, so the player composes at the avatar's own size
/// and the view's content mode becomes the layer's gravity.
public enum LayerGravity: String, Sendable, Hashable, CaseIterable {
  /// `.resize`: fills the layer, aspect ignored.
  case resize
  /// `.resizeAspect`: fits inside, aspect kept, bands left over.
  case resizeAspect
  /// `.resizeAspectFill`: covers the layer, aspect kept, what spills over cut.
  case resizeAspectFill

  /// The gravity that shows frames as `mode` asks.
  public init(_ mode: ContentMode) {
    switch mode {
    case .stretch: self = .resize
    case .aspectFit: self = .resizeAspect
    case .aspectFill: self = .resizeAspectFill
    }
  }
}
