import Foundation
import LIVAProtocol
import Testing

@testable import LIVAMedia

@Suite("BaseFrameStore")
struct BaseFrameStoreTests {
  let codec = SystemImageCodec()
  let talking = try! AnimationName(parsing: "talking_1_s_talking_1_e")
  let toTalking = try! AnimationName(parsing: "idle_1_e_talking_1_s")
  let hi = try! AnimationName(parsing: "hi_1_s_hi_1_e")

  func frames(_ count: Int, seed: Int = 0) -> [RGBAImage] {
    (0..<count).map { TestSupport.pattern(width: 32, height: 20, seed: seed + $0, opaque: true) }
  }

  /// The directory of an animation's complete version (the one `manifest.json` names).
  func versionDirectory(_ root: URL, _ animation: AnimationName) throws -> URL {
    let folder = root.appendingPathComponent(animation.rawValue)
    let versions = try FileManager.default.contentsOfDirectory(atPath: folder.path)
      .filter { $0.hasPrefix("v-") }
    try #require(versions.count == 1, "\(versions)")
    return folder.appendingPathComponent(versions[0])
  }

  /// Downloads `images` as `animation` at `version`, as the socket events would.
  func download(
    _ store: BaseFrameStore, _ animation: AnimationName, _ images: [RGBAImage],
    version: String? = "1", format: ImageFormat = .png
  ) throws {
    try store.beginDownload(animation, frames: images.count)
    for (index, image) in images.enumerated() {
      let data = try codec.encode(image, as: format)
      try store.store(
        BaseFrame(animationName: animation, frameIndex: index, image: EncodedImage(data: data)))
    }
    try store.finishDownload(animation, version: version)
  }

  @Test("frames round-trip through the disk layout and survive a reopen")
  func roundTrip() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let images = frames(3)
    let store = try BaseFrameStore(root: root)
    try download(store, .idleForward, images, format: .webp)
    let folder = root.appendingPathComponent("idle_1_s_idle_1_e")
    let version = try versionDirectory(root, .idleForward)
    let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    #expect(files == ["manifest.json", version.lastPathComponent])
    let frames = try FileManager.default.contentsOfDirectory(atPath: version.path).sorted()
    #expect(frames == ["frame_0000.png", "frame_0001.png", "frame_0002.png", "lock"])
    #expect(store.isAvailable(.idleForward))
    for index in 0..<3 { #expect(try store.frame(index, of: .idleForward) == images[index]) }
    let reopened = try BaseFrameStore(root: root)
    #expect(reopened.idleFirstFrame() == images[0])
    #expect(reopened.cachedEntry(.idleForward) == .init(frameCount: 3, version: "1"))
  }

