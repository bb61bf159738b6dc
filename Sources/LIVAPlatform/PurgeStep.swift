@_exported import PlaybackLifecycle

/// What LIVA frees under memory pressure, cheapest to bring back first; the steps of each
/// ``PlaybackLifecycle/LifecyclePolicy/PurgeLevel`` are ``steps(for:)``.
public enum PurgeStep: Sendable, Hashable, CaseIterable {
  /// Spare buffers of the frame pool (the frame on screen stays).
  case framePoolSpares
  /// Decoded base frames outside the window ahead (idle frame 0 stays).
  case decodedFramesBehind
  /// Every decoded base frame but idle frame 0 and the frame on screen; the window is
  /// decoded again on demand.
  case decodedFrames
  /// Decoded images of messages already played.
  case playedOverlays

  /// The steps of a purge level, in order: in the foreground what can be brought back without
  /// a visible hold (the window ahead stays); in the background every decoded frame but idle
  /// frame 0 and the one on screen.
  public static func steps(for level: LifecyclePolicy.PurgeLevel) -> [PurgeStep] {
    switch level {
    case .light: [.framePoolSpares, .playedOverlays, .decodedFramesBehind]
    case .deep: [.framePoolSpares, .playedOverlays, .decodedFrames]
    }
  }
}
