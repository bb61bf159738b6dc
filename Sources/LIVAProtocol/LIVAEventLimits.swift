import Foundation

/// Limits on the values of incoming LIVA events. Anything beyond them is rejected with a
/// ``LIVAProtocolError`` (`outOfRange` or `tooLarge`) naming the event and field.
public struct LIVAEventLimits: Hashable, Sendable {
  /// The largest index accepted anywhere (chunk, batch, section, sequence, frame, sprite
  /// frame number). Default 1,000,000.
  public var maximumIndex: Int
  /// The largest count accepted (total frames, images, batches). Default 1,000,000.
  public var maximumCount: Int
  /// The most frames in one event (all sections together), counting every element where a
  /// frame belongs whatever its type; sections and plan entries are counted apart against the
  /// same limit. Default 10,000.
  public var maximumFramesPerEvent: Int
  /// The largest decoded image, in bytes. Default 16 MiB.
  public var maximumImageBytes: Int
  /// The largest decoded audio chunk, in bytes. Default 16 MiB.
  public var maximumAudioBytes: Int
  /// The longest string accepted for ids, file names, modes and labels. Default 512.
  public var maximumStringLength: Int
  /// The largest absolute overlay coordinate or size, in pixels. Default 100,000.
  public var maximumCoordinate: Double
  /// The most animations in a manifest. Default 1,000.
  public var maximumAnimations: Int
  /// The most problems one event reports one by one; the rest are counted in one more
  /// problem that says how many were left out. Default 32.
  public var maximumIssuesPerEvent: Int

  /// Creates limits; every argument has a default.
  public init(
    maximumIndex: Int = 1_000_000, maximumCount: Int = 1_000_000,
    maximumFramesPerEvent: Int = 10_000, maximumImageBytes: Int = 16 << 20,
    maximumAudioBytes: Int = 16 << 20, maximumStringLength: Int = 512,
    maximumCoordinate: Double = 100_000, maximumAnimations: Int = 1_000,
    maximumIssuesPerEvent: Int = 32
  ) {
    self.maximumIndex = maximumIndex
    self.maximumCount = maximumCount
    self.maximumFramesPerEvent = maximumFramesPerEvent
    self.maximumImageBytes = maximumImageBytes
    self.maximumAudioBytes = maximumAudioBytes
    self.maximumStringLength = maximumStringLength
    self.maximumCoordinate = maximumCoordinate
    self.maximumAnimations = maximumAnimations
    self.maximumIssuesPerEvent = maximumIssuesPerEvent
  }

  /// The default limits.
  public static let `default` = LIVAEventLimits()
}
