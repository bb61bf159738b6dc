#if canImport(SwiftUI) && canImport(UIKit)
  import Combine
  import LIVA
  import LIVAPlatform
  import UIKit

  /// One avatar for a SwiftUI app: its pipeline, its client's state and its last error,
  /// observable. Shown by ``LIVAAvatarView/init(avatar:)``, the way `VideoPlayer` shows an
  /// `AVPlayer`; the app keeps it (in `@StateObject`) and talks through it:
  ///
  /// ```swift
  /// @StateObject private var avatar = LIVAAvatar(configuration: configuration)
  ///
  /// var body: some View {
  ///   LIVAAvatarView(avatar: avatar)
  ///   Button("Hello") { Task { await avatar.send("Hello!") } }
  ///     .disabled(avatar.state != .ready)
  /// }
  /// ```
  ///
  /// Show it in one place at a time: the avatar has one view.
  ///
  /// An `ObservableObject` rather than `@Observable`, so that it serves SwiftUI and UIKit (and
  /// Combine) alike.
  @MainActor
  public final class LIVAAvatar: ObservableObject {
    /// The client's state (connecting, ready, speaking, error…), as it changes.
    @Published public private(set) var state: LIVAState = .idle
    /// The newest failure: the pipeline not built (no audio device, no cache folder), a
    /// message not sent, or an ``LIVA/LIVAEvent/error(_:)`` of the client. `nil` once a
    /// message is sent successfully.
    @Published public private(set) var lastError: (any Error)?
    /// The text of the message being spoken, while it is.
    @Published public private(set) var speaking: String?
    /// The client, for everything else (`metrics`, `interrupt()`, `events`…); `nil` when the
    /// pipeline could not be built (see ``lastError``).
    public var client: LIVAClient? { view?.client }

    let view: LIVAAvatarUIView?
    private var tasks: [Task<Void, Never>] = []

    /// Builds the pipeline for `configuration` (display link, audio output, surface, life
    /// cycle); it connects when its view appears.
    public init(
      configuration: LIVAConfiguration, lifecycle: LifecyclePolicy.Configuration = .init()
    ) {
      do {
        view = try LIVAAvatarUIView(configuration: configuration, lifecycle: lifecycle)
      } catch {
        view = nil
        lastError = error
      }
      guard let client else { return }
      let states = client.states
      let events = client.events
      tasks.append(
        Task { [weak self] in
          for await state in states {
            guard let self else { return }
            self.state = state
          }
        })
      tasks.append(
        Task { [weak self] in
          for await event in events {
            guard let self else { return }
            switch event {
            case .speakingStarted(_, let text): self.speaking = text ?? ""
            case .speakingEnded: self.speaking = nil
            case .error(let error): self.lastError = error
            default: break
            }
          }
        })
    }

    deinit {
      for task in tasks { task.cancel() }
    }

    /// Connects (the view does it when it appears).
    public func connect() async { await client?.connect() }

    /// Disconnects and stops listening; the avatar can connect again.
    public func disconnect() async { await client?.disconnect() }

    /// Sends `text`; the avatar answers, lips on the audio. A failure becomes ``lastError``.
    public func send(_ text: String) async {
      guard let client else { return }
      do {
        try await client.sendMessage(text)
        lastError = nil
      } catch {
        lastError = error
      }
    }

    /// Stops talking now.
    public func interrupt() { client?.interrupt() }
  }
#endif
