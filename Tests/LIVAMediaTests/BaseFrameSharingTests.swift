import Foundation
import LIVAProtocol
import Locking
import Testing

@testable import LIVAMedia

/// Several stores on one cache root (two clients, two processes): no store
/// deletes what another downloads or draws.
@Suite("BaseFrameStore: one root, several stores")
struct BaseFrameSharingTests {
  let codec = SystemImageCodec()
  let talking = try! AnimationName(parsing: "talking_1_s_talking_1_e")

  func frames(_ count: Int, seed: Int = 0) -> [RGBAImage] {
    (0..<count).map { TestSupport.pattern(width: 32, height: 20, seed: seed + $0, opaque: true) }
  }

  func store(
    _ images: [RGBAImage], _ animation: AnimationName = .idleForward, in store: BaseFrameStore,
    range: Range<Int>? = nil
  ) throws {
    for index in range ?? 0..<images.count {
      try store.storeFrame(try codec.encode(images[index], as: .png), index: index, of: animation)
    }
  }

  func download(
    _ store: BaseFrameStore, _ images: [RGBAImage], _ animation: AnimationName = .idleForward,
    version: String
  ) throws {
    try store.beginDownload(animation, frames: images.count)
    try self.store(images, animation, in: store)
    try store.finishDownload(animation, version: version)
  }

