import Foundation
import LIVAMedia
import LIVAProtocol
import LIVAServer
import LIVATestSupport
import Testing

/// `liva avatar generate`, run in a child process: the files of the pack it writes.
@Suite(
  "liva avatar generate: the pack on disk",
  .enabled(if: livaBinary != nil || requireAllTools, "the liva executable is not built"))
struct AvatarGenerateTests {
  /// Every file under `root`, by path relative to it.
  static func files(under root: URL) -> Set<String> {
    let prefix = root.standardizedFileURL.path + "/"
    var files = Set<String>()
    let enumerator = FileManager.default.enumerator(
      at: root, includingPropertiesForKeys: [.isRegularFileKey])
    while let url = enumerator?.nextObject() as? URL {
      guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else {
        continue
      }
      files.insert(String(url.standardizedFileURL.path.dropFirst(prefix.count)))
    }
    return files
  }

  /// The paths the pack's manifest promises, and what is wrong with the files at them: each
  /// base frame a PNG of the suite's size, each mouth a WebP (one viseme a frame decoded: the
  /// size of its frame's mouth).
  static func check(_ pack: AvatarPack, in root: URL) throws -> (Set<String>, [String]) {
    var expected: Set<String> = [AvatarPack.manifestFilename]
    var problems: [String] = []
    let codec = SystemImageCodec()
    for (animation, entry) in pack.animations {
      for frame in 0..<entry.frames {
        let basePath = AvatarPack.baseFramePath(animation, frame: frame)
        expected.insert(basePath)
        let data = try Data(contentsOf: root.appendingPathComponent(basePath))
        let image = try codec.decode(data)
        if !data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
          || image.width != Cache.width || image.height != Cache.height
        {
          problems.append("\(basePath): not a PNG of \(Cache.width)x\(Cache.height)")
        }
        guard entry.speech else { continue }
        let mouth = entry.mouths[frame]
        for viseme in pack.manifest.visemes {
          let path = AvatarPack.overlayPath(animation, frame: frame, viseme: viseme)
          expected.insert(path)
          let sprite = try Data(contentsOf: root.appendingPathComponent(path))
          if !sprite.starts(with: Array("RIFF".utf8))
            || !sprite.dropFirst(8).starts(with: Array("WEBP".utf8))
          {
            problems.append("\(path): not a WebP")
          }
          if viseme == pack.manifest.visemes.first {
            let decoded = try codec.decode(sprite)
            if decoded.width != mouth.width || decoded.height != mouth.height {
              problems.append("\(path): \(decoded.width)x\(decoded.height), not the mouth's size")
            }
          }
        }
      }
    }
    return (expected, problems)
  }

  @Test(
    "--size and --output: a manifest, a PNG of that size per base frame, a WebP of its mouth's size per viseme of every speaking frame, nothing else"
  )
  func pack() async throws {
    // The suite's shared run: `--output avatars/sample-avatar-40x32 --size 40x32`, from the
    // cache folder (a relative --output is under the working folder).
    let run = try await Cache.generation.value
    #expect(run.status == 0, "\(run.stderr)")
    let root = Cache.pack
    let pack = try await Cache.preparedPack()
    let manifest = pack.manifest
    #expect(manifest.width == Cache.width && manifest.height == Cache.height)
    #expect(manifest.generator == "liva-sample-avatar")
    // The sample avatar's set: idle, two talking poses and their switches, the greeting.
    #expect(pack.animations.count == 15)
    let reference = try SampleAvatar(
      configuration: .init(width: Cache.width, height: Cache.height))
    #expect(Set(pack.animations.keys) == Set(reference.animations))
    #expect(pack.animations.values.contains { $0.speech })
    #expect(pack.animations.values.contains { !$0.speech })
    // What `liva serve` and the other commands take as their cached sample avatar.
    #expect(reference.isCurrent(pack))

    for (animation, entry) in pack.animations {
      #expect(entry.frames == reference.frameCount(of: animation))
      #expect(entry.mouths.count == entry.frames)
    }
    // The files, read and decoded on a thread of their own (over 1,300 of them).
    let (expected, problems) = try await offThePool { try Self.check(pack, in: root) }
    #expect(problems == [])
    #expect(manifest.visemes.count == Viseme.allCases.count)
    #expect(try await offThePool { Self.files(under: root) } == expected)
    // Its last line counts what it checked: every image.
    #expect(run.stdout.contains("done: 15 animations, \(expected.count - 1) files checked"))
  }

  @Test(
    "a size outside 16...4096 pixels is refused and writes nothing", arguments: ["8", "40x5000"])
  func refusedSize(size: String) async throws {
    let output = Cache.root.appendingPathComponent("refused-\(UUID().uuidString)")
    let run = try await runLiva(["avatar", "generate", "--output", output.path, "--size", size])
    #expect(!run.signalled)
    #expect(run.status != 0)
    #expect(run.stderr.contains("16 to 4096"))
    #expect(!FileManager.default.fileExists(atPath: output.path))
  }
}
