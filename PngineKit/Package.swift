// swift-tools-version: 6.1
import Foundation
import PackageDescription

// PngineKit is its own package: WasmKit 0.4.2 declares iOS 18 / macOS 15, the LIVA package
// beside it iOS 16 / macOS 13, and a package cannot depend on a product that needs a higher
// minimum than its own (README.md).
// The WebGPU backend (targets CWGPU, CPngineWGPU, PngineWebGPU; product PngineWebGPU) needs
// wgpu-native through pkg-config (`wgpu-native.pc`, installed by scripts/setup-wgpu.sh). It is
// left out when PNGINE_NO_WEBGPU=1 or when no `wgpu-native.pc` is in PKG_CONFIG_PATH or the
// usual pkg-config folders, so the runtime and the recording backend build and test without it.
let webGPU: Bool = {
  let environment = ProcessInfo.processInfo.environment
  if environment["PNGINE_NO_WEBGPU"] == "1" { return false }
  let folders =
    (environment["PKG_CONFIG_PATH"] ?? "").split(separator: ":").map(String.init) + [
      "/usr/local/lib/pkgconfig", "/usr/local/share/pkgconfig", "/usr/lib/pkgconfig",
      "/usr/share/pkgconfig", "/usr/lib/x86_64-linux-gnu/pkgconfig",
      "/usr/lib/aarch64-linux-gnu/pkgconfig", "/opt/homebrew/lib/pkgconfig",
    ]
  return folders.contains { FileManager.default.fileExists(atPath: $0 + "/wgpu-native.pc") }
}()

let package = Package(
  name: "PngineKit",
  // tvOS and Mac Catalyst named too: `canImport(UIKit)` admits them, and the view's display
  // pacing (`CAFrameRateRange`) needs 15 there.
  platforms: [.iOS(.v18), .macOS(.v15), .tvOS(.v18), .macCatalyst(.v18)],
  products: [
    .library(name: "PngineKit", targets: ["PngineKit"]),
    .executable(name: "pngine", targets: ["pngine"]),
  ],
  dependencies: [
    .package(url: "https://github.com/swiftwasm/WasmKit", exact: "0.4.2"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    // The repository's root package, for its dependency-free PlaybackLifecycle product (the
    // lifecycle policy and frame pacing LIVA uses too). Only that target is built.
    .package(name: "LIVA", path: ".."),
  ],
  targets: [
    .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
    .target(
      name: "PngineKit",
      dependencies: [
        "CZlib",
        .product(name: "WasmKit", package: "WasmKit"),
        .product(name: "WasmParser", package: "WasmKit"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "PlaybackLifecycle", package: "LIVA"),
      ]
    ),
    .executableTarget(
      name: "pngine",
      dependencies: [
        "PngineKit",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    // What the test targets share (the process lock of the RSS and GPU tests); not a product.
    .target(name: "PngineTestSupport", path: "Tests/PngineTestSupport"),
    .testTarget(
      name: "PngineKitTests",
      dependencies: [
        "PngineKit",
        "PngineTestSupport",
        "CZlib",
        .product(name: "WAT", package: "WasmKit"),
        .product(name: "Logging", package: "swift-log"),
      ],
      exclude: ["Fixtures"],
      // Tells RequiredToolsTests that PngineWebGPUTests is not in the build.
      swiftSettings: webGPU ? [] : [.define("PNGINE_WEBGPU_LEFT_OUT")]
    ),
  ]
)

if webGPU {
  // `pngine render` exists only with the backend (`#if canImport(PngineWebGPU)`).
  package.targets.first { $0.name == "pngine" }?.dependencies.append("PngineWebGPU")
  package.products.append(.library(name: "PngineWebGPU", targets: ["PngineWebGPU"]))
  package.products.append(.library(name: "PngineKitUI", targets: ["PngineKitUI"]))
  package.targets += [
    .systemLibrary(name: "CWGPU", path: "Sources/CWGPU", pkgConfig: "wgpu-native"),
    .target(name: "CPngineWGPU", dependencies: ["CWGPU"]),
    .target(
      name: "PngineWebGPU",
      dependencies: [
        "PngineKit", "CWGPU", "CPngineWGPU", .product(name: "Logging", package: "swift-log"),
      ]
    ),
    // Apple only (its files are compiled out elsewhere): PngineView (SwiftUI), PngineUIView.
    .target(name: "PngineKitUI", dependencies: ["PngineKit", "PngineWebGPU"]),
    .testTarget(
      name: "PngineWebGPUTests",
      dependencies: [
        "PngineWebGPU", "PngineKit", "PngineTestSupport",
        .product(name: "WAT", package: "WasmKit"),
      ],
      exclude: ["References"]
    ),
  ]
}
