import PngineKit
import PngineKitUI
import SwiftUI

/// PNGine animations in a grid, every one drawn with the process's one GPU device; tap one to
/// pause or resume it.
@main
struct PngineGalleryApp: App {
  var body: some Scene {
    WindowGroup { GalleryView() }
  }
}

struct GalleryView: View {
  /// The PNGs in the app's `Animations` folder.
  private let files: [URL] =
    (Bundle.module.urls(forResourcesWithExtension: "png", subdirectory: "Animations") ?? [])
    .sorted { $0.lastPathComponent < $1.lastPathComponent }

  var body: some View {
    NavigationStack {
      ScrollView {
        LazyVGrid(columns: [GridItem(.adaptive(minimum: 160), spacing: 12)], spacing: 12) {
          ForEach(files, id: \.self) { file in
            AnimationTile(file: file)
          }
        }
        .padding()
      }
      .navigationTitle("PNGine")
    }
  }
}

/// One animation: loaded from its file, paused and resumed by a tap, its error shown.
struct AnimationTile: View {
  let file: URL
  @State private var paused = false
  @State private var failure: String?

  var body: some View {
    PngineView {
      try await PngineLoader.fetch(.file(file))
    } placeholder: {
      ProgressView()
    }
    .playbackMode(paused ? .paused : .playing)
    .onError { failure = $0.localizedDescription }
    .aspectRatio(1, contentMode: .fit)
    .clipShape(RoundedRectangle(cornerRadius: 12))
    .overlay(alignment: .bottomLeading) {
      Label(
        failure ?? file.deletingPathExtension().lastPathComponent,
        systemImage: failure != nil
          ? "exclamationmark.triangle" : paused ? "pause.fill" : "play.fill"
      )
      .font(.caption)
      .padding(6)
      .background(.thinMaterial, in: Capsule())
      .padding(6)
    }
    .contentShape(Rectangle())
    .onTapGesture { paused.toggle() }
    .accessibilityAddTraits(.isButton)
    .accessibilityHint(paused ? "Resumes the animation" : "Pauses the animation")
  }
}
