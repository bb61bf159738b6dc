// swift-tools-version: 6.1
import PackageDescription

// Module map: see docs/Architecture.md.
// Arrows point down: SocketIO and LIVAProtocol know nothing of the engine, the engine
// knows nothing of I/O, and nothing in the core imports a platform shell.
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
  name: "LIVA",
  // tvOS and Mac Catalyst named too: `canImport(UIKit)` admits them, and the shells' display
  // pacing (`CAFrameRateRange`) needs 15 there.
  platforms: [.iOS(.v16), .macOS(.v13), .tvOS(.v16), .macCatalyst(.v16)],
  products: [
    .library(name: "JSONWire", targets: ["JSONWire"]),
    .library(name: "LIVAProtocol", targets: ["LIVAProtocol"]),
    .library(name: "LIVAEngine", targets: ["LIVAEngine"]),
    .library(name: "LIVAMedia", targets: ["LIVAMedia"]),
    .library(name: "SocketIO", targets: ["SocketIO"]),
    .library(name: "SocketIOServer", targets: ["SocketIOServer"]),
    .library(name: "LIVA", targets: ["LIVA"]),
    .library(name: "LIVAServer", targets: ["LIVAServer"]),
    .library(name: "LIVAPlatform", targets: ["LIVAPlatform"]),
    .library(name: "PlaybackLifecycle", targets: ["PlaybackLifecycle"]),
    .library(name: "LIVAKit", targets: ["LIVAKit"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
  ],
  targets: [
    // The one value type of the wire (JSON with binary), shared by SocketIO and LIVAProtocol.
    .target(name: "JSONWire", swiftSettings: strict),
    .target(name: "LIVAProtocol", dependencies: ["JSONWire"], swiftSettings: strict),
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
    // Engine.IO 4 / Socket.IO 5: the pure codec, and the client over NIO's WebSocket (TLS by
    // NIOSSL), its packets decoded on the event loop.
    .target(
      name: "SocketIO",
      dependencies: [
        "JSONWire",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOWebSocket", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
      ],
      swiftSettings: strict),
    // The server side over Hummingbird's WebSocket upgrade (reference backend and tests).
    .target(
      name: "SocketIOServer",
      dependencies: [
        "SocketIO",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOWebSocket", package: "swift-nio"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HummingbirdCore", package: "hummingbird"),
        .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "SocketIOTests",
      dependencies: [
        "SocketIO", "SocketIOServer", "LIVAProtocol",
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOEmbedded", package: "swift-nio"),
        .product(name: "NIOWebSocket", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "HummingbirdTLS", package: "hummingbird"),
        "LIVATestSupport",
      ],
      swiftSettings: strict),
    .testTarget(
      name: "LIVAProtocolTests", dependencies: ["LIVAProtocol", "LIVATestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "LIVAMediaTests", dependencies: ["LIVAMedia", "LIVAProtocol", "LIVATestSupport"],
      exclude: ["Fixtures"], swiftSettings: strict),
    .testTarget(
      name: "LIVAEngineTests", dependencies: ["LIVAEngine", "LIVAProtocol", "LIVATestSupport"],
      swiftSettings: strict),
    // What the test targets share (a seeded random generator); not a product.
    .target(name: "LIVATestSupport", path: "Tests/LIVATestSupport", swiftSettings: strict),
  ],
  swiftLanguageModes: [.v6]
)

// The client: the player pipeline (and, on top of it, the connection life cycle).
package.targets += [
  .target(
    name: "LIVA",
    dependencies: [
      "LIVAEngine", "LIVAMedia", "LIVAPlatform", "LIVAProtocol", "SocketIO",
      .product(name: "Logging", package: "swift-log"),
      .product(name: "NIOSSL", package: "swift-nio-ssl"),
    ],
    swiftSettings: strict),
  .testTarget(
    name: "LIVATests",
    dependencies: [
      "LIVA", "LIVAEngine", "LIVAMedia", "LIVAPlatform", "LIVAProtocol", "LIVARecording",
      "LIVAServer", "LIVATestSupport", "SocketIO",
      .product(name: "NIOSSL", package: "swift-nio-ssl"),
    ],
    swiftSettings: strict),
  // What the tool records and reports (the recording surface, the session report and the
  // measures it is judged by), outside the SDK: no app links it.
  .target(
    name: "LIVARecording", dependencies: ["LIVA", "LIVAEngine", "LIVAMedia", "LIVAProtocol"],
    swiftSettings: strict),
]

// The reference backend: avatar packs, the sample avatar, utterances, speech planning.
package.targets += [
  .target(
    name: "LIVAServer",
    dependencies: [
      "LIVAProtocol", "LIVAMedia", "SocketIO", "SocketIOServer",
      .product(name: "Hummingbird", package: "hummingbird"),
      .product(name: "Logging", package: "swift-log"),
      .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
    ],
    resources: [.copy("Resources/utterances"), .copy("Resources/make_utterance.py")],
    swiftSettings: strict),
  .testTarget(
    name: "LIVAServerTests", dependencies: ["LIVAServer", "LIVAProtocol", "LIVAMedia"],
    swiftSettings: strict),
]

// The decisions of the Apple shells, platform-neutral and tested here: the audio device's clock
// on the display's, frame pacing, the lifecycle policy, the pixel hand-off.
package.targets += [
  .target(
    name: "LIVAPlatform",
    dependencies: ["LIVAEngine", "LIVAMedia", "LIVAProtocol", "PlaybackLifecycle"],
    swiftSettings: strict),
  .testTarget(
    name: "LIVAPlatformTests",
    dependencies: ["LIVAPlatform", "LIVAEngine", "LIVAMedia", "LIVAProtocol"],
    swiftSettings: strict),
  // The lifecycle policy and frame pacing both products use: no dependency at all, so that
  // PngineKit (a package of its own, beside this one) can use it without this package's graph.
  .target(name: "PlaybackLifecycle", swiftSettings: strict),
  .testTarget(
    name: "PlaybackLifecycleTests", dependencies: ["PlaybackLifecycle"], swiftSettings: strict),
  // Apple only (every file is compiled out elsewhere): UIKit and SwiftUI views, CADisplayLink,
  // AVAudioEngine, the audio session and the notifications, over LIVAPlatform's decisions.
  .target(
    name: "LIVAKit",
    dependencies: ["LIVA", "LIVAEngine", "LIVAMedia", "LIVAPlatform", "LIVAProtocol"],
    swiftSettings: strict),
]

// The command-line tool: demo, serve, record, avatar generate, bench-session; with a C shim
// that tunes glibc's allocator for its process (see `Liva.tuneAllocator`).
package.products += [.executable(name: "liva", targets: ["liva"])]
package.targets += [
  .target(name: "CLIVAAllocator"),
  .executableTarget(
    name: "liva",
    dependencies: [
      "CLIVAAllocator", "LIVA", "LIVAEngine", "LIVAMedia", "LIVAProtocol", "LIVARecording",
      "LIVAServer",
      .product(name: "ArgumentParser", package: "swift-argument-parser"),
      .product(name: "Logging", package: "swift-log"),
    ],
    swiftSettings: strict),
]
