// swift-tools-version: 6.1
import Foundation
import PackageDescription

// The SDKs an app adds, and nothing else: LIVA (with LIVAKit, its Apple shell) and PngineKit
// (with PngineKitUI). The reference backend, the `liva` and `pngine` tools and the tests that
// need them live in Tools/, a package of its own that depends on this one by path, so an app
// resolves only swift-nio, swift-nio-ssl, swift-log, WasmKit and their dependencies.
// Module map: see docs/Architecture.md. Arrows point down: SocketIO and LIVAProtocol know
// nothing of the engine, the engine knows nothing of I/O, and nothing in the core imports a
// platform shell.
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

// PngineKit's WebGPU backend (CWGPU, CPngineWGPU, PngineWebGPU and PngineKitUI) needs
// wgpu-native's C API. On Apple platforms it is always offered: the app provides wgpu-native
// (an .xcframework, see PngineKit/README.md). Elsewhere it is offered when pkg-config can find
// `wgpu-native.pc` (scripts/setup-wgpu.sh installs one), so the runtime and the recording
// backend build and test without it; PNGINE_NO_WEBGPU=1 leaves it out everywhere.
let webGPU: Bool = {
  let environment = ProcessInfo.processInfo.environment
  if environment["PNGINE_NO_WEBGPU"] == "1" { return false }
  #if os(macOS)
    return true
  #else
    let folders =
      (environment["PKG_CONFIG_PATH"] ?? "").split(separator: ":").map(String.init) + [
        "/usr/local/lib/pkgconfig", "/usr/local/share/pkgconfig", "/usr/lib/pkgconfig",
        "/usr/share/pkgconfig", "/usr/lib/x86_64-linux-gnu/pkgconfig",
        "/usr/lib/aarch64-linux-gnu/pkgconfig",
      ]
    return folders.contains { FileManager.default.fileExists(atPath: $0 + "/wgpu-native.pc") }
  #endif
}()

// The H.264 playback form of base frames (LIVAMedia's VideoFrameCodec) on Linux, through a small
// static FFmpeg (the H.264 decoder, the x264 encoder wrapper, libswscale) that
// scripts/setup-video.sh builds and describes in `liva-video.pc`: offered when pkg-config can
// find that file, so builds without it decode base frames from their images as before.
// LIVA_NO_VIDEO=1 leaves it out. (A distribution's shared libavcodec is not used: Debian's loads
// ~130 libraries, ~18 MiB resident, over the SDK's memory budget.)
let videoForm: Bool = {
  let environment = ProcessInfo.processInfo.environment
  if environment["LIVA_NO_VIDEO"] == "1" { return false }
  #if os(Linux)
    let folders =
      (environment["PKG_CONFIG_PATH"] ?? "").split(separator: ":").map(String.init) + [
        "/usr/local/lib/pkgconfig", "/usr/lib/pkgconfig", "/usr/lib/x86_64-linux-gnu/pkgconfig",
        "/usr/lib/aarch64-linux-gnu/pkgconfig",
      ]
    return folders.contains { FileManager.default.fileExists(atPath: "\($0)/liva-video.pc") }
  #else
    return false
  #endif
}()

