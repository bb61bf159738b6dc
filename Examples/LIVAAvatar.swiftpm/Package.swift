// swift-tools-version: 6.1
// An iOS app in a package: open this folder in Xcode (or Swift Playgrounds) and run it. In your
// own app, depend on the repository by URL instead of the path below.
import PackageDescription

#if canImport(AppleProductTypes)
  import AppleProductTypes
#endif

// The app itself, where Xcode or Swift Playgrounds build it (elsewhere the sources only).
var products: [Product] = []
#if canImport(AppleProductTypes)
  products.append(
    .iOSApplication(
      name: "LIVA Avatar",
      targets: ["LIVAAvatar"],
      bundleIdentifier: "com.example.liva-avatar",
      displayVersion: "1.0",
      bundleVersion: "1",
      appIcon: .placeholder(icon: .chatMessage),
      accentColor: .presetColor(.indigo),
      supportedDeviceFamilies: [.pad, .phone],
      supportedInterfaceOrientations: [.portrait, .landscapeLeft, .landscapeRight],
      capabilities: [.outgoingNetworkConnections()]
    ))
#endif

let package = Package(
  name: "LIVAAvatar",
  platforms: [.iOS(.v18)],
  products: products,
  dependencies: [.package(name: "LIVA", path: "../..")],
  targets: [
    .executableTarget(
      name: "LIVAAvatar",
      dependencies: [.product(name: "LIVAKit", package: "LIVA")],
      path: "Sources")
  ],
  swiftLanguageModes: [.v6]
)
