// An app's first use of both SDKs, as scripts/check-ios and scripts/check-install build it:
// every product imports, and a type of each is used.
import Foundation
import LIVA
import LIVAKit
import PngineKit

#if canImport(PngineKitUI)
  import PngineKitUI
#endif

let configuration = LIVAConfiguration(
  serverURL: "https://example.invalid", userID: "install-check", agentID: "sample",
  cacheRoot: URL(fileURLWithPath: "/tmp/liva-install-check"))
print("LIVA", configuration.agentID, "PngineKit", PngineError.Code.self)
