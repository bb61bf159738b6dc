import Foundation

/// The two ways an H.264 stream is framed, and the conversion between them.
///
/// - **Annex B** (what the playback form stores, what x264 and FFmpeg write): each NAL unit
///   follows a start code, `00 00 01` or `00 00 00 01`; the parameter sets (SPS and PPS) travel
///   in the stream, before each key frame.
/// - **Length-prefixed** (what VideoToolbox and MP4 files take and give): each NAL unit
///   follows its length, big-endian, in 1, 2 or 4 bytes; the parameter sets travel beside the
///   stream, in a format description.
///
/// Pure and platform-neutral: the Apple codec (`VideoToolboxCodec`) is a thin shell over it,
/// and it is tested here against the packets of the Linux encoder.
public enum H264Stream {
  /// A NAL unit's type (the low five bits of its first byte).
  public static func type(ofUnitStartingWith byte: UInt8) -> UInt8 { byte & 0x1F }

  /// Sequence parameter set.
  public static let spsType: UInt8 = 7
  /// Picture parameter set.
  public static let ppsType: UInt8 = 8
  /// A slice of an IDR picture (a key frame).
  public static let idrType: UInt8 = 5
  /// Access unit delimiter: framing only, dropped when length-prefixing.
  public static let delimiterType: UInt8 = 9

  /// The NAL units of an Annex B packet, as ranges of `bytes` (start codes and the zero bytes
  /// around them excluded), in order. Bytes before the first start code are not a unit.
  public static func annexBUnits(_ bytes: UnsafeRawBufferPointer) -> [Range<Int>] {
    var units: [Range<Int>] = []
    var start: Int?
    var index = 0
    let count = bytes.count
    while index + 2 < count {
      // A start code: two zero bytes and a one. Emulation prevention keeps this sequence out
      // of a unit's payload.
      if bytes[index + 2] > 1 {
        index += 3
        continue
      }
      guard bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 else {
        index += 1
        continue
      }
      if let start { units.append(start..<trimmingZeros(bytes, start, index)) }
      start = index + 3
      index += 3
    }
    if let start { units.append(start..<trimmingZeros(bytes, start, count)) }
    return units.filter { !$0.isEmpty }
  }

  /// The end of a unit that runs from `start` up to `end`, without its trailing zero bytes
  /// (the first byte of a four-byte start code, or `trailing_zero_8bits`).
  private static func trimmingZeros(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int)
    -> Int
  {
    var end = end
    while end > start, bytes[end - 1] == 0 { end -= 1 }
    return end
  }

  /// One Annex B packet taken apart for a length-prefixed decoder.
  public struct LengthPrefixedPacket: Sendable, Equatable {
    /// The sequence parameter sets in the packet, in order (a key frame's usually one).
    public var sequenceParameterSets: [Data]
    /// The picture parameter sets in the packet, in order.
    public var pictureParameterSets: [Data]
    /// The other units (slices, SEI), each after its 4-byte big-endian length; access unit
    /// delimiters dropped.
    public var sample: Data
    /// Whether the packet holds an IDR slice.
    public var isKey: Bool
  }

  /// Takes an Annex B packet apart: parameter sets out, the rest length-prefixed (4 bytes).
  /// Throws for a packet with no unit, or a unit longer than a 4-byte length can say.
  public static func lengthPrefixed(annexB bytes: UnsafeRawBufferPointer)
    throws(LIVAMediaError) -> LengthPrefixedPacket
  {
    let units = annexBUnits(bytes)
    guard !units.isEmpty else {
      throw LIVAMediaError(.corruptData, "H.264: no NAL unit in a \(bytes.count)-byte packet")
    }
    var packet = LengthPrefixedPacket(
      sequenceParameterSets: [], pictureParameterSets: [], sample: Data(), isKey: false)
    packet.sample.reserveCapacity(bytes.count + units.count * 4)
    for unit in units {
      let slice = UnsafeRawBufferPointer(rebasing: bytes[unit])
      switch type(ofUnitStartingWith: slice[0]) {
      case spsType: packet.sequenceParameterSets.append(Data(slice))
      case ppsType: packet.pictureParameterSets.append(Data(slice))
      case delimiterType: continue
      case let kind:
        guard slice.count <= Int(UInt32.max) else {
          throw LIVAMediaError(.limitExceeded, "H.264: a \(slice.count)-byte NAL unit")
        }
        let length = UInt32(slice.count).bigEndian
        withUnsafeBytes(of: length) { packet.sample.append(contentsOf: $0) }
        packet.sample.append(contentsOf: slice)
        if kind == idrType { packet.isKey = true }
      }
    }
    return packet
  }

  /// The units of a length-prefixed sample (`lengthSize` bytes of big-endian length before
  /// each: 1, 2 or 4), as ranges of `bytes`. Throws when a length runs past the end, a unit is
  /// empty, or the size is not one of those.
  public static func lengthPrefixedUnits(_ bytes: UnsafeRawBufferPointer, lengthSize: Int)
    throws(LIVAMediaError) -> [Range<Int>]
  {
    guard [1, 2, 4].contains(lengthSize) else {
      throw LIVAMediaError(.invalidArgument, "H.264: \(lengthSize)-byte NAL unit lengths")
    }
    var units: [Range<Int>] = []
    var offset = 0
    while offset < bytes.count {
      guard bytes.count - offset >= lengthSize else {
        throw LIVAMediaError(.truncatedData, "H.264: a NAL unit length cut at byte \(offset)")
      }
      var length = 0
      for byte in bytes[offset..<(offset + lengthSize)] { length = length << 8 | Int(byte) }
      offset += lengthSize
      guard length > 0, length <= bytes.count - offset else {
        throw LIVAMediaError(
          .truncatedData,
          "H.264: a \(length)-byte NAL unit with \(bytes.count - offset) bytes left")
      }
      units.append(offset..<(offset + length))
      offset += length
    }
    return units
  }

  /// An Annex B packet from a length-prefixed sample: `parameterSets` first (a key frame's SPS
  /// and PPS, which the length-prefixed form keeps aside), then each unit, every one after a
  /// four-byte start code.
  public static func annexB(
    lengthPrefixed bytes: UnsafeRawBufferPointer, lengthSize: Int, parameterSets: [Data] = []
  ) throws(LIVAMediaError) -> Data {
    let units = try lengthPrefixedUnits(bytes, lengthSize: lengthSize)
    let startCode: [UInt8] = [0, 0, 0, 1]
    var packet = Data()
    packet.reserveCapacity(
      bytes.count + parameterSets.reduce(0) { $0 + $1.count + 4 } + units.count * 4)
    for set in parameterSets {
      packet.append(contentsOf: startCode)
      packet.append(set)
    }
    for unit in units {
      packet.append(contentsOf: startCode)
      packet.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[unit]))
    }
    return packet
  }
}
