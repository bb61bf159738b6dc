import Foundation
import LIVAProtocol
import LIVATestSupport
import Locking
import Testing

@testable import LIVAMedia

/// The H.264 playback form: its file, the decode plan, the FFmpeg codec, and the store playing
/// from it (and from the images when it cannot).
@Suite("Playback form")
struct PlaybackFormTests {
  static let codecAvailable = BaseFrameStore.systemVideoCodec != nil
  /// Under LIVA_REQUIRE_ALL_TOOLS=1 (CI) the codec must be there: a missing one fails.
  static let codecRequired = requireAllTools

  /// A frame with what a video codec is tested on: smooth gradients, an edge, and a shape that
  /// moves from frame to frame.
  static func frame(_ index: Int, width: Int = 96, height: Int = 64) -> RGBAImage {
    var image = RGBAImage(width: width, height: height)
    for y in 0..<height {
      for x in 0..<width {
        let inDisc = (x - 20 - index * 3) * (x - 20 - index * 3) + (y - 32) * (y - 32) < 144
        image[x, y] =
          inDisc
          ? RGBA(230, 60, 40, 255)
          : RGBA(
            UInt8(40 + x), UInt8(30 + y * 2), UInt8(x > width / 2 ? 180 : 90), 255)
      }
    }
    return image
  }

  /// Peak signal-to-noise ratio of `b` against `a` over R, G and B, in dB. These small frames
  /// with hard coloured edges measure ~31.5 dB through 4:2:0 (a 1280×768 avatar 39–45 dB);
  /// a decoder that swaps channels or misplaces blocks measures under 20.
  static func psnr(_ a: RGBAImage, _ b: RGBAImage) -> Double {
    var squared = 0.0
    var count = 0
    for index in a.pixels.indices where index % 4 != 3 {
      let difference = Double(a.pixels[index]) - Double(b.pixels[index])
      squared += difference * difference
      count += 1
    }
    let mean = squared / Double(count)
    return mean == 0 ? .infinity : 10 * log10(255 * 255 / mean)
  }

  func encode(_ frames: [RGBAImage], keyInterval: Int = 4) throws -> PlaybackForm {
    let codec = try #require(BaseFrameStore.systemVideoCodec)
    let encoder = try codec.makeEncoder(
      width: frames[0].width, height: frames[0].height, keyInterval: keyInterval, crf: 18)
    for frame in frames { try encoder.push(frame) }
    return try PlaybackForm(
      width: frames[0].width, height: frames[0].height, keyInterval: keyInterval,
      packets: try encoder.finish())
  }

  /// Decodes `order` through one decoder, following the form's plan as the store does.
  func decode(_ form: PlaybackForm, _ order: [Int]) throws -> [RGBAImage] {
    let codec = try #require(BaseFrameStore.systemVideoCodec)
    let decoder = try codec.makeDecoder(width: form.width, height: form.height)
    var last: Int?
    var images: [RGBAImage] = []
    for index in order {
      images.append(try #require(try form.decode(index, after: &last, with: decoder)))
    }
    return images
  }

  @Test("the plan goes on from the last frame within a key interval, else starts at its key")
  func plan() throws {
    let keys = (0..<12).map { $0 % 4 == 0 }
    var packets: [(packet: Data, isKey: Bool)] = []
    for key in keys { packets.append((Data([0, 0, 1, 0x65]), key)) }
    let form = try PlaybackForm(width: 2, height: 2, keyInterval: 4, packets: packets)
    #expect(form.decodePlan(last: nil, to: 0) == (true, 0...0))
    #expect(form.decodePlan(last: nil, to: 6) == (true, 4...6))
    #expect(form.decodePlan(last: 4, to: 6) == (false, 5...6))
    #expect(form.decodePlan(last: 5, to: 6) == (false, 6...6))
    // Backwards, the same frame again, or across a key frame: from the key frame.
    #expect(form.decodePlan(last: 6, to: 5) == (true, 4...5))
    #expect(form.decodePlan(last: 6, to: 6) == (true, 4...6))
    #expect(form.decodePlan(last: 2, to: 9) == (true, 8...9))
    #expect(form.decodePlan(last: 3, to: 4) == (true, 4...4))
  }

  @Test("a damaged file is refused: any byte changed, cut short, or a key frame missing")
  func damage() throws {
    let packets = (0..<6).map { (Data([0, 0, 1, UInt8($0)]), $0 % 3 == 0) }
    let form = try PlaybackForm(width: 4, height: 2, keyInterval: 3, packets: packets)
    #expect(try PlaybackForm(parsing: form.bytes) == form)
    #expect(form.frameCount == 6 && form.keys == [true, false, false, true, false, false])
    for offset in stride(from: 0, to: form.bytes.count, by: 3) {
      var bytes = form.bytes
      bytes[offset] ^= 0x40
      #expect(throws: LIVAMediaError.self) { try PlaybackForm(parsing: bytes) }
    }
    for length in [0, 7, 31, form.bytes.count - 1] {
      #expect(throws: LIVAMediaError.self) { try PlaybackForm(parsing: form.bytes.prefix(length)) }
    }
    var extra = form.bytes
    extra.append(0)
    #expect(throws: LIVAMediaError.self) { try PlaybackForm(parsing: extra) }
    let noKey = packets.enumerated().map { ($0.element.0, $0.offset == 0) }
    #expect(throws: LIVAMediaError.self) {
      try PlaybackForm(width: 4, height: 2, keyInterval: 3, packets: noKey)
    }
  }

