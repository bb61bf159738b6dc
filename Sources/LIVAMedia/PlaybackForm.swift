import Foundation

/// The playback form of one animation version: its frames as H.264 packets, made once from the
/// downloaded images (``BaseFrameStore/makePlaybackForm(_:)``) and kept beside them as
/// `playback.h264v`, so that playing a frame decodes a video frame instead of a PNG.
///
/// Layout (integers little-endian): the magic `LIVAH264`, then u32 width, height, frame count
/// and key-frame interval, a u64 FNV-1a checksum of those four and everything after it, a table of one u32
/// packet size and one u32 flags word (bit 0: key frame) per frame, then the packets one after
/// another. Frame 0 and every `keyInterval`-th frame are key frames. A file that fails any
/// check is damaged: the store deletes it and decodes the images instead.
public struct PlaybackForm: Sendable, Equatable {
  /// Frame width in pixels.
  public let width: Int
  /// Frame height in pixels.
  public let height: Int
  /// Frames between key frames.
  public let keyInterval: Int
  /// Each frame's packet: its range in ``bytes``.
  public let packets: [Range<Int>]
  /// Whether each frame is a key frame.
  public let keys: [Bool]
  /// The whole file.
  public let bytes: Data

  static let magic = Array("LIVAH264".utf8)
  static let headerSize = 8 + 16 + 8

  /// The number of frames.
  public var frameCount: Int { packets.count }

  /// Builds the file for `packets` (one per frame, in order).
  public init(
    width: Int, height: Int, keyInterval: Int, packets frames: [(packet: Data, isKey: Bool)]
  ) throws(LIVAMediaError) {
    var body = [UInt8]()
    body.reserveCapacity(frames.count * 8 + frames.reduce(0) { $0 + $1.packet.count })
    func u32(_ value: Int, into bytes: inout [UInt8]) {
      for shift in stride(from: 0, to: 32, by: 8) {
        bytes.append(UInt8(truncatingIfNeeded: value >> shift))
      }
    }
    for frame in frames {
      u32(frame.packet.count, into: &body)
      u32(frame.isKey ? 1 : 0, into: &body)
    }
    for frame in frames { body.append(contentsOf: frame.packet) }
    var file = Self.magic
    for value in [width, height, frames.count, keyInterval] { u32(value, into: &file) }
    let sum = Self.checksum(body, continuing: Self.checksum(file[8...]))
    for shift in stride(from: 0, to: 64, by: 8) {
      file.append(UInt8(truncatingIfNeeded: sum >> shift))
    }
    file += body
    try self.init(parsing: Data(file))
  }

