// swift-tools-version: 6.1
import Foundation
import PackageDescription

// What develops and demonstrates the SDKs but never goes into an app: the reference backend
// (SocketIOServer, LIVAServer), the recording of sessions, the `liva` and `pngine` tools, and the
// tests that need them (end to end against the reference backend and python-socketio, the
// tools' own). A package of its own so that an app adding the repository's root package
// resolves neither Hummingbird nor swift-argument-parser. It depends on the root by path.
// The tools and their tests are the SDK's own project: they compile in the root package's
// `package` access domain (the wire names, the lock and the change feed the backend and the
// end-to-end tests share with the SDK are `package`, not public API). SwiftPM names a package
// by its folder, so the root's name is read from where this manifest is.
let rootPackageName = String(
  URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
let strict: [SwiftSetting] = [
  .enableUpcomingFeature("ExistentialAny"), .unsafeFlags(["-package-name", rootPackageName]),
]

// `pngine render` exists only when the root package offers its WebGPU backend (the same test
// as the root manifest's: Apple always, elsewhere a `wgpu-native.pc`, never PNGINE_NO_WEBGPU=1).
let webGPU: Bool = {
  let environment = ProcessInfo.processInfo.environment
  if environment["PNGINE_NO_WEBGPU"] == "1" { return false }
  #if os(macOS)
    return true
  #else
    return
      ((environment["PKG_CONFIG_PATH"] ?? "").split(separator: ":").map(String.init)
      + ["/usr/local/lib/pkgconfig", "/usr/local/share/pkgconfig", "/usr/lib/pkgconfig"]
      + ["/usr/share/pkgconfig", "/usr/lib/x86_64-linux-gnu/pkgconfig"]
      + ["/usr/lib/aarch64-linux-gnu/pkgconfig"])
      .contains { FileManager.default.fileExists(atPath: $0 + "/wgpu-native.pc") }
  #endif
}()

let package = Package(
  name: "LIVATools",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "liva", targets: ["liva"]),
    .executable(name: "pngine", targets: ["pngine"]),
    .library(name: "LIVAServer", targets: ["LIVAServer"]),
    .library(name: "SocketIOServer", targets: ["SocketIOServer"]),
    .library(name: "LIVARecording", targets: ["LIVARecording"]),
    .library(name: "SocketIOBench", targets: ["SocketIOBench"]),
    .library(name: "LIVABench", targets: ["LIVABench"]),
  ],
  dependencies: [
    .package(name: "LIVA", path: ".."),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
    .package(url: "https://github.com/swiftwasm/WasmKit", exact: "0.4.2"),
  ],
  targets: [
    // The server side of Socket.IO over Hummingbird's WebSocket upgrade.
    .target(
      name: "SocketIOServer",
      dependencies: [
        .product(name: "Locking", package: "LIVA"),
        .product(name: "SocketIO", package: "LIVA"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOWebSocket", package: "swift-nio"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HummingbirdCore", package: "hummingbird"),
        .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
      ],
      packageAccess: false, swiftSettings: strict),
    // The reference backend: avatar packs, the sample avatar, utterances, speech planning.
    .target(
      name: "LIVAServer",
      dependencies: [
        .product(name: "Locking", package: "LIVA"),
        "SocketIOServer",
        .product(name: "LIVAProtocol", package: "LIVA"),
        .product(name: "LIVAMedia", package: "LIVA"),
        .product(name: "SocketIO", package: "LIVA"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "Logging", package: "swift-log"),
      ],
      resources: [.copy("Resources/utterances"), .copy("Resources/make_utterance.py")],
      packageAccess: false, swiftSettings: strict),
    // What the tool records and reports (the recording surface, the session report and the
    // measures it is judged by).
    .target(
      name: "LIVARecording",
      dependencies: [
        .product(name: "Locking", package: "LIVA"),
        .product(name: "LIVA", package: "LIVA"), .product(name: "LIVAEngine", package: "LIVA"),
        .product(name: "LIVAMedia", package: "LIVA"),
        .product(name: "LIVAProtocol", package: "LIVA"),
      ],
      packageAccess: false, swiftSettings: strict),
    // The Socket.IO client's receive throughput against python-socketio's, fed by the same
    // server: for `liva bench-socketio` (CI's budget) and Benchmarks/'s SocketIOBenchmarks.
    .target(
      name: "SocketIOBench",
      dependencies: [
        .product(name: "Locking", package: "LIVA"),
        "SocketIOServer",
        .product(name: "SocketIO", package: "LIVA"),
        .product(name: "LIVAProtocol", package: "LIVA"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "Logging", package: "swift-log"),
      ],
      packageAccess: false, swiftSettings: strict),
    // The scenarios of Benchmarks/'s budgeted engine and media benchmarks, and their budgets:
    // for `liva bench-budgets` (CI's check) and Benchmarks/'s EngineBenchmarks and
    // MediaBenchmarks.
    .target(
      name: "LIVABench",
      dependencies: [
        .product(name: "LIVAEngine", package: "LIVA"),
        .product(name: "LIVAMedia", package: "LIVA"),
        .product(name: "LIVAProtocol", package: "LIVA"),
      ],
      packageAccess: false, swiftSettings: strict),
    // demo, serve, record, avatar generate, bench-session, bench-socketio, bench-budgets; with a
    // C shim that tunes glibc's allocator for its process (see `Liva.tuneAllocator`).
    .target(name: "CLIVAAllocator"),
    .executableTarget(
      name: "liva",
      dependencies: [
        .product(name: "Locking", package: "LIVA"),
        "CLIVAAllocator", "LIVABench", "LIVARecording", "LIVAServer", "SocketIOBench",
        // For its Heap measure (bench-session's trend of the heap in use).
        .product(name: "LIVATestSupport", package: "LIVA"),
        .product(name: "LIVA", package: "LIVA"), .product(name: "LIVAEngine", package: "LIVA"),
        .product(name: "LIVAMedia", package: "LIVA"),
        .product(name: "LIVAProtocol", package: "LIVA"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
      ],
      packageAccess: false, swiftSettings: strict),
    .executableTarget(
      name: "pngine",
      dependencies: [
        .product(name: "Locking", package: "LIVA"),
        .product(name: "PngineKit", package: "LIVA"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
      ]
        + (webGPU ? [.product(name: "PngineWebGPU", package: "LIVA")] : []),
      packageAccess: false, swiftSettings: strict),
    // The Socket.IO client and server against each other, python-socketio and a restart.
    .testTarget(
      name: "SocketIOIntegrationTests",
      dependencies: [
        .product(name: "Locking", package: "LIVA"),
        "SocketIOServer",
        .product(name: "SocketIO", package: "LIVA"),
        .product(name: "LIVAProtocol", package: "LIVA"),
        .product(name: "LIVATestSupport", package: "LIVA"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HummingbirdTLS", package: "hummingbird"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOEmbedded", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOWebSocket", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
      ],
      packageAccess: false, swiftSettings: strict),
    // The client end to end: the reference backend, python-socketio's, reconnects, downloads.
    .testTarget(
      name: "LIVAIntegrationTests",
      dependencies: [
        .product(name: "Locking", package: "LIVA"),
        "LIVARecording", "LIVAServer",
        .product(name: "LIVA", package: "LIVA"), .product(name: "LIVAEngine", package: "LIVA"),
        .product(name: "LIVAMedia", package: "LIVA"),
        .product(name: "LIVAPlatform", package: "LIVA"),
        .product(name: "LIVAProtocol", package: "LIVA"),
        .product(name: "LIVATestSupport", package: "LIVA"),
        .product(name: "SocketIO", package: "LIVA"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
      ],
      packageAccess: false, swiftSettings: strict),
    .testTarget(
      name: "LIVAServerTests",
      dependencies: [
        "LIVAServer", .product(name: "LIVAProtocol", package: "LIVA"),
        .product(name: "LIVAMedia", package: "LIVA"),
        .product(name: "LIVATestSupport", package: "LIVA"),
        .product(name: "Locking", package: "LIVA"),
      ],
      packageAccess: false, swiftSettings: strict),
    // The `liva` executable itself: run in child processes (serve's faults seen from a socket,
    // the files avatar generate writes, a recording, bench-session's check), and its options
    // parsed into what a recorded session is given.
    .testTarget(
      name: "LivaToolTests",
      dependencies: [
        .product(name: "Locking", package: "LIVA"),
        "liva", "LIVARecording", "LIVAServer",
        .product(name: "LIVA", package: "LIVA"), .product(name: "LIVAMedia", package: "LIVA"),
        .product(name: "LIVAProtocol", package: "LIVA"),
        .product(name: "LIVATestSupport", package: "LIVA"),
        .product(name: "SocketIO", package: "LIVA"),
      ],
      packageAccess: false, swiftSettings: strict),
    // The `pngine` executable itself (run, verify, render), and hostile PNGs rendered by it in
    // child processes (an abort there is what an app showing the PNG would suffer).
    .testTarget(
      name: "PngineToolTests",
      dependencies: [
        .product(name: "PngineKit", package: "LIVA"),
        .product(name: "LIVATestSupport", package: "LIVA"),
        .product(name: "WAT", package: "WasmKit"),
      ],
      // The fuzzer's kept finds, read from the source tree by path.
      exclude: ["FuzzFinds"],
      swiftSettings: webGPU ? [] : [.define("PNGINE_WEBGPU_LEFT_OUT")]),
  ],
  swiftLanguageModes: [.v6]
)