  @Test(
    "frames come back close to the images, the same in any order of access",
    .enabled(if: codecAvailable || codecRequired))
  func roundTrip() throws {
    try requireTool(
      Self.codecAvailable, "the FFmpeg of scripts/setup-video.sh")
    let frames = (0..<10).map { Self.frame($0) }
    let form = try encode(frames)
    #expect(form.frameCount == 10)
    #expect(form.keys == (0..<10).map { $0 % 4 == 0 })
    let inOrder = try decode(form, Array(0..<10))
    for (index, image) in inOrder.enumerated() {
      #expect(image.width == 96 && image.height == 64)
      #expect(image.pixels.enumerated().allSatisfy { $0.offset % 4 != 3 || $0.element == 255 })
      let quality = Self.psnr(frames[index], image)
      #expect(quality > 30, "frame \(index): \(quality) dB")
    }
    // Generated orders (jumps back, repeats, across key frames): each frame is the same
    // picture as in order, bit for bit.
    var generator = SplitMix64(seed: 20_261_128)
    for _ in 0..<5 {
      let order = (0..<12).map { _ in Int.random(in: 0..<10, using: &generator) }
      let images = try decode(form, order)
      for (index, image) in zip(order, images) {
        #expect(image == inOrder[index], "frame \(index) in order \(order)")
      }
    }
  }

