import Foundation

/// The exact length of an MP3 stream, read from its frame headers without decoding audio.
///
/// Handles MPEG-1, MPEG-2 and MPEG-2.5 Layer III; skips ID3v2 tags at the start and ID3v1
/// and APEv2 tags at the end; reads a Xing/Info (or VBRI) header in the first frame and,
/// when present, the LAME extension's encoder delay and padding, so that ``sampleCount``
/// is the number of samples the encoder was given (gapless).
public struct MP3Timing: Hashable, Sendable {
  /// The MPEG audio version of the stream.
  public enum Version: String, Hashable, Sendable {
    /// MPEG-1 (32, 44.1, 48 kHz; 1152 samples per frame).
    case mpeg1
    /// MPEG-2 LSF (16, 22.05, 24 kHz; 576 samples per frame).
    case mpeg2
    /// MPEG-2.5 (8, 11.025, 12 kHz; 576 samples per frame).
    case mpeg25
  }

  /// The MPEG version of the first audio frame.
  public var version: Version
  /// Samples per second per channel.
  public var sampleRate: Int
  /// 1 (mono) or 2.
  public var channelCount: Int
  /// 1152 for MPEG-1, 576 otherwise.
  public var samplesPerFrame: Int
  /// Complete audio frames found (a Xing/Info/VBRI frame is not counted: it holds no audio).
  public var frameCount: Int
  /// Samples the encoder added before the audio (LAME tag), when known.
  public var encoderDelay: Int?
  /// Samples the encoder added after the audio (LAME tag), when known.
  public var encoderPadding: Int?
  /// Whether the first frame is a Xing/Info or VBRI header frame.
  public var hasInfoFrame: Bool
  /// Bytes at the end that are not a complete frame (a truncated last frame or junk).
  public var trailingBytes: Int

  /// Samples per channel the stream decodes to, minus the encoder's delay and padding when
  /// the LAME tag gives them: the length of the original audio.
  public var sampleCount: Int {
    max(0, frameCount * samplesPerFrame - (encoderDelay ?? 0) - (encoderPadding ?? 0))
  }

  /// ``sampleCount`` in seconds.
  public var duration: Double { Double(sampleCount) / Double(sampleRate) }

  /// Parses `data`. Throws ``LIVAMediaError/Code-swift.struct/notMP3`` when no run of valid
  /// Layer III frames is found (garbage, other layers, free-format streams).
  public init(parsing data: Data) throws(LIVAMediaError) {
    let bytes = [UInt8](data)
    var start = Self.skipID3v2(bytes)
    let end = Self.endBeforeTrailingTags(bytes, start: start)
    guard let first = Self.firstFrame(bytes, from: start, end: end) else {
      throw LIVAMediaError(
        .notMP3, "no MPEG Layer III frame found in \(bytes.count) bytes", source: "mp3",
        offset: start)
    }
    start = first.offset
    let header = first.header
    version = header.version
    sampleRate = header.sampleRate
    channelCount = header.channelCount
    samplesPerFrame = header.samplesPerFrame

    // The first frame may be a Xing/Info/VBRI header frame.
    let info = Self.infoFrame(bytes, at: start, header: header)
    hasInfoFrame = info != nil
    encoderDelay = info?.delay
    encoderPadding = info?.padding

    var offset = start
    var frames = 0
    while offset + 4 <= end, let next = FrameHeader(bytes, at: offset),
      next.sampleRate == header.sampleRate, next.version == header.version,
      offset + next.length <= end
    {
      frames += 1
      offset += next.length
    }
    frameCount = frames - (info != nil ? 1 : 0)
    trailingBytes = end - offset
    guard frames > 0 else {
      throw LIVAMediaError(
        .notMP3, "the first MPEG frame is incomplete", source: "mp3", offset: start)
    }
  }

  // MARK: - Frame headers

  struct FrameHeader: Equatable {
    var version: Version
    var sampleRate: Int
    var bitrate: Int  // bits per second
    var padding: Bool
    var hasCRC: Bool
    var channelCount: Int
    var samplesPerFrame: Int { version == .mpeg1 ? 1152 : 576 }
    var length: Int {
      (version == .mpeg1 ? 144 : 72) * bitrate / sampleRate + (padding ? 1 : 0)
    }
    var sideInfoSize: Int {
      switch (version, channelCount) {
      case (.mpeg1, 1): 17
      case (.mpeg1, _): 32
      case (_, 1): 9
      default: 17
      }
    }

    private static let mpeg1Bitrates = [
      0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320,
    ]
    private static let mpeg2Bitrates = [
      0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160,
    ]

