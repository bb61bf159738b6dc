import Foundation
import LIVAMedia
import LIVAProtocol
import LIVAServer

/// A fresh directory under the system's temporary directory, removed by `cleanup()`.
struct TemporaryDirectory {
  let url: URL

  init(_ label: String = #function) throws {
    let safe = label.filter { $0.isLetter || $0.isNumber }
    url = FileManager.default.temporaryDirectory
      .appendingPathComponent("liva-server-tests-\(safe)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }

  func cleanup() { try? FileManager.default.removeItem(at: url) }
}

/// The largest per-channel difference between two images of the same size (nil if sizes differ).
func maximumDifference(_ a: RGBAImage, _ b: RGBAImage) -> Int? {
  guard a.width == b.width, a.height == b.height else { return nil }
  var worst = 0
  for i in a.pixels.indices {
    worst = max(worst, abs(Int(a.pixels[i]) - Int(b.pixels[i])))
  }
  return worst
}

/// The mean per-channel difference over an area (colour channels only).
func meanDifference(_ a: RGBAImage, _ b: RGBAImage) -> Double {
  var total = 0
  var count = 0
  for i in a.pixels.indices where i % 4 != 3 {
    total += abs(Int(a.pixels[i]) - Int(b.pixels[i]))
    count += 1
  }
  return Double(total) / Double(max(1, count))
}

/// Parses a name known to be valid.
func name(_ text: String) -> AnimationName {
  // swift-format-ignore: NeverUseForceTry
  try! AnimationName(parsing: text)
}

/// A small sample avatar pack, generated once per test process in a shared temporary
/// directory (tests only read it).
enum SmallPack {
  static let size = 64
  static let avatar: SampleAvatar = {
    // swift-format-ignore: NeverUseForceTry
    try! SampleAvatar(configuration: .init(width: size, height: size))
  }()
  static let pack: Result<AvatarPack, LIVAServerError> = {
    let root = FileManager.default.temporaryDirectory
      .appendingPathComponent("liva-server-tests-packs")
    return Result { () throws(LIVAServerError) in try avatar.cachedPack(in: root) }
  }()
}