  @Test(
    "the codec refuses odd sizes and frames of another size",
    .enabled(if: codecAvailable || codecRequired))
  func refusals() throws {
    try requireTool(
      Self.codecAvailable, "the FFmpeg of scripts/setup-video.sh")
    let codec = try #require(BaseFrameStore.systemVideoCodec)
    #expect(throws: LIVAMediaError.self) {
      try codec.makeEncoder(width: 95, height: 64, keyInterval: 4, crf: 18)
    }
    let encoder = try codec.makeEncoder(width: 96, height: 64, keyInterval: 4, crf: 18)
    #expect(throws: LIVAMediaError.self) { try encoder.push(Self.frame(0, width: 64)) }
    // A packet of another animation's size gives no picture of this decoder's.
    let other = try encode([Self.frame(0, width: 64, height: 64)])
    let decoder = try codec.makeDecoder(width: 96, height: 64)
    var spare: [UInt8]?
    #expect(throws: LIVAMediaError.self) {
      try other.bytes.withUnsafeBytes { bytes in
        Result { () throws(LIVAMediaError) in
          try decoder.decode(
            UnsafeRawBufferPointer(rebasing: bytes[other.packets[0]]), picture: true,
            reusing: &spare)
        }
      }.get()
    }
  }

  func download(_ store: BaseFrameStore, _ animation: AnimationName, _ images: [RGBAImage])
    throws
  {
    try store.beginDownload(animation, frames: images.count)
    for (index, image) in images.enumerated() {
      try store.storeFrame(SystemImageCodec().encode(image, as: .png), index: index, of: animation)
    }
    try store.finishDownload(animation, version: "1")
  }

  @Test(
    "the store plays from the form once made, and from the images when it is damaged",
    .enabled(if: codecAvailable || codecRequired))
  func store() throws {
    try requireTool(
      Self.codecAvailable, "the FFmpeg of scripts/setup-video.sh")
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let talking = try AnimationName(parsing: "talking_1_s_talking_1_e")
    let frames = (0..<12).map { Self.frame($0) }
    let store = try BaseFrameStore(
      root: root, videoCodec: BaseFrameStore.systemVideoCodec, makesPlaybackForms: false)
    try download(store, talking, frames)
    #expect(!store.hasPlaybackForm(talking))
    let before = store.statistics.diskBytes
    #expect(try store.makePlaybackForm(talking))
    #expect(store.hasPlaybackForm(talking))
    let folder = try #require(
      FileManager.default.contentsOfDirectory(
        at: root.appendingPathComponent(talking.rawValue), includingPropertiesForKeys: nil
      ).first { $0.lastPathComponent.hasPrefix("v-") })
    let file = folder.appendingPathComponent(BaseFrameStore.playbackFormFile)
    let formBytes = BaseFrameStore.fileSize(file)
    #expect(formBytes > 0 && store.statistics.diskBytes == before + formBytes)

    // Played from the form: close to the images, not equal to them (it is lossy).
    for index in [0, 1, 2, 7, 3, 11] {
      let image = try store.frame(index, of: talking)
      #expect(Self.psnr(frames[index], image) > 30)
      #expect(image != frames[index])
    }
    #expect(store.statistics.playbackFrames == 6)

    // A reopened store finds the form; damaged, it is deleted and the images play, exactly.
    var bytes = try Data(contentsOf: file)
    bytes[bytes.count / 2] ^= 0xFF
    try bytes.write(to: file)
    let reopened = try BaseFrameStore(
      root: root, videoCodec: BaseFrameStore.systemVideoCodec, makesPlaybackForms: false)
    #expect(reopened.statistics.diskBytes == before + formBytes)
    #expect(try reopened.frame(5, of: talking) == frames[5])
    #expect(reopened.statistics.playbackFormFailures == 1)
    #expect(reopened.statistics.lastPlaybackFormError?.code == .corruptData)
    #expect(reopened.statistics.diskBytes == before)
    #expect(!FileManager.default.fileExists(atPath: file.path))
    #expect(try reopened.frame(6, of: talking) == frames[6])
    #expect(reopened.statistics.playbackFrames == 0)
    // Made again, it plays again.
    #expect(try reopened.makePlaybackForm(talking))
    #expect(Self.psnr(frames[8], try reopened.frame(8, of: talking)) > 30)
    #expect(reopened.statistics.playbackFrames == 1)
  }

  @Test(
    "idle frame 0 is never taken from the form: it is kept raw from its image, the first frame",
    .enabled(if: codecAvailable || codecRequired))
  func posterFromImage() throws {
    try requireTool(Self.codecAvailable, "the FFmpeg of scripts/setup-video.sh")
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let frames = (0..<4).map { Self.frame($0) }
    let store = try BaseFrameStore(
      root: root, videoCodec: BaseFrameStore.systemVideoCodec, makesPlaybackForms: false)
    try download(store, .idleForward, frames)
    #expect(try store.makePlaybackForm(.idleForward))
    #expect(try store.frame(0, of: .idleForward) == frames[0])
    #expect(store.statistics.playbackFrames == 0)
    let reopened = try BaseFrameStore(
      root: root, videoCodec: BaseFrameStore.systemVideoCodec, makesPlaybackForms: false)
    #expect(reopened.decodedOrKeptFrame(0, of: .idleForward) == frames[0])
    #expect(Self.psnr(frames[1], try reopened.frame(1, of: .idleForward)) > 30)
    #expect(reopened.statistics.playbackFrames == 1)
  }

  @Test(
    "frames that cannot have a form (transparency, odd size) play from their images",
    .enabled(if: codecAvailable || codecRequired))
  func refusedAnimations() throws {
    try requireTool(
      Self.codecAvailable, "the FFmpeg of scripts/setup-video.sh")
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try BaseFrameStore(
      root: root, videoCodec: BaseFrameStore.systemVideoCodec, makesPlaybackForms: false)
    var translucent = (0..<3).map { Self.frame($0) }
    translucent[2][5, 5] = RGBA(1, 2, 3, 200)
    try download(store, .idleForward, translucent)
    let odd = (0..<3).map { Self.frame($0, width: 95) }
    try download(store, .idleBack, odd)
    // A frame damaged past its header: making the form fails once, and is not tried again.
    let talking = try AnimationName(parsing: "talking_1_s_talking_1_e")
    try store.beginDownload(talking, frames: 2)
    let whole = try SystemImageCodec().encode(Self.frame(0), as: .png)
    try store.storeFrame(whole, index: 0, of: talking)
    try store.storeFrame(whole.prefix(whole.count / 2), index: 1, of: talking)
    try store.finishDownload(talking, version: "1")
    #expect(throws: LIVAMediaError.self) { try store.makePlaybackForm(talking) }
    #expect(try store.makePlaybackForm(talking) == false)
    #expect(store.makePlaybackForms().isEmpty)
    #expect(!store.hasPlaybackForm(.idleForward) && !store.hasPlaybackForm(.idleBack))
    #expect(!store.hasPlaybackForm(talking))
    #expect(try store.frame(2, of: .idleForward) == translucent[2])
    #expect(try store.frame(1, of: .idleBack) == odd[1])
    #expect(store.statistics.playbackFrames == 0)
  }

  @Test(
    "a store making forms itself makes them after a download, on its own queue",
    .enabled(if: codecAvailable || codecRequired))
  func background() async throws {
    try requireTool(
      Self.codecAvailable, "the FFmpeg of scripts/setup-video.sh")
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try BaseFrameStore(root: root, videoCodec: BaseFrameStore.systemVideoCodec)
    try download(store, .idleForward, (0..<4).map { Self.frame($0) })
    // The queue is serial: work queued after the download's runs after its forms.
    await withCheckedContinuation { done in store.formQueue.async { done.resume() } }
    #expect(store.hasPlaybackForm(.idleForward))
  }

  @Test("frames leaving memory leave their buffers to the next decodes")
  func recycledBuffers() throws {
    let recycled = Locked<[RGBAImage]>([])
    let frames = DecodedFrames(
      byteLimit: 3 * 96 * 64 * 4,
      recycle: { images in
        recycled.withLock { $0 += images }
      })
    for index in 0..<5 {
      frames.insert(
        Self.frame(index),
        for: DecodedFrames.Key(
          frame: BaseFrameRef(animation: .idleForward, index: index), version: 1))
    }
    #expect(recycled.withLock { $0 } == [Self.frame(0), Self.frame(1)])
    frames.removeAll()
    #expect(recycled.withLock { $0.count } == 5)
  }
}
