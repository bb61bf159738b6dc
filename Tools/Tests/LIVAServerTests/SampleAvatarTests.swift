import Dispatch
import Foundation
import LIVAMedia
import LIVAProtocol
import Locking
import Testing

@testable import LIVAServer

@Suite("Sample avatar and pack format")
struct SampleAvatarTests {
  let codec = SystemImageCodec()

  @Test("the pack round-trips: manifest read back equals the generator's, every file decodes")
  func roundTrip() throws {
    let pack = try SmallPack.pack.get()
    let reread = try AvatarPack(loadingFrom: pack.root)
    #expect(reread.manifest == SmallPack.avatar.manifest())
    #expect(reread.manifest.width == SmallPack.size)
    #expect(reread.manifest.visemes == Viseme.allCases)
    #expect(Set(reread.animations.keys) == Set(SmallPack.avatar.animations))
    let checked = try reread.verify(codec: codec)
    let baseFrames = reread.animations.values.reduce(0) { $0 + $1.frames }
    let sprites = reread.animations.values.filter(\.speech).reduce(0) { $0 + $1.frames } * 9
    #expect(checked == baseFrames + sprites)
    // The wire manifest carries exactly frames and version.
    for (animation, info) in reread.wireManifest {
      #expect(info.frameCount == reread.animations[animation]?.frames)
      #expect(info.version == SmallPack.avatar.version)
    }
    // Overlay ids are the sprites' paths under overlays/.
    let talking = name("talking_1_s_talking_1_e")
    let id = AvatarPack.overlayID(animation: talking, frame: 7, viseme: .d)
    #expect(id == "talking_1_s_talking_1_e/7/mouth_D.webp")
    #expect(
      FileManager.default.fileExists(
        atPath: pack.root.appendingPathComponent("overlays/" + id).path))
    #expect(
      FileManager.default.fileExists(
        atPath: pack.root.appendingPathComponent("base/idle_1_s_idle_1_e/frame_0009.png").path))
  }

  @Test("the protocol's animations are present; the speech ones carry sprites")
  func animationSet() throws {
    let pack = try SmallPack.pack.get()
    let required = [
      "idle_1_s_idle_1_e", "idle_1_e_idle_1_s", "idle_1_e_talking_1_s",
      "talking_1_s_talking_1_e", "talking_1_e_talking_1_s", "talking_1_e_idle_1_s",
      "idle_1_e_talking_2_s", "talking_2_s_talking_2_e", "talking_2_e_idle_1_s",
      "talking_2_e_talking_2_s", "talking_1_e_talking_2_s", "talking_2_e_talking_1_s",
      "idle_1_e_hi_1_s", "hi_1_s_hi_1_e", "hi_1_e_idle_1_s",
    ]
    // docs/Protocol.md's production set, all 15, and nothing else.
    #expect(Set(pack.animations.keys.map(\.rawValue)) == Set(required))
    #expect(Set(BaseFrameStore.priorityOrder.map(\.rawValue)) == Set(required))
    let speech = Set(pack.animations.filter(\.value.speech).keys.map(\.rawValue))
    #expect(
      speech == [
        "idle_1_e_talking_1_s", "talking_1_s_talking_1_e", "talking_1_e_talking_1_s",
        "talking_1_e_idle_1_s", "idle_1_e_talking_2_s", "talking_2_s_talking_2_e",
        "talking_2_e_idle_1_s", "talking_2_e_talking_2_s", "talking_1_e_talking_2_s",
        "talking_2_e_talking_1_s",
      ])
    // The graph walks idle → talking → idle.
    let graph = pack.graph
    #expect(graph.path(from: .idleEnd, toPose: Pose(state: "talking", number: 1)) != nil)
    #expect(
      graph.path(from: KeyPose(Pose(state: "talking", number: 1), .end), to: .idleStart)
        != nil)
  }

  @Test("loop durations at the default configuration")
  func durations() throws {
    let avatar = try SampleAvatar()
    let manifest = avatar.manifest()
    func seconds(_ names: [String]) -> Double {
      names.reduce(0) { total, text in
        let entry = manifest.animations[text]
        return total + Double(entry?.frames ?? 0) / Double(entry?.fps ?? 1)
      }
    }
    let idle = seconds(["idle_1_s_idle_1_e", "idle_1_e_idle_1_s"])
    let talking = seconds(["talking_1_s_talking_1_e", "talking_1_e_talking_1_s"])
    #expect((1.5...2.5).contains(idle))
    #expect((1.0...2.0).contains(talking))
    #expect(manifest.animations["idle_1_s_idle_1_e"]?.fps == 10)
    #expect(manifest.animations["talking_1_s_talking_1_e"]?.fps == 30)
    #expect(manifest.width == 512 && manifest.height == 512)
  }

  @Test("frames at a shared key pose are the same picture, base frames and sprites")
  func keyPoseContinuity() throws {
    let pack = try SmallPack.pack.get()
    var pairs = 0
    for (ending, endEntry) in pack.animations {
      for (starting, _) in pack.animations where starting.from == ending.to {
        let last = try codec.decode(pack.baseFrameData(ending, frame: endEntry.frames - 1))
        let first = try codec.decode(pack.baseFrameData(starting, frame: 0))
        let difference = maximumDifference(last, first)
        #expect(
          difference != nil && difference! <= 2,
          "\(ending) → \(starting): \(String(describing: difference))")
        #expect(
          pack.mouthRect(ending, frame: endEntry.frames - 1) == pack.mouthRect(starting, frame: 0))
        if pack.carriesSpeech(ending) && pack.carriesSpeech(starting) {
          for viseme in [Viseme.x, .d] {
            let a = try codec.decode(
              pack.overlayData(ending, frame: endEntry.frames - 1, viseme: viseme))
            let b = try codec.decode(pack.overlayData(starting, frame: 0, viseme: viseme))
            let spriteDifference = maximumDifference(a, b)
            #expect(spriteDifference != nil && spriteDifference! <= 2)
          }
        }
        pairs += 1
      }
    }
    #expect(pairs >= 10)
  }

  @Test("the idle and talking loops move, and consecutive frames move a little")
  func motion() throws {
    let pack = try SmallPack.pack.get()
    for text in ["idle_1_s_idle_1_e", "talking_1_s_talking_1_e"] {
      let animation = name(text)
      let count = try #require(pack.frameCount(of: animation))
      var frames: [RGBAImage] = []
      for frame in 0..<count {
        frames.append(try codec.decode(pack.baseFrameData(animation, frame: frame)))
      }
      let widest = frames.map { maximumDifference(frames[0], $0) ?? 0 }.max() ?? 0
      #expect(widest > 20, "\(text) should not be a still picture")
      for index in 1..<count {
        // Subtle motion: neighbouring frames differ on average by little.
        #expect(meanDifference(frames[index - 1], frames[index]) < 12, "\(text) \(index)")
      }
    }
  }

  @Test("sprites cover the mouth: X matches the base frame, the open shapes change it")
  func sprites() throws {
    let pack = try SmallPack.pack.get()
    let animation = name("talking_1_s_talking_1_e")
    for frame in [0, 5, 13] {
      let base = try codec.decode(pack.baseFrameData(animation, frame: frame))
      let rect = try #require(pack.mouthRect(animation, frame: frame))
      func composite(_ viseme: Viseme) throws -> RGBAImage {
        let compositor = Compositor(width: base.width, height: base.height)
        let sprite = try codec.decode(pack.overlayData(animation, frame: frame, viseme: viseme))
        compositor.render(
          base: base, baseKey: nil,
          overlays: [PlacedOverlay(image: sprite, rect: rect.placement)])
        return compositor.frame
      }
      let rest = try composite(.x)
      #expect(maximumDifference(rest, base)! <= 3)
      let open = try composite(.d)
      #expect(maximumDifference(open, base)! > 40)
      // Every viseme's sprite is a distinct picture.
      var seen: Set<[UInt8]> = []
      for viseme in Viseme.allCases {
        seen.insert(
          try codec.decode(pack.overlayData(animation, frame: frame, viseme: viseme)).pixels)
      }
      #expect(seen.count == Viseme.allCases.count)
    }
  }

  @Test("photographic: grained frames compress as a photograph, sprites carry their grain")
  func photographic() throws {
    let flat = try SampleAvatar(configuration: .init(width: 160, height: 128))
    let grained = try SampleAvatar(
      configuration: .init(width: 160, height: 128, photographic: true))
    #expect(grained.version.hasSuffix("-photographic"))
    #expect(grained.cacheDirectoryName != flat.cacheDirectoryName)
    let animation = name("talking_1_s_talking_1_e")
    let flatPNG = try codec.encode(try flat.baseFrame(animation, frame: 5), as: .png)
    let grainedFrame = try grained.baseFrame(animation, frame: 5)
    let grainedPNG = try codec.encode(grainedFrame, as: .png)
    // Flat colours compress many times better than camera-like grain (a photograph's PNG is
    // about half of its raw bytes, 3 bytes a pixel).
    #expect(grainedPNG.count > 4 * flatPNG.count, "\(grainedPNG.count) vs \(flatPNG.count)")
    #expect(grainedPNG.count > 160 * 128 * 3 / 4)
    // Consecutive frames differ in their noise, not only where the character moves.
    let next = try grained.baseFrame(animation, frame: 6)
    let corner = (0..<3).map { grainedFrame.pixels[$0] } != (0..<3).map { next.pixels[$0] }
    #expect(corner, "the background's noise changes from frame to frame")
    // Where a sprite is opaque its pixels are its frame's, grain included: no seam.
    let rect = try grained.mouthRect(animation, frame: 5)
    let sprite = try grained.mouthSprite(animation, frame: 5, viseme: .x)
    var opaque = 0
    var worst = 0
    for y in 0..<rect.height {
      for x in 0..<rect.width where sprite.pixels[(y * rect.width + x) * 4 + 3] == 255 {
        opaque += 1
        for c in 0..<3 {
          let a = Int(sprite.pixels[(y * rect.width + x) * 4 + c])
          let b = Int(grainedFrame.pixels[((rect.y + y) * 160 + rect.x + x) * 4 + c])
          worst = max(worst, abs(a - b))
        }
      }
    }
    #expect(opaque > 20)
    #expect(worst <= 1, "an X sprite differs from its frame by \(worst) levels")
  }

  @Test("generation is deterministic: two packs have identical bytes")
  func deterministic() throws {
    let directory = try TemporaryDirectory()
    defer { directory.cleanup() }
    let avatar = try SampleAvatar(
      configuration: .init(width: 40, height: 48, includesGreeting: false))
    let a = try avatar.write(to: directory.url.appendingPathComponent("a"))
    let b = try avatar.write(to: directory.url.appendingPathComponent("b"))
    let files = try FileManager.default.subpathsOfDirectory(atPath: a.root.path).sorted()
    let other = try FileManager.default.subpathsOfDirectory(atPath: b.root.path).sorted()
    #expect(files == other)
    #expect(files.count > 300)
    for file in files {
      var isDirectory: ObjCBool = false
      guard
        FileManager.default.fileExists(
          atPath: a.root.appendingPathComponent(file).path, isDirectory: &isDirectory),
        !isDirectory.boolValue
      else { continue }
      let left = try Data(contentsOf: a.root.appendingPathComponent(file))
      let right = try Data(contentsOf: b.root.appendingPathComponent(file))
      #expect(left == right, "\(file)")
    }
  }

  @Test("the cache reuses a current pack and regenerates a stale one")
  func cache() throws {
    let directory = try TemporaryDirectory()
    defer { directory.cleanup() }
    let avatar = try SampleAvatar(
      configuration: .init(width: 32, height: 32, includesGreeting: false))
    let first = try avatar.cachedPack(in: directory.url)
    #expect(first.root.lastPathComponent == "sample-avatar-32x32")
    let marker = first.root.appendingPathComponent("marker")
    try Data("x".utf8).write(to: marker)
    _ = try avatar.cachedPack(in: directory.url)
    #expect(FileManager.default.fileExists(atPath: marker.path), "a current pack is reused")
    // An older generator version: regenerated.
    var stale = first.manifest
    stale.generatorVersion = "0"
    try stale.jsonData().write(to: first.root.appendingPathComponent("manifest.json"))
    let regenerated = try avatar.cachedPack(in: directory.url)
    #expect(regenerated.manifest.generatorVersion == SampleAvatar.generatorVersion)
    #expect(!FileManager.default.fileExists(atPath: marker.path), "a stale pack is replaced")
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
    #expect(leftovers == ["sample-avatar-32x32"])
  }

  /// Servers started together on one cache (a stale pack in it) each regenerate it; the
  /// removal of the stale directory is not atomic, so one could read a half-removed pack or
  /// remove the other's.
  @Test("servers regenerating one stale cache together all get the current pack")
  func concurrentRegeneration() throws {
    let directory = try TemporaryDirectory()
    defer { directory.cleanup() }
    let avatar = try SampleAvatar(
      configuration: .init(
        width: 16, height: 16, includesGreeting: false, includesSecondTalkingPose: false))
    for round in 0..<3 {
      let first = try avatar.cachedPack(in: directory.url)
      var stale = first.manifest
      stale.generatorVersion = "0"
      try stale.jsonData().write(to: first.root.appendingPathComponent("manifest.json"))
      let results = Locked<[Result<String, LIVAServerError>]>([])
      DispatchQueue.concurrentPerform(iterations: 4) { _ in
        let result = Result { () throws(LIVAServerError) -> String in
          try avatar.cachedPack(in: directory.url).manifest.generatorVersion
        }
        results.withLock { $0.append(result) }
      }
      let versions = results.withLock { $0 }.map { try? $0.get() }
      #expect(
        versions.allSatisfy { $0 == SampleAvatar.generatorVersion },
        "round \(round): \(results.withLock { $0 })")
      let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
      #expect(leftovers == ["sample-avatar-16x16"], "round \(round)")
    }
  }

  @Test(
    "bad manifests are refused with the offending field",
    arguments: [
      (#"{"format": 2}"#, "malformed"),
      (
        #"{"format":1,"generator":"g","generator_version":"1","width":64,"height":64,"fps":30,"visemes":["A"],"animations":{"Idle":{"frames":1,"version":"1","fps":10,"speech":false,"mouths":[[0,0,4,4]]}}}"#,
        "animations.Idle"
      ),
      (
        #"{"format":1,"generator":"g","generator_version":"1","width":64,"height":64,"fps":30,"visemes":["A"],"animations":{"idle_1_s_idle_1_e":{"frames":2,"version":"1","fps":10,"speech":false,"mouths":[[0,0,4,4]]}}}"#,
        "animations.idle_1_s_idle_1_e.mouths"
      ),
      (
        #"{"format":1,"generator":"g","generator_version":"1","width":64,"height":64,"fps":30,"visemes":["A"],"animations":{"idle_1_s_idle_1_e":{"frames":1,"version":"1","fps":10,"speech":false,"mouths":[[60,0,8,4]]}}}"#,
        "animations.idle_1_s_idle_1_e.mouths[0]"
      ),
      (
        #"{"format":3,"generator":"g","generator_version":"1","width":64,"height":64,"fps":30,"visemes":["A"],"animations":{}}"#,
        "format"
      ),
    ])
  func badManifests(json: String, location: String) {
    #expect {
      try AvatarManifest(jsonData: Data(json.utf8), location: "m.json")
    } throws: { error in
      guard let error = error as? LIVAServerError, error.code == .invalidPack else { return false }
      return location == "malformed"
        ? error.message.contains("malformed") : error.location == "m.json: \(location)"
    }
  }

  @Test("missing frames and animations are typed errors, not crashes")
  func missing() throws {
    let pack = try SmallPack.pack.get()
    #expect(throws: LIVAServerError.self) {
      try pack.baseFrameData(name("idle_1_s_idle_1_e"), frame: 99)
    }
    #expect(throws: LIVAServerError.self) {
      try pack.overlayData(name("idle_1_s_idle_1_e"), frame: 0, viseme: .a)
    }
    #expect(throws: LIVAServerError.self) {
      try pack.baseFrameData(name("talking_3_s_talking_3_e"), frame: 0)
    }
    #expect(throws: LIVAServerError.self) {
      try SampleAvatar(configuration: .init(width: 0, height: 10))
    }
  }
}
