import LIVAKit
import SwiftUI

struct ContentView: View {
  @StateObject private var avatar: LIVAAvatar
  @State private var text = ""

  init(configuration: LIVAConfiguration) {
    _avatar = StateObject(wrappedValue: LIVAAvatar(configuration: configuration))
  }

  var body: some View {
    VStack(spacing: 12) {
      LIVAAvatarView(avatar: avatar)
        .avatarContentMode(.aspectFit)
        .frame(maxWidth: .infinity, maxHeight: .infinity)
        .overlay(alignment: .topLeading) { StateBadge(state: avatar.state) }

      if let error = avatar.lastError {
        Label(String(describing: error), systemImage: "exclamationmark.triangle")
          .font(.footnote)
          .foregroundStyle(.red)
          .frame(maxWidth: .infinity, alignment: .leading)
      }

      HStack {
        TextField("Say something", text: $text)
          .textFieldStyle(.roundedBorder)
          .submitLabel(.send)
          .onSubmit(send)
        if avatar.speaking != nil {
          Button("Stop", systemImage: "stop.fill") { avatar.interrupt() }
        } else {
          Button("Send", systemImage: "paperplane.fill", action: send)
            .disabled(!canSend)
        }
      }
      .labelStyle(.iconOnly)
    }
    .padding()
  }

  private var canSend: Bool {
    !text.trimmingCharacters(in: .whitespaces).isEmpty
      && (avatar.state == .ready || avatar.state == .speaking)
  }

  private func send() {
    guard canSend else { return }
    let message = text
    text = ""
    Task { await avatar.send(message) }
  }
}

/// The connection's state, in a corner of the avatar.
struct StateBadge: View {
  let state: LIVAState

  var body: some View {
    Text(label)
      .font(.caption.bold())
      .padding(.horizontal, 8)
      .padding(.vertical, 4)
      .background(.thinMaterial, in: Capsule())
      .padding(8)
  }

  private var label: String {
    switch state {
    case .idle: "Offline"
    case .connecting: "Connecting…"
    case .connected: "Loading…"
    case .ready: "Ready"
    case .speaking: "Speaking"
    case .error: "Disconnected"
    }
  }
}
