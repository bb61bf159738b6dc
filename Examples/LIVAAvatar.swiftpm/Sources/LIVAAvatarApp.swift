import LIVAKit
import SwiftUI

/// A talking avatar with a text field to talk to it. Point `backend` at your LIVA backend
/// (`swift run --package-path Tools liva serve` runs the reference one on your Mac).
@main
struct LIVAAvatarApp: App {
  var body: some Scene {
    WindowGroup {
      ContentView(
        configuration: LIVAConfiguration(
          serverURL: "http://localhost:5000", userID: "example-user", agentID: "sample",
          cacheRoot: URL.cachesDirectory.appending(path: "liva")))
    }
  }
}