let package = Package(
  name: "LIVA",
  // One minimum for both SDKs: WasmKit (PngineKit's executor runtime) declares iOS 18 /
  // macOS 15, and SwiftPM has one platform minimum per package (README.md, "Installing").
  // tvOS and Mac Catalyst are named too: `canImport(UIKit)` admits them.
  platforms: [.iOS(.v18), .macOS(.v15), .tvOS(.v18), .macCatalyst(.v18)],
  products: [
    .library(name: "LIVA", targets: ["LIVA"]),
    .library(name: "LIVAKit", targets: ["LIVAKit"]),
    .library(name: "PngineKit", targets: ["PngineKit"]),
    .library(name: "JSONWire", targets: ["JSONWire"]),
    .library(name: "LIVAProtocol", targets: ["LIVAProtocol"]),
    .library(name: "LIVAEngine", targets: ["LIVAEngine"]),
    .library(name: "LIVAMedia", targets: ["LIVAMedia"]),
    .library(name: "SocketIO", targets: ["SocketIO"]),
    .library(name: "LIVAPlatform", targets: ["LIVAPlatform"]),
    .library(name: "PlaybackLifecycle", targets: ["PlaybackLifecycle"]),
    // Helpers of this repository's test suites (a seeded generator, run seeds, a child
    // process, required tools, the wait on a change feed, resident memory), shared with
    // Tools/'s suites; not for apps.
    .library(name: "LIVATestSupport", targets: ["LIVATestSupport"]),
    // The package's one lock type (`package` access), shared with Tools/; not for apps.
    .library(name: "Locking", targets: ["Locking"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    .package(url: "https://github.com/swiftwasm/WasmKit", exact: "0.4.2"),
  ],
  targets: [
    // The one value type of the wire (JSON with binary), shared by SocketIO and LIVAProtocol.
    .target(name: "JSONWire", swiftSettings: strict),
    // The one lock type of the package's modules (not a product).
    .target(name: "Locking", swiftSettings: strict),
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
        "LIVAProtocol", "Locking",
        .target(name: "CLibPNG", condition: .when(platforms: [.linux])),
        .target(name: "CLIVAJPEG", condition: .when(platforms: [.linux])),
      ] + (videoForm ? [.target(name: "CLIVAVideo", condition: .when(platforms: [.linux]))] : []),
      swiftSettings: strict),
    // Engine.IO 4 / Socket.IO 5: the pure codec, and the client over NIO's WebSocket (TLS by
    // NIOSSL), its packets decoded on the event loop.
    .target(
      name: "SocketIO",
      dependencies: [
        "JSONWire", "Locking",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOWebSocket", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "SocketIOTests",
      dependencies: [
        "SocketIO", "LIVAProtocol", "LIVATestSupport",
        .product(name: "NIOCore", package: "swift-nio"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "LIVAProtocolTests", dependencies: ["LIVAProtocol", "LIVATestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "LIVAMediaTests",
      dependencies: ["LIVAMedia", "LIVAProtocol", "LIVATestSupport", "Locking"],
      exclude: ["Fixtures"], swiftSettings: strict),
    .testTarget(
      name: "LIVAEngineTests", dependencies: ["LIVAEngine", "LIVAProtocol", "LIVATestSupport"],
      swiftSettings: strict),
    .target(
      name: "LIVATestSupport", dependencies: ["CLIVAHeap", "LIVAMedia", "Locking"],
      path: "Tests/LIVATestSupport",
      swiftSettings: strict),
    .target(name: "CLIVAHeap", path: "Tests/CLIVAHeap"),
  ],
  swiftLanguageModes: [.v6]
)

// The client: the player pipeline (and, on top of it, the connection life cycle).
package.targets += [
  .target(
    name: "LIVA",
    dependencies: [
      "LIVAEngine", "LIVAMedia", "LIVAPlatform", "LIVAProtocol", "Locking", "SocketIO",
      .product(name: "Logging", package: "swift-log"),
      .product(name: "NIOSSL", package: "swift-nio-ssl"),
    ],
    swiftSettings: strict),
  .testTarget(
    name: "LIVATests",
    dependencies: [
      "LIVA", "LIVAEngine", "LIVAMedia", "LIVAPlatform", "LIVAProtocol", "LIVATestSupport",
      "Locking", "SocketIO",
    ],
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
  // The lifecycle policy and frame pacing both products use (no dependency at all).
  .target(name: "PlaybackLifecycle", swiftSettings: strict),
  .testTarget(
    name: "PlaybackLifecycleTests", dependencies: ["PlaybackLifecycle"], swiftSettings: strict),
  // Apple only (every file is compiled out elsewhere): UIKit and SwiftUI views, CADisplayLink,
  // AVAudioEngine, the audio session and the notifications, over LIVAPlatform's decisions.
  .target(
    name: "LIVAKit",
    dependencies: ["LIVA", "LIVAEngine", "LIVAMedia", "LIVAPlatform", "LIVAProtocol", "Locking"],
    swiftSettings: strict),
]

// PngineKit: the PNGine host (format, executor on WasmKit, commands, backends, player), its
// sources in PngineKit/ (see PngineKit/README.md).
package.targets += [
  .systemLibrary(name: "CZlib", path: "PngineKit/Sources/CZlib"),
  .target(
    name: "PngineKit",
    dependencies: [
      "CZlib", "Locking", "PlaybackLifecycle",
      .product(name: "WasmKit", package: "WasmKit"),
      .product(name: "WasmParser", package: "WasmKit"),
      .product(name: "Logging", package: "swift-log"),
    ],
    path: "PngineKit/Sources/PngineKit"),
  // What PngineKit's test targets share (the process lock of the RSS and GPU tests).
  .target(
    name: "PngineTestSupport",
    path: "PngineKit/Tests/PngineTestSupport"),
  .testTarget(
    name: "PngineKitTests",
    dependencies: [
      "PngineKit", "PngineTestSupport", "LIVATestSupport", "CZlib", "Locking",
      .product(name: "WAT", package: "WasmKit"),
      .product(name: "Logging", package: "swift-log"),
    ],
    path: "PngineKit/Tests/PngineKitTests",
    exclude: ["Fixtures"],
    // Tells RequiredToolsTests that PngineWebGPUTests is not in the build.
    swiftSettings: webGPU ? [] : [.define("PNGINE_WEBGPU_LEFT_OUT")]
  ),
]

if webGPU {
  package.products += [
    .library(name: "PngineWebGPU", targets: ["PngineWebGPU"]),
    .library(name: "PngineKitUI", targets: ["PngineKitUI"]),
  ]
  package.targets += [
    .systemLibrary(name: "CWGPU", path: "PngineKit/Sources/CWGPU", pkgConfig: "wgpu-native"),
    .target(name: "CPngineWGPU", dependencies: ["CWGPU"], path: "PngineKit/Sources/CPngineWGPU"),
    .target(
      name: "PngineWebGPU",
      dependencies: [
        "PngineKit", "CWGPU", "CPngineWGPU", "Locking",
        .product(name: "Logging", package: "swift-log"),
      ],
      path: "PngineKit/Sources/PngineWebGPU"),
    // Apple only (its files are compiled out elsewhere): PngineView (SwiftUI), PngineUIView.
    .target(
      name: "PngineKitUI", dependencies: ["PngineKit", "PngineWebGPU", "Locking"],
      path: "PngineKit/Sources/PngineKitUI"),
    .testTarget(
      name: "PngineWebGPUTests",
      dependencies: [
        "PngineWebGPU", "PngineKit", "PngineTestSupport", "LIVATestSupport", "Locking",
        .product(name: "WAT", package: "WasmKit"),
      ],
      path: "PngineKit/Tests/PngineWebGPUTests",
      exclude: ["References"]
    ),
  ]
}

if videoForm {
  package.targets += [
    .systemLibrary(name: "CLIVAFFmpeg", pkgConfig: "liva-video"),
    // libavcodec and libswscale behind a C shim (their error macros and buffers stay in C).
    .target(name: "CLIVAVideo", dependencies: ["CLIVAFFmpeg"]),
  ]
}
