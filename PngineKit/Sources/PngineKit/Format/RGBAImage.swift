import CZlib

/// An 8-bit RGBA picture, rows top to bottom, four bytes a pixel: what a backend reads back
/// from the canvas. Encodes and decodes PNG (colour types 6 and 2, 8 bits, no interlace)
/// through the system zlib.
public struct RGBAImage: Sendable, Hashable {
  /// Width in pixels.
  public var width: Int
  /// Height in pixels.
  public var height: Int
  /// `width * height * 4` bytes.
  public var pixels: [UInt8]

  /// Makes an image; `pixels` must hold `width * height * 4` bytes.
  public init(width: Int, height: Int, pixels: [UInt8]) {
    precondition(pixels.count == width * height * 4, "pixel count does not match the size")
    self.width = width
    self.height = height
    self.pixels = pixels
  }

  /// The pixel at (x, y) as `[r, g, b, a]`.
  public subscript(x: Int, y: Int) -> [UInt8] {
    let i = (y * width + x) * 4
    return Array(pixels[i..<(i + 4)])
  }

  /// The image as a PNG file (filter 0 on every row, zlib level 6).
  public func pngData() -> [UInt8] {
    var raw = [UInt8]()
    raw.reserveCapacity(height * (width * 4 + 1))
    for y in 0..<height {
      raw.append(0)
      raw.append(contentsOf: pixels[(y * width * 4)..<((y + 1) * width * 4)])
    }
    var bound = compressBound(uLong(raw.count))
    var compressed = [UInt8](repeating: 0, count: Int(bound))
    let status = compressed.withUnsafeMutableBufferPointer { out in
      raw.withUnsafeBufferPointer { input in
        compress2(out.baseAddress, &bound, input.baseAddress, uLong(input.count), 6)
      }
    }
    precondition(status == Z_OK, "zlib compress2 failed with \(status)")
    compressed.removeSubrange(Int(bound)...)
    var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    func be32(_ v: UInt32) -> [UInt8] {
      [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }
    func chunk(_ type: String, _ data: [UInt8]) {
      let typed = Array(type.utf8) + data
      png += be32(UInt32(data.count)) + typed + be32(CRC32.checksum(typed[...]))
    }
    chunk("IHDR", be32(UInt32(width)) + be32(UInt32(height)) + [8, 6, 0, 0, 0])
    chunk("IDAT", compressed)
    chunk("IEND", [])
    return png
  }

  /// Decodes a PNG of colour type 6 (RGBA) or 2 (RGB), 8 bits, not interlaced.
  public init(png bytes: [UInt8]) throws(PngineError) {
    let file = try PNGFile.read(bytes)
    func data(_ chunk: PNGChunk) -> ArraySlice<UInt8> {
      bytes[(chunk.offset + 8)..<(chunk.offset + 8 + chunk.length)]
    }
    guard let header = file.chunks.first(where: { $0.type == "IHDR" }), header.length == 13 else {
      throw PngineError(.invalidPNG, "no IHDR", location: .init(chunk: "IHDR"))
    }
    let h = Array(data(header))
    func be32(_ i: Int) -> Int {
      Int(h[i]) << 24 | Int(h[i + 1]) << 16 | Int(h[i + 2]) << 8 | Int(h[i + 3])
    }
    let width = be32(0)
    let height = be32(4)
    guard h[8] == 8, h[9] == 6 || h[9] == 2, h[12] == 0, width > 0, height > 0,
      width <= 16384, height <= 16384
    else {
      throw PngineError(
        .invalidPNG, "only 8-bit RGBA or RGB, not interlaced, up to 16384², is read",
        location: .init(chunk: "IHDR"))
    }
    let channels = h[9] == 6 ? 4 : 3
    let idat = file.chunks.filter { $0.type == "IDAT" }.flatMap(data)
    let stride = width * channels
    var raw = [UInt8](repeating: 0, count: height * (stride + 1))
    var size = uLong(raw.count)
    let status = raw.withUnsafeMutableBufferPointer { out in
      idat.withUnsafeBufferPointer { input in
        uncompress(out.baseAddress, &size, input.baseAddress, uLong(input.count))
      }
    }
    guard status == Z_OK, Int(size) == raw.count else {
      throw PngineError(
        .inflateFailed, "IDAT does not inflate to \(raw.count) bytes",
        location: .init(chunk: "IDAT"))
    }
    var rows = [UInt8](repeating: 0, count: height * stride)
    for y in 0..<height {
      let filter = raw[y * (stride + 1)]
      let src = y * (stride + 1) + 1
      let dst = y * stride
      for x in 0..<stride {
        let a = x >= channels ? Int(rows[dst + x - channels]) : 0
        let b = y > 0 ? Int(rows[dst - stride + x]) : 0
        let c = x >= channels && y > 0 ? Int(rows[dst - stride + x - channels]) : 0
        let v = Int(raw[src + x])
        let predicted: Int
        switch filter {
        case 0: predicted = 0
        case 1: predicted = a
        case 2: predicted = b
        case 3: predicted = (a + b) / 2
        case 4:
          let p = a + b - c
          let pa = abs(p - a)
          let pb = abs(p - b)
          let pc = abs(p - c)
          predicted = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)
        default:
          throw PngineError(
            .invalidPNG, "row \(y) has filter \(filter)", location: .init(chunk: "IDAT"))
        }
        rows[dst + x] = UInt8((v + predicted) & 0xFF)
      }
    }
    if channels == 3 {
      var rgba = [UInt8](repeating: 255, count: width * height * 4)
      for i in 0..<(width * height) {
        rgba[i * 4] = rows[i * 3]
        rgba[i * 4 + 1] = rows[i * 3 + 1]
        rgba[i * 4 + 2] = rows[i * 3 + 2]
      }
      rows = rgba
    }
    self.init(width: width, height: height, pixels: rows)
  }

  /// The share of pixels (0…1) whose four channels each differ from `other`'s by at most
  /// `channelTolerance`; 0 when the sizes differ. The snapshot tests' similarity.
  public func similarity(to other: RGBAImage, channelTolerance: UInt8 = 2) -> Double {
    guard width == other.width, height == other.height else { return 0 }
    var same = 0
    pixels.withUnsafeBufferPointer { a in
      other.pixels.withUnsafeBufferPointer { b in
        for p in 0..<(width * height) {
          var ok = true
          for c in 0..<4 where ok {
            let x = a[p * 4 + c]
            let y = b[p * 4 + c]
            if (x > y ? x - y : y - x) > channelTolerance { ok = false }
          }
          if ok { same += 1 }
        }
      }
    }
    return Double(same) / Double(width * height)
  }
}
