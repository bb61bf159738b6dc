// swift-tools-version: 6.1
// Benchmarks of the LIVA package, kept in their own package so the SDK does not depend on
// the benchmark tooling. Run from this directory: `swift package benchmark`.
import PackageDescription

let package = Package(
  name: "Benchmarks",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(name: "LIVA", path: "../"),
    .package(name: "LIVATools", path: "../Tools"),
    .package(
      url: "https://github.com/ordo-one/benchmark", exact: "1.38.1",
      traits: ["MallocInterposer"]),
  ],
  targets: []
)

// LIVAMedia: codecs, compositor, overlay store.
package.targets += [
  .executableTarget(
    name: "MediaBenchmarks",
    dependencies: [
      .product(name: "Benchmark", package: "benchmark"),
      .product(name: "LIVAMedia", package: "LIVA"),
      .product(name: "LIVAProtocol", package: "LIVA"),
    ],
    path: "Benchmarks/MediaBenchmarks",
    plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
  )
]

// LIVAEngine: the per-tick cost of the playback state machine.
package.targets += [
  .executableTarget(
    name: "EngineBenchmarks",
    dependencies: [
      .product(name: "Benchmark", package: "benchmark"),
      .product(name: "LIVAEngine", package: "LIVA"),
      .product(name: "LIVAProtocol", package: "LIVA"),
    ],
    path: "Benchmarks/EngineBenchmarks",
    plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
  )
]

// SocketIO: receive throughput against python-socketio's client.
package.dependencies += [
  .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
  .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
]
package.targets += [
  .executableTarget(
    name: "SocketIOBenchmarks",
    dependencies: [
      .product(name: "Benchmark", package: "benchmark"),
      .product(name: "LIVAProtocol", package: "LIVA"),
      .product(name: "SocketIO", package: "LIVA"),
      .product(name: "SocketIOServer", package: "LIVATools"),
      .product(name: "Hummingbird", package: "hummingbird"),
      .product(name: "Logging", package: "swift-log"),
    ],
    path: "Benchmarks/SocketIOBenchmarks",
    plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
  )
]
