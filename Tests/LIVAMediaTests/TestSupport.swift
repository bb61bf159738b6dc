import Foundation
import LIVAMedia
import Locking

/// Helpers shared by the media tests.
enum TestSupport {
  /// The committed fixtures next to this file.
  static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

  static func fixture(_ name: String) throws -> Data {
    try Data(contentsOf: fixtures.appendingPathComponent(name))
  }

  /// A deterministic test pattern with varying colour and alpha.
  static func pattern(width: Int, height: Int, seed: Int = 0, opaque: Bool = false) -> RGBAImage {
    var image = RGBAImage(width: width, height: height)
    for y in 0..<height {
      for x in 0..<width {
        image[x, y] = RGBA(
          UInt8(truncatingIfNeeded: x * 7 + seed), UInt8(truncatingIfNeeded: y * 11 + seed * 3),
          UInt8(truncatingIfNeeded: (x ^ y) * 5),
          opaque ? 255 : UInt8(truncatingIfNeeded: 255 - (x + y) * 3))
      }
    }
    return image
  }

  /// The largest per-channel difference between two images of equal size.
  static func maxDifference(_ a: RGBAImage, _ b: RGBAImage) -> Int {
    precondition(a.width == b.width && a.height == b.height)
    var worst = 0
    for i in a.pixels.indices {
      worst = max(worst, abs(Int(a.pixels[i]) - Int(b.pixels[i])))
    }
    return worst
  }

  /// The image with the colour of fully transparent pixels set to zero.
  static func clearingInvisible(_ image: RGBAImage) -> RGBAImage {
    var copy = image
    for i in stride(from: 0, to: copy.pixels.count, by: 4) where copy.pixels[i + 3] == 0 {
      copy.pixels[i] = 0
      copy.pixels[i + 1] = 0
      copy.pixels[i + 2] = 0
    }
    return copy
  }

  /// A fresh empty directory under the system temporary directory.
  static func temporaryDirectory(_ label: String = #function) throws -> URL {
    let url = FileManager.default.temporaryDirectory
      .appendingPathComponent("liva-media-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }
}

/// Holds the workers it is given until the test runs them: queued images stay queued.
final class HeldScheduler: DecodeScheduler {
  private let held = Locked<[@Sendable () -> Void]>([])

  func schedule(_ work: @escaping @Sendable () -> Void) { held.withLock { $0.append(work) } }

  /// Runs the held workers (and any they schedule) on this thread.
  func runAll() {
    while let work = held.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { work() }
  }

  /// Runs the workers held now, on this thread; those they schedule stay held.
  func runHeld() {
    let now = held.withLock { held in
      defer { held = [] }
      return held
    }
    for work in now { work() }
  }
}
