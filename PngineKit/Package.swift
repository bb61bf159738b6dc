// swift-tools-version: 6.1
import PackageDescription

// PngineKit is its own package: WasmKit 0.4.2 declares iOS 18 / macOS 15, the LIVA package
// beside it iOS 16 / macOS 13, and a package cannot depend on a product that needs a higher
// minimum than its own (README.md).
let package = Package(
  name: "PngineKit",
  platforms: [.iOS(.v18), .macOS(.v15)],
  products: [
    .library(name: "PngineKit", targets: ["PngineKit"]),
    .executable(name: "pngine", targets: ["pngine"]),
  ],
  dependencies: [
    .package(url: "https://github.com/swiftwasm/WasmKit", exact: "0.4.2"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
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
    .testTarget(
      name: "PngineKitTests",
      dependencies: [
        "PngineKit",
        "CZlib",
        .product(name: "WAT", package: "WasmKit"),
        .product(name: "Logging", package: "swift-log"),
      ],
      exclude: ["Fixtures"]
    ),
  ]
)
