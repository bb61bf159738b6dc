#if canImport(SwiftUI) && canImport(UIKit)
  import LIVA
  import LIVAMedia
  import LIVAPlatform
  import SwiftUI

  /// A SwiftUI view of a LIVA avatar over ``LIVAAvatarUIView``. It connects when it appears;
  /// modifiers return modified copies, as Lottie's do:
  ///
  /// ```swift
  /// LIVAAvatarView(configuration: configuration)
  ///   .avatarContentMode(.aspectFill)
  ///   .onAvatarEvent { event in print(event) }
  /// ```
  ///
  /// Made from a configuration, the view owns its avatar and disconnects when it goes. Made
  /// from a ``LIVAAvatar`` (to send messages and show its state), the app owns the avatar: the
  /// view shows it and connects it, and the avatar stays connected until
  /// ``LIVAAvatar/disconnect()``. The lifecycle modifier (``backgroundGrace(_:)``) applies to
  /// the avatar the view makes; a ``LIVAAvatar`` takes its own at `init`.
  public struct LIVAAvatarView: UIViewRepresentable {
    private let source: Source
    private var contentMode: LIVAMedia.ContentMode = .aspectFit
    private var lifecycle = LifecyclePolicy.Configuration()
    private var onEvent: (@Sendable (LIVAEvent) -> Void)?

    /// Where the avatar comes from: made by the view, or the app's.
    private enum Source {
      case configuration(LIVAConfiguration)
      case avatar(LIVAAvatar)
    }

    /// A view for the avatar `configuration` names.
    public init(configuration: LIVAConfiguration) { source = .configuration(configuration) }

    /// A view of `avatar`, which the app keeps (and talks through).
    public init(avatar: LIVAAvatar) { source = .avatar(avatar) }

    /// How frames fit the view (default aspect fit).
    public func avatarContentMode(_ mode: LIVAMedia.ContentMode) -> Self {
      var copy = self
      copy.contentMode = mode
      return copy
    }

    /// Seconds in the background before disconnecting (nil: never).
    public func backgroundGrace(_ seconds: Double?) -> Self {
      var copy = self
      copy.lifecycle.backgroundGrace = seconds
      return copy
    }

    /// Calls `handler` with every event of the client (speaking, chunks, warnings, errors).
    public func onAvatarEvent(_ handler: @escaping @Sendable (LIVAEvent) -> Void) -> Self {
      var copy = self
      copy.onEvent = handler
      return copy
    }

    /// Holds the view's tasks (the event loop and the connect), so that the view's going
    /// cancels them: a task nobody holds would keep the client and its engine alive.
    @MainActor
    public final class Coordinator {
      fileprivate var tasks: [Task<Void, Never>] = []
      fileprivate var borrowed = false
    }

    /// A coordinator for the view's tasks.
    public func makeCoordinator() -> Coordinator { Coordinator() }

    /// Builds the view and connects.
    public func makeUIView(context: Context) -> UIView {
      let found: LIVAAvatarUIView?
      switch source {
      case .configuration(let configuration):
        found = try? LIVAAvatarUIView(configuration: configuration, lifecycle: lifecycle)
      case .avatar(let avatar):
        found = avatar.view
        context.coordinator.borrowed = true
      }
      guard let view = found else { return UIView() }
      view.avatarContentMode = contentMode
      let client = view.client
      if let onEvent {
        context.coordinator.tasks.append(
          Task { for await event in client.events { onEvent(event) } })
      }
      context.coordinator.tasks.append(Task { await client.connect() })
      return view
    }

    /// Applies a changed content mode.
    public func updateUIView(_ uiView: UIView, context: Context) {
      (uiView as? LIVAAvatarUIView)?.avatarContentMode = contentMode
    }

    /// Cancels the view's tasks (the event loop ends); an avatar the view made also
    /// disconnects and stops ticking.
    public static func dismantleUIView(_ uiView: UIView, coordinator: Coordinator) {
      for task in coordinator.tasks { task.cancel() }
      coordinator.tasks = []
      // An app's avatar outlives the view (it was made from a LIVAAvatar).
      guard let view = uiView as? LIVAAvatarUIView, !coordinator.borrowed else { return }
      view.tearDown()
      Task { [client = view.client] in await client.disconnect() }
    }
  }
#endif