    /// Parses a Layer III header at `offset`, or returns nil.
    init?(_ bytes: [UInt8], at offset: Int) {
      guard offset >= 0, offset + 4 <= bytes.count else { return nil }
      let b1 = bytes[offset + 1]
      let b2 = bytes[offset + 2]
      let b3 = bytes[offset + 3]
      guard bytes[offset] == 0xFF, b1 & 0xE0 == 0xE0 else { return nil }
      switch (b1 >> 3) & 0x03 {
      case 0: version = .mpeg25
      case 2: version = .mpeg2
      case 3: version = .mpeg1
      default: return nil
      }
      guard (b1 >> 1) & 0x03 == 1 else { return nil }  // Layer III only
      hasCRC = b1 & 0x01 == 0
      let bitrateIndex = Int(b2 >> 4)
      let rateIndex = Int((b2 >> 2) & 0x03)
      guard (1...14).contains(bitrateIndex), rateIndex < 3 else { return nil }  // no free format
      let table = version == .mpeg1 ? Self.mpeg1Bitrates : Self.mpeg2Bitrates
      bitrate = table[bitrateIndex] * 1000
      let base = [44100, 48000, 32000][rateIndex]
      sampleRate =
        switch version {
        case .mpeg1: base
        case .mpeg2: base / 2
        case .mpeg25: base / 4
        }
      padding = (b2 >> 1) & 0x01 == 1
      channelCount = b3 >> 6 == 3 ? 1 : 2
    }
  }

  // MARK: - Finding frames

  /// The first offset in `start..<end` holding a frame that is followed by another frame of
  /// the same stream (or ends at `end`, or fewer than 4 bytes before it, too few for another
  /// header): a lone 0xFF 0xFx in junk is not enough.
  private static func firstFrame(_ bytes: [UInt8], from start: Int, end: Int)
    -> (offset: Int, header: FrameHeader)?
  {
    let searchLimit = min(end, start + 64 * 1024)
    var offset = start
    while offset + 4 <= searchLimit {
      if let header = FrameHeader(bytes, at: offset) {
        let next = offset + header.length
        // The last frame, or the last whole one: the 1 to 3 bytes after it cannot hold the
        // next header to confirm it, and are trailing bytes like any truncated last frame.
        if next <= end, end - next < 4 {
          return (offset, header)
        }
        if next + 4 <= end, let following = FrameHeader(bytes, at: next),
          following.sampleRate == header.sampleRate, following.version == header.version
        {
          return (offset, header)
        }
      }
      offset += 1
    }
    return nil
  }

  /// Skips any ID3v2 tags at `bytes`' start.
  private static func skipID3v2(_ bytes: [UInt8]) -> Int {
    var offset = 0
    while offset + 10 <= bytes.count, bytes[offset] == 0x49, bytes[offset + 1] == 0x44,
      bytes[offset + 2] == 0x33
    {
      let size = bytes[(offset + 6)..<(offset + 10)].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
      let footer = bytes[offset + 5] & 0x10 != 0 ? 10 : 0
      offset = min(bytes.count, offset + 10 + size + footer)
    }
    return offset
  }

  /// The end of the audio, before an ID3v1 tag and/or an APEv2 tag.
  private static func endBeforeTrailingTags(_ bytes: [UInt8], start: Int) -> Int {
    var end = bytes.count
    if end - start >= 128, bytes[end - 128] == 0x54, bytes[end - 127] == 0x41,
      bytes[end - 126] == 0x47
    {
      end -= 128
    }
    if end - start >= 32, bytes[(end - 32)..<(end - 24)].elementsEqual("APETAGEX".utf8) {
      let size = bytes[(end - 20)..<(end - 16)].reversed().reduce(0) { $0 << 8 | Int($1) }
      let hasHeader = bytes[end - 9] & 0x80 != 0
      end = max(start, end - size - (hasHeader ? 32 : 0))
    }
    return end
  }

  // MARK: - Xing / Info / VBRI and LAME

  private static func infoFrame(_ bytes: [UInt8], at offset: Int, header: FrameHeader)
    -> (delay: Int?, padding: Int?)?
  {
    let frameEnd = min(bytes.count, offset + header.length)
    func tag(_ name: String, at position: Int) -> Bool {
      position + 4 <= frameEnd && bytes[position..<(position + 4)].elementsEqual(name.utf8)
    }
    func uint32(_ position: Int) -> Int {
      bytes[position..<(position + 4)].reduce(0) { $0 << 8 | Int($1) }
    }
    // Encoders disagree on whether the CRC shifts the tag; accept both places.
    let candidates = [4 + header.sideInfoSize, 4 + header.sideInfoSize + 2]
    for xing in candidates where tag("Xing", at: xing) || tag("Info", at: xing) {
      guard xing + 8 <= frameEnd else { return (nil, nil) }
      let flags = uint32(xing + 4)
      var lame = xing + 8
      if flags & 0x1 != 0 { lame += 4 }
      if flags & 0x2 != 0 { lame += 4 }
      if flags & 0x4 != 0 { lame += 100 }
      if flags & 0x8 != 0 { lame += 4 }
      // The LAME extension: 9-byte encoder string, then delay/padding 12+12 bits at +21.
      guard lame + 24 <= frameEnd,
        bytes[lame..<(lame + 4)].allSatisfy({
          (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
        })
      else { return (nil, nil) }
      let delay = Int(bytes[lame + 21]) << 4 | Int(bytes[lame + 22]) >> 4
      let padding = Int(bytes[lame + 22] & 0x0F) << 8 | Int(bytes[lame + 23])
      return (delay, padding)
    }
    if tag("VBRI", at: 4 + 32) {
      return (nil, nil)
    }
    return nil
  }
}
