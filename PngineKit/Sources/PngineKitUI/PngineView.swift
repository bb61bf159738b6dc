#if canImport(SwiftUI) && canImport(UIKit) && canImport(PngineWebGPU)
  import CoreGraphics
  import Foundation
  import PngineKit
  import SwiftUI

  /// Whether the animation plays (play or pause).
  public enum PnginePlaybackMode: Sendable, Hashable {
    /// Playing.
    case playing
    /// Holding its frame: nothing is rendered, the executor's frame counter stands still.
    case paused
  }

  /// A SwiftUI view playing a PNGine PNG over ``PngineUIView``; loading waits until the view has
  /// a size. Given the PNG, it plays it; given a way to load it (an async loader), it shows
  /// `placeholder` while the file comes, then the PNG's own picture while the animation gets
  /// ready, and that picture (or the placeholder, when the file never came) if it cannot run
  /// (``PngineKit/PngineLoading``). Modifiers return modified copies:
  ///
  /// ```swift
  /// PngineView(png: data)
  ///   .animationSpeed(1.5)
  ///   .backgroundBehavior(.pauseAndRestore)
  ///
  /// PngineView { try await PngineLoader.fetch(.remote(url)) } placeholder: { ProgressView() }
  ///   .onError { print($0.localizedDescription) }
  /// ```
  public struct PngineView: View {
    private let source: Source
    private let placeholder: AnyView
    private var configuration = PnginePlayer.Configuration()
    private var mode = PnginePlaybackMode.playing
    private var transparent = false
    private var loadPolicy = PngineLoadPolicy()
    private var configurations: [@MainActor (PngineUIView) -> Void] = []
    private var errorAction: (@MainActor (PngineError) -> Void)?
    @State private var loading = PngineLoading()
    @State private var loaded: Data?

    private enum Source {
      case png(Data)
      case load(@Sendable () async throws -> Data)
    }

    /// A view playing `png` (the whole PNG file).
    public init(png: Data) {
      source = .png(png)
      placeholder = AnyView(EmptyView())
    }

    /// A view that loads its PNG with `load` (cancelled when the view goes), showing
    /// `placeholder` until the file is here.
    public init<Placeholder: View>(
      _ load: @escaping @Sendable () async throws -> Data,
      @ViewBuilder placeholder: () -> Placeholder
    ) {
      source = .load(load)
      self.placeholder = AnyView(placeholder())
    }

    /// A view that loads its PNG's bytes with `load`, as ``PngineKit/PngineLoader/fetch(_:session:maximumBytes:)``
    /// returns them: `PngineView { try await PngineLoader.fetch(.remote(url)) } placeholder: { … }`.
    public init<Placeholder: View>(
      _ load: @escaping @Sendable () async throws -> [UInt8],
      @ViewBuilder placeholder: () -> Placeholder
    ) {
      source = .load { Data(try await load()) }
      self.placeholder = AnyView(placeholder())
    }

    /// The animation, the placeholder, or the PNG's own picture, as the load stands.
    public var body: some View {
      switch source {
      case .png(let png):
        canvas(png)
      case .load(let load):
        content.task { await run(load) }
      }
    }

    @ViewBuilder private var content: some View {
      switch loading.state {
      case .idle, .fetching:
        placeholder
      case .preparing(let still):
        if let png = loaded {
          canvas(png).background { picture(still) }
        } else {
          placeholder
        }
      case .ready:
        if let png = loaded { canvas(png) } else { placeholder }
      case .failed(_, let fallback):
        if let fallback { picture(fallback) } else { placeholder }
      }
    }

    private func canvas(_ png: Data) -> some View {
      PngineCanvas(
        png: png, configuration: configuration, mode: mode, transparent: transparent,
        configurations: configurations,
        onError: { error in
          loading.failed(error)
          errorAction?(error)
        },
        onReady: { loading.prepared() })
    }

    @ViewBuilder private func picture(_ image: RGBAImage?) -> some View {
      if let image, let cgImage = PngineStill.cgImage(image) {
        Image(decorative: cgImage, scale: 1).resizable().scaledToFit()
      } else {
        placeholder
      }
    }

    private func run(_ load: @Sendable () async throws -> Data) async {
      loading = PngineLoading(policy: loadPolicy)
      loading.began()
      do {
        let data = try await load()
        // The loader's size cap and typed error, for bytes the app fetched itself.
        let bytes = try await PngineLoader.fetch(.data(data), maximumBytes: loadPolicy.maximumBytes)
        loaded = data
        loading.fetched(bytes)
      } catch is CancellationError {
        loading.cancelled()
      } catch let error as PngineError {
        loading.fetchFailed(error)
        errorAction?(error)
      } catch {
        let wrapped = PngineError(
          .invalidArgument, error.localizedDescription, location: .init(call: "load"))
        loading.fetchFailed(wrapped)
        errorAction?(wrapped)
      }
    }

    /// How the PNG's own picture shows while loading and on failure (``PngineKit/PngineLoadPolicy``).
    public func loadPolicy(_ policy: PngineLoadPolicy) -> Self {
      var copy = self
      copy.loadPolicy = policy
      return copy
    }

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

    /// Called on the main thread with every error: the load's, and the animation's
    /// (``PngineUIView/onError``).
    public func onError(_ action: @escaping @MainActor (PngineError) -> Void) -> Self {
      var copy = self
      copy.errorAction = action
      return copy
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

  }

  /// The UIKit view under ``PngineView``.
  struct PngineCanvas: UIViewRepresentable {
    let png: Data
    let configuration: PnginePlayer.Configuration
    let mode: PnginePlaybackMode
    let transparent: Bool
    let configurations: [@MainActor (PngineUIView) -> Void]
    let onError: @MainActor (PngineError) -> Void
    let onReady: @MainActor () -> Void

    /// Makes the view (it loads on its first layout with a size).
    func makeUIView(context: Context) -> PngineUIView {
      let view = PngineUIView(png: png, configuration: configuration)
      view.isTransparent = transparent
      view.isPaused = mode == .paused
      view.onError = onError
      view.onReady = onReady
      for configure in configurations { configure(view) }
      return view
    }

    /// Applies changed settings.
    func updateUIView(_ view: PngineUIView, context: Context) {
      if view.configuration != configuration { view.configuration = configuration }
      view.isPaused = mode == .paused
      view.onError = onError
      for configure in configurations { configure(view) }
    }

    /// Stops ticking and unloads.
    static func dismantleUIView(_ view: PngineUIView, coordinator: ()) {
      view.tearDown()
    }
  }

  /// The PNG's own picture as a `CGImage`.
  enum PngineStill {
    static func cgImage(_ image: RGBAImage) -> CGImage? {
      guard image.width > 0, image.height > 0,
        image.pixels.count == image.width * image.height * 4,
        let provider = CGDataProvider(data: Data(image.pixels) as CFData)
      else { return nil }
      return CGImage(
        width: image.width, height: image.height, bitsPerComponent: 8, bitsPerPixel: 32,
        bytesPerRow: image.width * 4, space: CGColorSpaceCreateDeviceRGB(),
        bitmapInfo: CGBitmapInfo(rawValue: CGImageAlphaInfo.last.rawValue), provider: provider,
        decode: nil, shouldInterpolate: true, intent: .defaultIntent)
    }
  }

  /// The forms the README and the DocC show, compiled with the view (an Apple build checks
  /// them; nothing calls these): an async loader with a placeholder, an app's own `Data`
  /// loader, and a gallery whose animations share one GPU device.
  enum PngineViewExamples {
    @MainActor static func seed(_ url: URL) -> some View {
      PngineView {
        try await PngineLoader.fetch(.remote(url))
      } placeholder: {
        ProgressView()
      }
      .onError { print($0.localizedDescription) }
    }

    @MainActor static func ownLoader(_ url: URL) -> some View {
      PngineView {
        try await URLSession.shared.data(from: url).0
      } placeholder: {
        Color.clear
      }
    }

    @MainActor static func gallery(_ names: [String]) -> some View {
      ScrollView {
        LazyVGrid(columns: [GridItem(.adaptive(minimum: 160))]) {
          ForEach(names, id: \.self) { name in
            PngineView {
              guard let source = PngineSource.bundle(name) else {
                throw PngineError(.invalidArgument, "no \(name).png in the app")
              }
              return try await PngineLoader.fetch(source)
            } placeholder: {
              ProgressView()
            }
            .frame(height: 160)
          }
        }
      }
    }
  }
#endif
