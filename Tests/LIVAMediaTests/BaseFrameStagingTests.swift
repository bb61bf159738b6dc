import Foundation
import LIVAProtocol
import Testing

@testable import LIVAMedia

/// A new version of an animation is staged beside the old one and swapped in whole:
/// the old frames play until then, and a failed or interrupted download leaves them.
@Suite("BaseFrameStore: staged versions")
struct BaseFrameStagingTests {
  let codec = SystemImageCodec()

  func frames(_ count: Int, seed: Int = 0) -> [RGBAImage] {
    (0..<count).map { TestSupport.pattern(width: 32, height: 20, seed: seed + $0, opaque: true) }
  }

  func store(_ images: [RGBAImage], in store: BaseFrameStore, from: Int = 0) throws {
    for (index, image) in images.enumerated() where index >= from {
      try store.storeFrame(try codec.encode(image, as: .png), index: index, of: .idleForward)
    }
  }

  func download(_ store: BaseFrameStore, _ images: [RGBAImage], version: String) throws {
    try store.beginDownload(.idleForward, frames: images.count)
    try self.store(images, in: store)
    try store.finishDownload(.idleForward, version: version)
  }

  @Test("while a new version downloads, the old one is available and drawn; complete, it swaps")
  func oldPlaysUntilSwap() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let old = frames(2)
    let new = frames(3, seed: 50)
    let store = try BaseFrameStore(root: root)
    try download(store, old, version: "1")
    try store.preload(.idleForward)

    try store.beginDownload(.idleForward, frames: new.count)
    #expect(store.isAvailable(.idleForward))
    #expect(store.cachedEntry(.idleForward) == .init(frameCount: 2, version: "1"))
    #expect(store.decodedFrame(1, of: .idleForward) == old[1])
    try self.store(new, in: store)
    // Every frame is on disk, not yet complete: still the old version, from memory and disk.
    #expect(try store.frame(0, of: .idleForward) == old[0])
    store.purgeMemory()
    #expect(try store.frame(1, of: .idleForward) == old[1])
    #expect(
      store.plan(for: ["idle_1_s_idle_1_e": .init(frameCount: 3, version: "2")]).animations
        == [.idleForward])

    try store.finishDownload(.idleForward, version: "2")
    #expect(store.cachedEntry(.idleForward) == .init(frameCount: 3, version: "2"))
    // The old version's decoded frames are never drawn as the new one's.
    #expect(store.decodedFrame(1, of: .idleForward) == nil)
    for index in 0..<3 { #expect(try store.frame(index, of: .idleForward) == new[index]) }
    let reopened = try BaseFrameStore(root: root)
    #expect(reopened.cachedEntry(.idleForward) == .init(frameCount: 3, version: "2"))
    #expect(try reopened.frame(2, of: .idleForward) == new[2])
    // The old version's files are gone.
    #expect(reopened.statistics.diskBytes == store.statistics.diskBytes)
  }

  @Test("an incomplete download fails and leaves the old version; a retry then swaps")
  func incompleteKeepsOld() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let old = frames(2)
    let new = frames(3, seed: 50)
    let store = try BaseFrameStore(root: root)
    try download(store, old, version: "1")
    let bytes = store.statistics.diskBytes

    try store.beginDownload(.idleForward, frames: new.count)
    try self.store(Array(new.prefix(2)), in: store)
    #expect(throws: LIVAMediaError.self) { try store.finishDownload(.idleForward, version: "2") }
    #expect(store.cachedEntry(.idleForward) == .init(frameCount: 2, version: "1"))
    #expect(try store.frame(1, of: .idleForward) == old[1])
    // The partial version is gone from disk and from the accounting.
    #expect(store.statistics.diskBytes == bytes)
    #expect(try BaseFrameStore(root: root).cachedEntry(.idleForward)?.version == "1")

    try download(store, new, version: "2")
    #expect(store.cachedEntry(.idleForward) == .init(frameCount: 3, version: "2"))
    #expect(try store.frame(2, of: .idleForward) == new[2])
  }

  @Test("a download cut off (the app quits) leaves the old version for the next launch")
  func interruptedKeepsOld() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let old = frames(2)
    let bytes: Int
    do {
      let store = try BaseFrameStore(root: root)
      try download(store, old, version: "1")
      bytes = store.statistics.diskBytes
      try store.beginDownload(.idleForward, frames: 3)
      try self.store(frames(1, seed: 50), in: store)
    }
    let reopened = try BaseFrameStore(root: root)
    #expect(reopened.cachedEntry(.idleForward) == .init(frameCount: 2, version: "1"))
    #expect(try reopened.frame(1, of: .idleForward) == old[1])
    #expect(reopened.statistics.diskBytes == bytes)
  }

  @Test("a download begun again discards the first attempt's frames")
  func restartedDownload() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try BaseFrameStore(root: root)
    try download(store, frames(2), version: "1")
    try store.beginDownload(.idleForward, frames: 3)
    try self.store(frames(3, seed: 50), in: store)
    try store.beginDownload(.idleForward, frames: 3)
    // Frames of the first attempt do not count for the second.
    try self.store(Array(frames(3, seed: 70).prefix(2)), in: store)
    #expect(throws: LIVAMediaError.self) { try store.finishDownload(.idleForward, version: "2") }
    #expect(store.cachedEntry(.idleForward)?.version == "1")
  }
}
