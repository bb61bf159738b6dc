// swift-tools-version: 6.1
// An iOS app in a package: open this folder in Xcode (or Swift Playgrounds) and run it. It needs
// wgpu-native built for iOS (see PngineKit/README.md). In your own app, depend on the
// repository by URL instead of the path below.
import PackageDescription

#if canImport(AppleProductTypes)
  import AppleProductTypes
#endif

// The app itself, where Xcode or Swift Playgrounds build it (elsewhere the sources only).
var products: [Product] = []
#if canImport(AppleProductTypes)
  products.append(
    .iOSApplication(
      name: "PNGine Gallery",
      targets: ["PngineGallery"],
      bundleIdentifier: "com.example.pngine-gallery",
      displayVersion: "1.0",
      bundleVersion: "1",
      appIcon: .placeholder(icon: .sparkle),
      accentColor: .presetColor(.orange),
      supportedDeviceFamilies: [.pad, .phone],
      supportedInterfaceOrientations: [.portrait, .landscapeLeft, .landscapeRight]
    ))
#endif

let package = Package(
  name: "PngineGallery",
  platforms: [.iOS(.v18)],
  products: products,
  dependencies: [.package(name: "LIVA", path: "../..")],
  targets: [
    .executableTarget(
      name: "PngineGallery",
      dependencies: [
        .product(name: "PngineKit", package: "LIVA"),
        .product(name: "PngineKitUI", package: "LIVA"),
      ],
      path: "Sources",
      resources: [.copy("Animations")])
  ],
  swiftLanguageModes: [.v6]
)
