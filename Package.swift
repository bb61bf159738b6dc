// swift-tools-version: 6.1
import PackageDescription

// Module map: see docs/Architecture.md (and ../shared/architecture.md).
// Arrows point down: SocketIO and LIVAProtocol know nothing of the engine, the engine
// knows nothing of I/O, and nothing in the core imports a platform shell.
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
  name: "LIVA",
  platforms: [.iOS(.v16), .macOS(.v13)],
  products: [
    .library(name: "LIVAProtocol", targets: ["LIVAProtocol"]),
    .library(name: "LIVAEngine", targets: ["LIVAEngine"]),
    .library(name: "LIVAMedia", targets: ["LIVAMedia"]),
    .library(name: "SocketIO", targets: ["SocketIO"]),
  ],
  targets: [
    .target(name: "LIVAProtocol", swiftSettings: strict),
    .target(name: "LIVAEngine", dependencies: ["LIVAProtocol"], swiftSettings: strict),
    // libpng through pkg-config (Linux only; Apple platforms decode with ImageIO).
    .systemLibrary(
      name: "CLibPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
    // libjpeg behind a C shim that keeps its setjmp/longjmp error handling out of Swift.
    .target(
      name: "CLIVAJPEG",
      linkerSettings: [.linkedLibrary("jpeg", .when(platforms: [.linux]))]),
    .target(
      name: "LIVAMedia",
      dependencies: [
        "LIVAProtocol", .target(name: "CLibPNG", condition: .when(platforms: [.linux])),
        .target(name: "CLIVAJPEG", condition: .when(platforms: [.linux])),
      ],
      swiftSettings: strict),
    .target(name: "SocketIO", swiftSettings: strict),
    .testTarget(name: "SocketIOTests", dependencies: ["SocketIO"], swiftSettings: strict),
    .testTarget(
      name: "LIVAProtocolTests", dependencies: ["LIVAProtocol"], swiftSettings: strict),
    .testTarget(
      name: "LIVAMediaTests", dependencies: ["LIVAMedia", "LIVAProtocol"],
      exclude: ["Fixtures"], swiftSettings: strict),
    .testTarget(
      name: "LIVAEngineTests", dependencies: ["LIVAEngine", "LIVAProtocol"],
      swiftSettings: strict),
  ],
  swiftLanguageModes: [.v6]
)
