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

// LIVAMedia: codecs, compositor, overlay store. The budgeted scenarios are Tools' LIVABench,
// which `liva bench-budgets` checks for CI.
package.targets += [
  .executableTarget(
    name: "MediaBenchmarks",
    dependencies: [
      .product(name: "Benchmark", package: "benchmark"),
      .product(name: "LIVABench", package: "LIVATools"),
      .product(name: "LIVAMedia", package: "LIVA"),
      .product(name: "LIVAProtocol", package: "LIVA"),
    ],
    path: "Benchmarks/MediaBenchmarks",
    plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
  )
]

// LIVAEngine: the per-tick cost of the playback state machine (the scenario is Tools'
// LIVABench, which `liva bench-budgets` checks for CI).
package.targets += [
  .executableTarget(
    name: "EngineBenchmarks",
    dependencies: [
      .product(name: "Benchmark", package: "benchmark"),
      .product(name: "LIVABench", package: "LIVATools"),
    ],
    path: "Benchmarks/EngineBenchmarks",
    plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
  )
]

// SocketIO: receive throughput against python-socketio's client (the measuring code is Tools'
// SocketIOBench, which `liva bench-socketio` runs for CI).
package.targets += [
  .executableTarget(
    name: "SocketIOBenchmarks",
    dependencies: [
      .product(name: "Benchmark", package: "benchmark"),
      .product(name: "SocketIOBench", package: "LIVATools"),
    ],
    path: "Benchmarks/SocketIOBenchmarks",
    plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
  )
]