  @Test("a store opening the root leaves another's download in flight alone")
  func openingKeepsDownloadInFlight() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let images = frames(3)
    let first = try BaseFrameStore(root: root)
    try first.beginDownload(.idleForward, frames: 3)
    try store(images, in: first, range: 0..<1)
    let second = try BaseFrameStore(root: root)
    #expect(!second.isAvailable(.idleForward))
    try store(images, in: first, range: 1..<3)
    try first.finishDownload(.idleForward, version: "1")
    #expect(try first.frame(2, of: .idleForward) == images[2])
    #expect(try BaseFrameStore(root: root).frame(1, of: .idleForward) == images[1])
  }

  @Test("a new version swapped in by one store leaves the version another draws on disk")
  func swapKeepsOthersVersion() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let old = frames(2)
    let new = frames(3, seed: 40)
    try download(try BaseFrameStore(root: root), old, version: "1")
    let first = try BaseFrameStore(root: root)
    let second = try BaseFrameStore(root: root)
    try download(first, new, version: "2")
    #expect(try first.frame(2, of: .idleForward) == new[2])
    // The second store still draws version 1, from disk.
    #expect(second.cachedEntry(.idleForward)?.version == "1")
    #expect(try second.frame(1, of: .idleForward) == old[1])
    // Both download version 3 at once; each completes; the later swap wins for new stores.
    let newer = frames(2, seed: 80)
    try first.beginDownload(.idleForward, frames: 2)
    try second.beginDownload(.idleForward, frames: 2)
    try store(newer, in: first)
    try store(newer, in: second)
    try first.finishDownload(.idleForward, version: "3")
    try second.finishDownload(.idleForward, version: "3")
    #expect(try first.frame(1, of: .idleForward) == newer[1])
    #expect(try second.frame(1, of: .idleForward) == newer[1])
    let third = try BaseFrameStore(root: root)
    #expect(third.cachedEntry(.idleForward) == .init(frameCount: 2, version: "3"))
    #expect(try third.frame(0, of: .idleForward) == newer[0])
    // Still readable by the first store, whose version lost the race: nothing deleted it.
    first.purgeMemory()
    #expect(try first.frame(0, of: .idleForward) == newer[0])
  }

  @Test("an animation evicted by one store stays readable by another that draws it")
  func evictionKeepsOthersVersion() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let images = frames(2)
    try download(try BaseFrameStore(root: root), images, talking, version: "1")
    let reader = try BaseFrameStore(root: root)
    // Room for one animation of this size only.
    let writer = try BaseFrameStore(
      root: root, diskByteLimit: reader.statistics.diskBytes + reader.statistics.diskBytes / 2)
    try download(
      writer, frames(2, seed: 9), try AnimationName(parsing: "hi_1_s_hi_1_e"), version: "1")
    #expect(!writer.isAvailable(talking))
    #expect(try reader.frame(1, of: talking) == images[1])
  }

  @Test("when the last store using a replaced version is gone, its files go")
  func replacedVersionCleanedLater() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    try download(try BaseFrameStore(root: root), frames(2), version: "1")
    var reader: BaseFrameStore? = try BaseFrameStore(root: root)
    let writer = try BaseFrameStore(root: root)
    try download(writer, frames(2, seed: 5), version: "2")
    let folder = root.appendingPathComponent(AnimationName.idleForward.rawValue)
    let versions = {
      try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
        $0.hasPrefix("v-")
      }
    }
    #expect(try versions().count == 2)
    _ = reader
    reader = nil
    _ = try BaseFrameStore(root: root)
    #expect(try versions().count == 1)
  }

  @Test("two stores on two threads download and draw new versions at once: every read succeeds")
  func concurrentStores() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let hi = try AnimationName(parsing: "hi_1_s_hi_1_e")
    try download(try BaseFrameStore(root: root), frames(2), talking, version: "0")
    let perAnimation = try BaseFrameStore(root: root).statistics.diskBytes
    // Room for two animations: each store's downloads evict its other animation.
    let problems = Locked([String]())
    do {
      let stores = try (0..<2).map { _ in
        try BaseFrameStore(root: root, diskByteLimit: perAnimation * 2 + perAnimation / 2)
      }
      DispatchQueue.concurrentPerform(iterations: 2) { worker in
        let store = stores[worker]
        for round in 0..<15 {
          let animation = round % 3 == 2 ? hi : talking
          let images = frames(2, seed: worker * 1_000 + round * 10)
          do {
            try download(store, images, animation, version: "\(worker)-\(round)")
            store.purgeMemory()
            for index in 0..<2 where try store.frame(index, of: animation) != images[index] {
              problems.withLock { $0.append("worker \(worker) round \(round): wrong frame") }
            }
          } catch {
            problems.withLock { $0.append("worker \(worker) round \(round): \(error)") }
          }
        }
      }
    }
    #expect(problems.withLock { $0 }.isEmpty, "\(problems.withLock { $0 })")
    // A store opened now sees complete versions only.
    let third = try BaseFrameStore(root: root)
    for animation in [talking, hi] where third.isAvailable(animation) {
      for index in 0..<2 { #expect(throws: Never.self) { try third.frame(index, of: animation) } }
    }
    // The workers' stores let go: only the versions the manifests name are left.
    let last = try BaseFrameStore(root: root)
    for animation in [talking, hi] {
      let folder = root.appendingPathComponent(animation.rawValue)
      let versions = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
        .filter { $0.hasPrefix("v-") || $0.hasPrefix(".") }
      #expect(versions.count == (last.isAvailable(animation) ? 1 : 0), "\(versions)")
      #expect(third.isAvailable(animation) == last.isAvailable(animation))
    }
  }

  @Test("cache keys: one directory per server, agent and resolution; safe names")
  func cacheKeys() {
    let root = URL(fileURLWithPath: "/tmp/cache")
    let key = { (server: String, agent: String, resolution: Int) in
      BaseFrameStore.cacheDirectory(
        in: root, server: server, agentID: agent, resolution: resolution)
    }
    let base = key("https://api.example.com", "anna", 512)
    #expect(base.deletingLastPathComponent().path == "/tmp/cache")
    #expect(base == key("https://API.example.com/", "anna", 512))
    #expect(base == key("wss://api.example.com", "anna", 512))
    #expect(base != key("https://api.example.com", "anna", 1024))
    #expect(base != key("https://api.example.com", "bob", 512))
    #expect(base != key("https://api.example.com:8443", "anna", 512))
    #expect(base != key("http://api.example.com", "anna", 512))
    // Names that would be the same once sanitized stay apart.
    #expect(key("http://h", "a/b", 1) != key("http://h", "a_b", 1))
    for hostile in ["../..", "/", "a/../../etc", ".", "", String(repeating: "x", count: 500)] {
      let url = key("http://h/\(hostile)", hostile, 1)
      #expect(url.deletingLastPathComponent().path == "/tmp/cache", "\(hostile)")
      let name = url.lastPathComponent
      #expect(name.count <= 100 && !name.hasPrefix(".") && !name.contains("/"), "\(name)")
      #expect(
        name.utf8.allSatisfy {
          (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            || [UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ".")].contains($0)
        }, "\(name)")
    }
    // Stable across releases: the same inputs, the same directory (FNV-1a 64 of
    // "https://api.example.com\nanna\n512", computed by hand).
    #expect(
      key("https://api.example.com", "anna", 512).lastPathComponent
        == "api.example.com-anna-512-d5d79137412aea3d")
  }
}
