import CWGPU

/// Memory for one descriptor's nested C structs and strings, freed together when the arena
/// goes away (after the wgpu call that reads them). Holds only trivial C values.
final class Arena {
  private var blocks: [UnsafeMutableRawPointer] = []

  deinit {
    for block in blocks { block.deallocate() }
  }

  /// A pointer to a copy of `value`.
  func put<T>(_ value: T) -> UnsafeMutablePointer<T> {
    let p = UnsafeMutablePointer<T>.allocate(capacity: 1)
    p.initialize(to: value)
    blocks.append(UnsafeMutableRawPointer(p))
    return p
  }

  /// A pointer to a copy of `values`, `nil` when empty.
  func array<T>(_ values: [T]) -> UnsafeMutablePointer<T>? {
    guard !values.isEmpty else { return nil }
    let p = UnsafeMutablePointer<T>.allocate(capacity: values.count)
    p.initialize(from: values, count: values.count)
    blocks.append(UnsafeMutableRawPointer(p))
    return p
  }

  /// A string view of a copy of `text`.
  func string(_ text: String) -> WGPUStringView {
    let bytes = Array(text.utf8)
    let p = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
    for (i, b) in bytes.enumerated() { p[i] = CChar(bitPattern: b) }
    blocks.append(UnsafeMutableRawPointer(p))
    return WGPUStringView(data: p, length: bytes.count)
  }
}

/// The text of a NUL-terminated C buffer.
func text(_ buffer: [CChar]) -> String {
  String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