  /// Reads a file, checking everything: the magic, the sizes, the checksum, a key frame at
  /// frame 0 and at every `keyInterval`-th frame, packets that fill the rest exactly.
  public init(parsing data: Data) throws(LIVAMediaError) {
    // Read in place (a form is a few hundred KB to a few MB: no copies).
    let parsed = data.withUnsafeBytes {
      bytes -> Result<(Int, Int, Int, [Range<Int>], [Bool]), LIVAMediaError> in
      func fail(_ why: String) -> Result<(Int, Int, Int, [Range<Int>], [Bool]), LIVAMediaError> {
        .failure(LIVAMediaError(.corruptData, "playback form: \(why)"))
      }
      guard bytes.count >= Self.headerSize, bytes.prefix(8).elementsEqual(Self.magic) else {
        return fail("no LIVAH264 header")
      }
      func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
      let (width, height, count, interval) = (u32(8), u32(12), u32(16), u32(20))
      guard (1...8192).contains(width), (1...8192).contains(height),
        (1...BaseFrameStore.maximumFrameCount).contains(count), interval >= 1
      else { return fail("sizes out of range") }
      let sum = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[24 + $1]) << (8 * $1) }
      let tableEnd = Self.headerSize + count * 8
      guard bytes.count >= tableEnd,
        Self.checksum(bytes[Self.headerSize...], continuing: Self.checksum(bytes[8..<24]))
          == sum
      else { return fail("checksum mismatch") }
      var packets: [Range<Int>] = []
      var keys: [Bool] = []
      var offset = tableEnd
      for index in 0..<count {
        let size = u32(Self.headerSize + index * 8)
        let isKey = u32(Self.headerSize + index * 8 + 4) & 1 == 1
        guard size > 0, offset + size <= bytes.count else {
          return fail("packet \(index) overruns")
        }
        guard isKey || index % interval != 0 else { return fail("frame \(index) is no key frame") }
        packets.append(offset..<offset + size)
        keys.append(isKey)
        offset += size
      }
      guard offset == bytes.count else { return fail("bytes after the last packet") }
      return .success((width, height, interval, packets, keys))
    }
    let (width, height, interval, packets, keys) = try parsed.get()
    self.width = width
    self.height = height
    self.keyInterval = interval
    self.packets = packets
    self.keys = keys
    self.bytes = data
  }

  /// FNV-1a, 64 bits.
  /// FNV-1a of `bytes` after a prefix whose hash is `seed` (one hash over several ranges).
  static func checksum(
    _ bytes: some Sequence<UInt8>, continuing seed: UInt64 = 0xcbf2_9ce4_8422_2325
  ) -> UInt64 {
    var hash = seed
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return hash
  }

  /// What a decoder must do to give frame `index` when the last frame it decoded is `last`
  /// (nil: none since it was opened or reset): go on from `last` when `index` is after it
  /// with no key frame between, else reset and start at the key frame at or before `index`.
  /// Every frame of `frames` is decoded; only the last one's picture is needed.
  public func decodePlan(last: Int?, to index: Int) -> (reset: Bool, frames: ClosedRange<Int>) {
    var key = index
    while key > 0, !keys[key] { key -= 1 }
    if let last, last < index, last >= key { return (false, last + 1...index) }
    return (true, key...index)
  }

  /// Frame `index` from `decoder`, whose last frame of this form is `last` (nil: none since it
  /// was opened or reset): the frames of ``decodePlan(last:to:)`` go in, and `last` follows
  /// them. `buffer` is asked once, just before the wanted frame, for a buffer to reuse.
  public func decode(
    _ index: Int, after last: inout Int?, with decoder: any VideoFrameDecoder,
    buffer: () -> [UInt8]? = { nil }
  ) throws(LIVAMediaError) -> RGBAImage? {
    let plan = decodePlan(last: last, to: index)
    if plan.reset {
      decoder.reset()
      last = nil
    }
    var image: RGBAImage?
    for frame in plan.frames {
      var spare = frame == index ? buffer() : nil
      image = try decode(frame, with: decoder, picture: frame == index, reusing: &spare)
      last = frame
    }
    return image
  }

  /// Feeds frame `frame`'s packet to `decoder`; see
  /// ``VideoFrameDecoder/decode(_:picture:reusing:)``.
  public func decode(
    _ frame: Int, with decoder: any VideoFrameDecoder, picture: Bool,
    reusing buffer: inout [UInt8]?
  ) throws(LIVAMediaError) -> RGBAImage? {
    try bytes.withUnsafeBytes { bytes in
      Result { () throws(LIVAMediaError) in
        try decoder.decode(
          UnsafeRawBufferPointer(rebasing: bytes[packets[frame]]), picture: picture,
          reusing: &buffer)
      }
    }.get()
  }

  /// How close a decoded `picture` is to the `image` it was made from: the peak
  /// signal-to-noise ratio over red, green and blue, in dB (infinity when equal); 0 when
  /// their sizes differ or any pixel of `picture` is not opaque.
  public static func fidelity(of picture: RGBAImage, to image: RGBAImage) -> Double {
    guard picture.width == image.width, picture.height == image.height else { return 0 }
    var squared: UInt64 = 0
    var alpha: UInt8 = 0xFF
    picture.pixels.withUnsafeBufferPointer { a in
      image.pixels.withUnsafeBufferPointer { b in
        var index = 0
        while index + 3 < a.count {
          for channel in index..<(index + 3) {
            let difference = Int(a[channel]) - Int(b[channel])
            squared &+= UInt64(difference * difference)
          }
          alpha &= a[index + 3]
          index += 4
        }
      }
    }
    guard alpha == 0xFF else { return 0 }
    guard squared > 0 else { return .infinity }
    let mean = Double(squared) / Double(picture.width * picture.height * 3)
    return 10 * log10(255 * 255 / mean)
  }
}
