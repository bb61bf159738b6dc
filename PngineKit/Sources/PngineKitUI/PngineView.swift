#if canImport(SwiftUI) && canImport(UIKit) && canImport(PngineWebGPU)
  import Foundation
  import PngineKit
  import SwiftUI

  /// Whether the animation plays (seed 004's `PlaybackMode`).
  public enum PnginePlaybackMode: Sendable, Hashable {
    /// Playing.
    case playing
    /// Holding its frame: nothing is rendered, the executor's frame counter stands still.
    case paused
  }

  /// A SwiftUI view playing a PNGine PNG over ``PngineUIView``; loading waits until the view has
  /// a size. Modifiers return modified copies:
  ///
  /// ```swift
  /// PngineView(png: data)
  ///   .animationSpeed(1.5)
  ///   .backgroundBehavior(.pauseAndRestore)
  /// ```
  public struct PngineView: UIViewRepresentable {
    private let png: Data
    private var configuration = PnginePlayer.Configuration()
    private var mode = PnginePlaybackMode.playing
    private var transparent = false
    private var configurations: [@MainActor (PngineUIView) -> Void] = []

    /// A view playing `png` (the whole PNG file).
    public init(png: Data) { self.png = png }

    /// Plays or holds (``PngineUIView/isPaused``: a held view renders nothing).
    public func playbackMode(_ mode: PnginePlaybackMode) -> Self {
      var copy = self
      copy.mode = mode
      return copy
    }

    /// Lets what the animation leaves transparent show what is behind the view
    /// (``PngineUIView/isTransparent``).
    public func transparentBackground(_ transparent: Bool = true) -> Self {
      var copy = self
      copy.transparent = transparent
      return copy
    }

    /// Animation seconds per second.
    public func animationSpeed(_ speed: Double) -> Self {
      var copy = self
      copy.configuration.speed = speed
      return copy
    }

    /// What going to the background does (default `pauseAndRestore`).
    public func backgroundBehavior(_ behavior: PngineBackgroundBehavior) -> Self {
      var copy = self
      copy.configuration.backgroundBehavior = behavior
      return copy
    }

    /// Called on the main thread with every error (``PngineUIView/onError``).
    public func onError(_ action: @escaping @MainActor (PngineError) -> Void) -> Self {
      configure { $0.onError = action }
    }

    /// Called on the main thread when a non-looping animation ends (``PngineUIView/onFinished``).
    public func onFinished(_ action: @escaping @MainActor () -> Void) -> Self {
      configure { $0.onFinished = action }
    }

    /// Anything else, on the UIKit view.
    public func configure(_ body: @escaping @MainActor (PngineUIView) -> Void) -> Self {
      var copy = self
      copy.configurations.append(body)
      return copy
    }

    /// Makes the view (it loads on its first layout with a size).
    public func makeUIView(context: Context) -> PngineUIView {
      let view = PngineUIView(png: png, configuration: configuration)
      view.isTransparent = transparent
      view.isPaused = mode == .paused
      for configure in configurations { configure(view) }
      return view
    }

    /// Applies changed settings.
    public func updateUIView(_ view: PngineUIView, context: Context) {
      if view.configuration != configuration { view.configuration = configuration }
      view.isPaused = mode == .paused
      for configure in configurations { configure(view) }
    }

    /// Stops ticking and unloads.
    public static func dismantleUIView(_ view: PngineUIView, coordinator: ()) {
      view.tearDown()
    }
  }
#endif
