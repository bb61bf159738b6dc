/// What assistive technologies say about an animation, decided from the file.
public enum PngineAccessibility {
  /// The label a view gives its animation when the app sets none: the PNG's own `Title`, else
  /// its `Description` (the predefined keywords of PNG text chunks, `tEXt` or uncompressed
  /// `iTXt`), else `fallback`. Control characters become spaces, runs of spaces one, and the
  /// text is cut at `maximumLength` characters; a file that is not a PNG gets `fallback`.
  public static func label(
    forPNG png: [UInt8], fallback: String = "Animation", maximumLength: Int = 200
  ) -> String {
    guard let file = try? PNGFile.read(png) else { return fallback }
    var found: [String: String] = [:]
    for chunk in file.chunks where chunk.type == "tEXt" || chunk.type == "iTXt" {
      let start = chunk.offset + 8
      guard start >= 0, chunk.length >= 0, start + chunk.length <= png.count else { continue }
      let data = png[start..<(start + chunk.length)]
      if let (keyword, text) = entry(data, international: chunk.type == "iTXt"),
        keyword == "Title" || keyword == "Description", found[keyword] == nil
      {
        found[keyword] = text
      }
    }
    for keyword in ["Title", "Description"] {
      if let text = found[keyword].map({ clean($0, maximumLength) }), !text.isEmpty { return text }
    }
    return fallback
  }

  /// A text chunk's keyword and text: `tEXt` is Latin-1 `keyword NUL text`; `iTXt` is
  /// `keyword NUL flag method language NUL translated NUL text` in UTF-8, read only when not
  /// compressed.
  static func entry(_ data: ArraySlice<UInt8>, international: Bool) -> (String, String)? {
    guard let end = data.firstIndex(of: 0), end > data.startIndex else { return nil }
    let keyword = String(decoding: data[data.startIndex..<end], as: UTF8.self)
    guard international else {
      let text = String(data[(end + 1)...].map { Character(Unicode.Scalar($0)) })
      return (keyword, text)
    }
    let flagAt = end + 1
    guard flagAt + 1 < data.endIndex, data[flagAt] == 0 else { return nil }  // compressed
    var at = flagAt + 2
    for _ in 0..<2 {  // the language tag, then the translated keyword
      guard let next = data[at...].firstIndex(of: 0) else { return nil }
      at = next + 1
    }
    return (keyword, String(decoding: data[at...], as: UTF8.self))
  }

  static func clean(_ text: String, _ maximumLength: Int) -> String {
    var out = ""
    var lastSpace = true
    for character in text {
      let isSpace =
        character.isWhitespace
        || character.unicodeScalars.allSatisfy { $0.properties.generalCategory == .control }
      if isSpace {
        if !lastSpace { out.append(" ") }
        lastSpace = true
      } else {
        out.append(character)
        lastSpace = false
      }
      if out.count >= maximumLength { break }
    }
    return out.hasSuffix(" ") ? String(out.dropLast()) : out
  }
}