  @Test("frames are stored as they came: no decode or encode while storing, drawn identically")
  func storedAsTheyCame() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let spy = CountingCodec(codec)
    let store = try BaseFrameStore(root: root, codec: spy)
    let images = frames(3)
    let webp = try images.map { try codec.encode($0, as: .webp) }
    let jpeg = try TestSupport.fixture("gradient-24x16.jpg")
    let png = try codec.encode(images[2], as: .png)
    let sent = [webp[0], jpeg, png]
    try store.beginDownload(talking, frames: sent.count)
    for (index, data) in sent.enumerated() {
      try store.store(
        BaseFrame(animationName: talking, frameIndex: index, image: EncodedImage(data: data)))
    }
    try store.finishDownload(talking, version: "1")
    // The socket task only wrote bytes: nothing was decoded or re-encoded.
    #expect(spy.decodes == 0 && spy.encodes == 0)
    let version = try versionDirectory(root, talking)
    for (index, data) in sent.enumerated() {
      let file = version.appendingPathComponent(String(format: "frame_%04d.png", index))
      #expect(try Data(contentsOf: file) == data)
    }
    #expect(ImageFormat(sniffing: sent[0]) == .webp && ImageFormat(sniffing: sent[1]) == .jpeg)
    // Decoded when needed, by sniffing, and drawn as the sent image.
    #expect(try store.frame(0, of: talking) == images[0])
    #expect(try store.frame(1, of: talking) == codec.decode(jpeg))
    #expect(try store.frame(2, of: talking) == images[2])
    #expect(spy.decodes == 3 && spy.encodes == 0)
    #expect(store.statistics.diskBytes >= sent.map(\.count).reduce(0, +))
    // Bytes that are no image are refused at once, still without decoding.
    try store.beginDownload(hi, frames: 1)
    #expect(throws: LIVAMediaError.self) {
      try store.storeFrame(Data("not an image".utf8), index: 0, of: hi)
    }
    #expect(spy.decodes == 3)
  }

  @Test(
    "hostile animation names are rejected and never reach the disk",
    arguments: [
      "../escape", "idle_1_s_idle_1_e/../../etc", "/etc/passwd", "idle_1_s_idle_1_e/x", "..",
      "IDLE_1_S_IDLE_1_E", "idle_1_s_idle_1_e\0", "", "idle_1_s_idle_1_e%2f..",
    ])
  func hostileNames(name: String) throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    // A directory in the cache whose name is not an animation is not the store's: it is
    // neither read, counted nor deleted.
    let foreign = root.appendingPathComponent("Not An Animation")
    try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: true)
    try Data("x".utf8).write(to: foreign.appendingPathComponent("manifest.json"))
    let store = try BaseFrameStore(root: root)
    #expect(store.statistics.diskBytes == 0 && store.statistics.animations == 0)
    #expect {
      try BaseFrameStore.animationName(name)
    } throws: { ($0 as? LIVAMediaError)?.code == .invalidName }
    let plan = store.plan(for: [name: .init(frameCount: 3, version: "1")])
    #expect(plan.animations.isEmpty && plan.rejectedNames == [name])
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: root.path) == [foreign.lastPathComponent])
    // Nothing appeared next to the root either.
    let siblings = try FileManager.default.contentsOfDirectory(
      atPath: root.deletingLastPathComponent().path)
    #expect(!siblings.contains("escape") && !siblings.contains("etc"))
  }

  @Test("an interrupted download or write never yields a half animation or half frame")
  func interruptedWrites() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let images = frames(2)
    do {
      let store = try BaseFrameStore(root: root)
      try download(store, .idleForward, images)
      // A crash in the middle of writing a frame leaves only a temporary file.
      let folder = try versionDirectory(root, .idleForward)
      let partial = try codec.encode(images[1], as: .png).prefix(40)
      try partial.write(to: folder.appendingPathComponent(".frame_0001.png.crash.tmp"))
      // A crash before a download finished leaves frames but no manifest.
      try store.beginDownload(talking, frames: 2)
      try store.storeFrame(try codec.encode(images[0], as: .png), index: 0, of: talking)
      #expect(!store.isAvailable(talking))
      #expect(throws: LIVAMediaError.self) { try store.frame(0, of: talking) }
      #expect(throws: LIVAMediaError.self) { try store.finishDownload(talking, version: "1") }
    }
    let reopened = try BaseFrameStore(root: root)
    #expect(try reopened.frame(1, of: .idleForward) == images[1])
    #expect(!reopened.isAvailable(talking))
    #expect(
      !FileManager.default.fileExists(atPath: root.appendingPathComponent(talking.rawValue).path))
    let idleFiles = try FileManager.default.contentsOfDirectory(
      atPath: try versionDirectory(root, .idleForward).path)
    #expect(!idleFiles.contains { $0.hasPrefix(".") })
    #expect(
      reopened.plan(for: [talking.rawValue: .init(frameCount: 2, version: "1")]).animations == [
        talking
      ]
    )
  }

  @Test("writes are atomic: the final name only ever holds complete files")
  func atomicWrite() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let url = root.appendingPathComponent("file.bin")
    try BaseFrameStore.writeAtomically(Data(repeating: 1, count: 10_000), to: url)
    try BaseFrameStore.writeAtomically(Data(repeating: 2, count: 5), to: url)
    #expect(try Data(contentsOf: url) == Data(repeating: 2, count: 5))
    #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["file.bin"])
    #expect(throws: LIVAMediaError.self) {
      try BaseFrameStore.writeAtomically(Data(), to: root.appendingPathComponent("no/such/dir"))
    }
  }

  @Test(
    "the idle loop's first frame is kept decoded on disk: the next session reads it without decoding; a damaged copy is decoded again"
  )
  func posterFrame() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let images = frames(3)
    let first = CountingCodec()
    let store = try BaseFrameStore(root: root, codec: first)
    try download(store, .idleForward, images)
    #expect(try store.frame(0, of: .idleForward) == images[0])
    #expect(try store.frame(1, of: .idleForward) == images[1])
    #expect(first.decodes == 2)
    let version = try versionDirectory(root, .idleForward)
    let poster = version.appendingPathComponent("frame_0000.rgba")
    #expect(FileManager.default.fileExists(atPath: poster.path))
    #expect(
      !FileManager.default.fileExists(
        atPath: version.appendingPathComponent("frame_0001.rgba").path))

    let second = CountingCodec()
    let reopened = try BaseFrameStore(root: root, codec: second)
    // Its bytes count on disk, as a reopened store counts them.
    #expect(reopened.statistics.diskBytes == store.statistics.diskBytes)
    #expect(try reopened.frame(0, of: .idleForward) == images[0])
    #expect(second.decodes == 0)

    // Damaged (cut short, or another size): decoded from the frame again, and rewritten.
    for damage in [{ (d: Data) in d.prefix(100) }, { (d: Data) in d.prefix(16) + d.dropFirst(20) }]
    {
      try damage(try Data(contentsOf: poster)).write(to: poster)
      let codec = CountingCodec()
      let again = try BaseFrameStore(root: root, codec: codec)
      #expect(try again.frame(0, of: .idleForward) == images[0])
      #expect(codec.decodes == 1)
      let rewritten = CountingCodec()
      #expect(
        try BaseFrameStore(root: root, codec: rewritten).frame(0, of: .idleForward) == images[0])
      #expect(rewritten.decodes == 0)
    }
  }

  @Test("a damaged frame on disk is a typed error, not a crash")
  func damagedFrame() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try BaseFrameStore(root: root)
    try download(store, .idleForward, frames(2))
    let file = try versionDirectory(root, .idleForward).appendingPathComponent("frame_0001.png")
    try Data(try Data(contentsOf: file).prefix(60)).write(to: file)
    #expect {
      try store.frame(1, of: .idleForward)
    } throws: { ($0 as? LIVAMediaError)?.code == .truncatedData }
    #expect(throws: LIVAMediaError.self) { try store.frame(2, of: .idleForward) }
    #expect(throws: LIVAMediaError.self) {
      try store.storeFrame(Data("nope".utf8), index: 0, of: .idleForward)
    }
  }

  @Test("the plan lists missing and stale animations in priority order")
  func plan() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try BaseFrameStore(root: root)
    try download(store, .idleForward, frames(1), version: "3")
    try download(store, talking, frames(2), version: "1")
    let plan = store.plan(for: [
      hi.rawValue: .init(frameCount: 4, version: "1"),
      talking.rawValue: .init(frameCount: 2, version: "2"),  // stale version
      "idle_1_s_idle_1_e": .init(frameCount: 1, version: "3"),  // fresh
      "idle_1_e_idle_1_s": .init(frameCount: 1, version: "1"),  // missing
      "zz_1_s_zz_1_e": .init(frameCount: 1, version: "1"),  // unknown to the priority list
      toTalking.rawValue: .init(frameCount: 0, version: "1"),  // absurd frame count
    ])
    #expect(
      plan.animations.map(\.rawValue) == [
        "idle_1_e_idle_1_s", "talking_1_s_talking_1_e", "hi_1_s_hi_1_e", "zz_1_s_zz_1_e",
      ])
    #expect(plan.rejectedNames == [toTalking.rawValue])
    // A changed frame count is stale too.
    #expect(
      store.plan(for: ["idle_1_s_idle_1_e": .init(frameCount: 2, version: "3")]).animations.count
        == 1)
  }

  @Test("the protocol's manifest plans the same way; a missing version trusts an unversioned copy")
  func protocolManifest() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try BaseFrameStore(root: root)
    try download(store, .idleForward, frames(1), version: "3")
    try download(store, hi, frames(1), version: nil)
    let plan = store.plan(for: [
      hi: BaseAnimationInfo(frameCount: 1),  // no version on either side: fresh
      .idleForward: BaseAnimationInfo(frameCount: 1, version: "4"),  // stale
      .idleBack: BaseAnimationInfo(frameCount: 2),  // missing
      toTalking: BaseAnimationInfo(frameCount: 0),  // absurd frame count
    ])
    #expect(plan.animations == [.idleForward, .idleBack])
    #expect(plan.rejectedNames == [toTalking.rawValue])
    #expect(store.cachedEntry(hi) == .init(frameCount: 1, version: nil))
    #expect(
      store.plan(for: [hi: BaseAnimationInfo(frameCount: 1, version: "7")]).animations == [hi])
  }

  @Test("above the disk limit, least recently used whole animations go; the idle loop stays")
  func capEviction() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let probeRoot = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: probeRoot) }
    let probe = try BaseFrameStore(root: probeRoot)
    try download(probe, talking, frames(2))
    let perAnimation = probe.statistics.diskBytes
    // Room for three animations of this size, not four, and for the idle loop's first frame
    // kept decoded (16 + 32 × 20 × 4 bytes) once it is drawn.
    let poster = 16 + 32 * 20 * 4
    let store = try BaseFrameStore(
      root: root, diskByteLimit: perAnimation * 3 + perAnimation / 2 + poster)
    try download(store, .idleForward, frames(2))
    try download(store, talking, frames(2, seed: 1))
    try download(store, toTalking, frames(2, seed: 2))
    _ = try store.frame(0, of: talking)  // talking is now more recent than toTalking
    _ = try store.frame(0, of: .idleForward)
    try download(store, hi, frames(2, seed: 3))
    #expect(store.isAvailable(.idleForward) && store.isAvailable(talking) && store.isAvailable(hi))
    #expect(!store.isAvailable(toTalking))
    #expect(
      !FileManager.default.fileExists(atPath: root.appendingPathComponent(toTalking.rawValue).path))
    let stats = store.statistics
    #expect(stats.evictions == 1 && stats.animations == 3 && stats.diskBytes <= store.diskByteLimit)
  }

  @Test("the render-side read only sees frames already in memory")
  func decodedFrameIsMemoryOnly() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let images = frames(3)
    let store = try BaseFrameStore(root: root)
    try download(store, .idleForward, images)
    #expect(store.decodedFrame(1, of: .idleForward) == nil)
    #expect(store.statistics.diskLoads == 0)
    try store.preload(.idleForward, frames: 1..<9)
    #expect(store.statistics.diskLoads == 2)
    #expect(store.decodedFrame(1, of: .idleForward) == images[1])
    #expect(store.decodedFrame(0, of: .idleForward) == nil)
    #expect(throws: LIVAMediaError.self) { try store.preload(talking) }
  }

  @Test("recency survives a restart: what was used last session is evicted last")
  func recencyAcrossLaunches() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let manifest = { (name: AnimationName) in
      root.appendingPathComponent(name.rawValue).appendingPathComponent("manifest.json").path
    }
    var perAnimation = 0
    do {
      let store = try BaseFrameStore(root: root)
      try download(store, talking, frames(2))
      perAnimation = store.statistics.diskBytes
      try download(store, toTalking, frames(2, seed: 1))
      // Written in this order, a day ago: talking is the older download.
      let yesterday = Date(timeIntervalSinceNow: -86_400)
      try FileManager.default.setAttributes(
        [.modificationDate: yesterday.addingTimeInterval(-60)], ofItemAtPath: manifest(talking))
      try FileManager.default.setAttributes(
        [.modificationDate: yesterday], ofItemAtPath: manifest(toTalking))
    }
    do {
      // A session that uses only talking.
      let store = try BaseFrameStore(root: root)
      _ = try store.frame(0, of: talking)
    }
    let store = try BaseFrameStore(root: root, diskByteLimit: perAnimation * 2 + perAnimation / 2)
    try download(store, hi, frames(2, seed: 2))
    #expect(store.isAvailable(talking) && store.isAvailable(hi) && !store.isAvailable(toTalking))
  }

  @Test("decoded frames held in memory stay under their byte limit")
  func memoryBound() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let frameBytes = 32 * 20 * 4
    let store = try BaseFrameStore(root: root, memoryByteLimit: frameBytes * 2)
    try download(store, .idleForward, frames(4))
    for index in 0..<4 { _ = try store.frame(index, of: .idleForward) }
    #expect(store.statistics.memoryBytes == frameBytes * 2)
    _ = try store.frame(3, of: .idleForward)
    #expect(store.statistics.memoryHits == 1 && store.statistics.diskLoads == 4)
    store.purgeMemory()
    #expect(store.statistics.memoryBytes == 0)
    // Re-downloading drops the old decoded frames too.
    _ = try store.frame(0, of: .idleForward)
    try download(store, .idleForward, frames(1, seed: 9), version: "2")
    #expect(try store.frame(0, of: .idleForward) == frames(1, seed: 9)[0])
  }

  @Test(
    "a prefetch window larger than memory keeps its most urgent frames: decoding stops when full"
  )
  func prefetchWindowLargerThanMemory() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let frameBytes = 32 * 20 * 4
    let store = try BaseFrameStore(root: root, memoryByteLimit: frameBytes * 3)
    try download(store, .idleForward, frames(8))
    // Most urgent first: frame 0 (idle's first), then the playhead's next frames.
    let window = [0, 5, 6, 7, 1, 2, 3].map { BaseFrameRef(animation: .idleForward, index: $0) }
    store.prefetch(window, scheduler: InlineDecodeScheduler())
    #expect(store.decodedFrame(0, of: .idleForward) != nil)
    #expect(store.decodedFrame(5, of: .idleForward) != nil)
    #expect(store.decodedFrame(6, of: .idleForward) != nil)
    #expect(store.statistics.memoryBytes <= frameBytes * 3)
    // What did not fit was not decoded only to be thrown away.
    #expect(store.statistics.diskLoads == 3)
    // A later window with other frames pushes out the old ones, never its own.
    store.prefetch(
      (0...2).map { BaseFrameRef(animation: .idleForward, index: $0) },
      scheduler: InlineDecodeScheduler())
    #expect((0...2).allSatisfy { store.decodedFrame($0, of: .idleForward) != nil })
  }

  @Test("a prefetch lets go of the frames that left its window first: memory holds the window")
  func prefetchKeepsOnlyTheWindow() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let frameBytes = 32 * 20 * 4
    let store = try BaseFrameStore(root: root, memoryByteLimit: frameBytes * 8)
    try download(store, .idleForward, frames(8))
    store.prefetch(
      (0..<4).map { BaseFrameRef(animation: .idleForward, index: $0) },
      scheduler: InlineDecodeScheduler())
    #expect(store.statistics.memoryBytes == frameBytes * 4)
    // The playhead moved on by two frames: 0 and 1 are behind it and go, though they fit.
    let held = try #require(store.decodedFrame(1, of: .idleForward))
    store.prefetch(
      (2..<6).map { BaseFrameRef(animation: .idleForward, index: $0) },
      scheduler: InlineDecodeScheduler())
    #expect(store.statistics.memoryBytes == frameBytes * 4)
    #expect(store.decodedFrame(0, of: .idleForward) == nil)
    #expect(store.decodedFrame(1, of: .idleForward) == nil)
    #expect((2..<6).allSatisfy { store.decodedFrame($0, of: .idleForward) != nil })
    // A frame a reader still holds stays valid in its hands.
    #expect(held == frames(8)[1])
  }

  @Test(
    "two prefetchers on one store keep each other's windows; a prefetcher gone, its window goes")
  func prefetchersShareAStore() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let frameBytes = 32 * 20 * 4
    let store = try BaseFrameStore(root: root, memoryByteLimit: frameBytes * 8)
    try download(store, .idleForward, frames(8))
    let first = BaseFramePrefetcher(store: store, scheduler: InlineDecodeScheduler())
    var second: BaseFramePrefetcher? = BaseFramePrefetcher(
      store: store, scheduler: InlineDecodeScheduler())
    first.request((0..<3).map { BaseFrameRef(animation: .idleForward, index: $0) })
    second?.request((4..<7).map { BaseFrameRef(animation: .idleForward, index: $0) })
    // Frame 0 left the first window only.
    first.request((1..<4).map { BaseFrameRef(animation: .idleForward, index: $0) })
    #expect(store.decodedFrame(0, of: .idleForward) == nil)
    #expect((1..<7).allSatisfy { store.decodedFrame($0, of: .idleForward) != nil })
    second = nil
    first.request((1..<4).map { BaseFrameRef(animation: .idleForward, index: $0) })
    #expect((4..<7).allSatisfy { store.decodedFrame($0, of: .idleForward) == nil })
    #expect(store.statistics.memoryBytes == frameBytes * 3)
  }

  @Test(
    "a window worked out at an earlier step and handed over later never replaces a newer one")
  func olderStepIgnored() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try BaseFrameStore(root: root, memoryByteLimit: 32 * 20 * 4 * 8)
    try download(store, .idleForward, frames(8))
    let prefetcher = BaseFramePrefetcher(store: store, scheduler: InlineDecodeScheduler())
    let window = { (range: Range<Int>) in
      range.map { BaseFrameRef(animation: .idleForward, index: $0) }
    }
    // Step 2 (the display link's, worked out later) reaches the store first; step 1 (the
    // socket's, worked out earlier) comes after it and is dropped.
    prefetcher.request(window(4..<6), step: 2)
    prefetcher.request(window(0..<2), step: 1)
    #expect(store.decodedFrame(0, of: .idleForward) == nil)
    #expect((4..<6).allSatisfy { store.decodedFrame($0, of: .idleForward) != nil })
    // A later step replaces it.
    prefetcher.request(window(0..<2), step: 3)
    #expect((0..<2).allSatisfy { store.decodedFrame($0, of: .idleForward) != nil })
    #expect(store.decodedFrame(4, of: .idleForward) == nil)
  }

  @Test("the disk eviction plan: least recently used first until the cache fits, never a kept one")
  func evictionPlan() throws {
    let a = try AnimationName(parsing: "hi_1_s_hi_1_e")
    let b = try AnimationName(parsing: "talking_1_s_talking_1_e")
    let c = try AnimationName(parsing: "idle_1_e_talking_1_s")
    let cached = [(a, 10, 1), (b, 20, 3), (c, 30, 2), (.idleForward, 40, 0)].map {
      (name: $0.0, bytes: $0.1, lastUsed: $0.2)
    }
    let plan = { (limit: Int, keeping: Set<AnimationName>) in
      BaseFrameStore.evictionPlan(
        cached: cached, totalBytes: 100, limit: limit, keeping: keeping)
    }
    #expect(plan(60, [.idleForward]) == [a, c])  // 100 → 90 → 60
    #expect(plan(100, []) == [])
    #expect(plan(0, [.idleForward]) == [a, c, b])  // all that may go, and no more
    #expect(plan(95, [a]) == [.idleForward])  // the oldest that may go
  }

  @Test("a prefetcher's window never waits for another's worker: each drains on its own scheduler")
  func prefetchersDrainApart() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try BaseFrameStore(root: root, memoryByteLimit: 32 * 20 * 4 * 8)
    try download(store, .idleForward, frames(8))
    let held = HeldScheduler()
    let slow = BaseFramePrefetcher(store: store, scheduler: held)
    let inline = BaseFramePrefetcher(store: store, scheduler: InlineDecodeScheduler())
    slow.request((0..<2).map { BaseFrameRef(animation: .idleForward, index: $0) })
    inline.request((4..<6).map { BaseFrameRef(animation: .idleForward, index: $0) })
    // The inline request returned with its own window in, though the other's worker waits.
    #expect(store.decodedFrame(4, of: .idleForward) != nil)
    #expect(store.decodedFrame(5, of: .idleForward) != nil)
    #expect(store.decodedFrame(0, of: .idleForward) == nil && !store.isPrefetchIdle)
    held.runHeld()
    #expect((0..<2).allSatisfy { store.decodedFrame($0, of: .idleForward) != nil })
    #expect((4..<6).allSatisfy { store.decodedFrame($0, of: .idleForward) != nil })
    #expect(store.isPrefetchIdle)
  }

  /// A codec that passes a gate before each decode: a test holds a decode inside it.
  final class GatedCodec: ImageCodec {
    let gate: Gate
    let codec: any ImageCodec
    init(_ codec: any ImageCodec, gate: Gate) {
      self.codec = codec
      self.gate = gate
    }
    func decode(_ data: Data, limits: DecodeLimits) throws(LIVAMediaError) -> RGBAImage {
      gate.pass()
      return try codec.decode(data, limits: limits)
    }
    func encode(_ image: RGBAImage, as format: ImageFormat, quality: Float?)
      throws(LIVAMediaError) -> Data
    {
      try codec.encode(image, as: format, quality: quality)
    }
  }

  @Test(
    "an inline request returns with its window decoded even while another thread drains the same prefetcher"
  )
  func inlineRequestWaitsForTheDrainUnderWay() throws {
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let gate = Gate(open: true)
    let store = try BaseFrameStore(
      root: root, codec: GatedCodec(codec, gate: gate), memoryByteLimit: 32 * 20 * 4 * 8)
    try download(store, .idleForward, frames(8))
    gate.close()
    let prefetcher = BaseFramePrefetcher(store: store, scheduler: InlineDecodeScheduler())
    let firstWindow = (0..<2).map { BaseFrameRef(animation: .idleForward, index: $0) }
    let secondWindow = (4..<6).map { BaseFrameRef(animation: .idleForward, index: $0) }
    // Another thread's request is inside its drain, held in the codec.
    let first = EventLog<Bool>()
    Thread {
      prefetcher.request(firstWindow)
      first.append(true)
    }.start()
    #expect(gate.waitEntered(1))
    // The next request, from this side: what it sees when it returns.
    let second = EventLog<Bool>()
    Thread {
      prefetcher.request(secondWindow)
      second.append(
        store.decodedFrame(4, of: .idleForward) != nil
          && store.decodedFrame(5, of: .idleForward) != nil)
    }.start()
    // Opened once the second window is asked for (or the request already returned).
    let deadline = Date(timeIntervalSinceNow: 10)
    while store.prefetching.withLock({ $0.pending.isEmpty }), second.all.isEmpty,
      Date() < deadline
    {
      Thread.sleep(forTimeInterval: 0.001)
    }
    gate.open()
    #expect(second.wait { !$0.isEmpty })
    #expect(second.all == [true], "returned before its window was in memory")
    #expect(first.wait { !$0.isEmpty })
  }
}
