import Foundation
import Testing

@testable import PngineKit

/// The accessibility label comes from the file: PNG's own Title or Description text.
@Suite struct AccessibilityTests {
  /// `png` with `chunk` (type and data) inserted after IHDR, its CRC computed.
  func inserting(_ type: String, _ data: [UInt8], into png: [UInt8]) -> [UInt8] {
    let body = Array(type.utf8) + data
    let length = UInt32(data.count)
    let crc = CRC32.checksum(body[...])
    let chunk =
      [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: length >> $0) } + body
      + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: crc >> $0) }
    let afterHeader = 8 + 8 + 13 + 4
    return Array(png[..<afterHeader]) + chunk + Array(png[afterHeader...])
  }

  func text(_ keyword: String, _ value: [UInt8]) -> [UInt8] { Array(keyword.utf8) + [0] + value }

  @Test func theLabelIsTheFilesTitleElseItsDescriptionElseTheFallback() throws {
    let png = Fixtures.png("examples_vite-gallery_shaders_boids.png")
    #expect(PngineAccessibility.label(forPNG: png) == "Animation")  // upstream writes none
    let described = inserting(
      "tEXt", text("Description", Array("A flock of birds".utf8)), into: png)
    #expect(PngineAccessibility.label(forPNG: described) == "A flock of birds")
    // Title wins, wherever it is; Latin-1 text is read as Latin-1 ("Café", é = 0xE9).
    let titled = inserting("tEXt", text("Title", [0x43, 0x61, 0x66, 0xE9]), into: described)
    #expect(PngineAccessibility.label(forPNG: titled) == "Café")
    // iTXt: UTF-8, uncompressed (flag 0, method 0, language "en", translated keyword "").
    let international = inserting(
      "iTXt", text("Title", [0, 0] + Array("en".utf8) + [0, 0] + Array("Vögel im Schwarm".utf8)),
      into: png)
    #expect(PngineAccessibility.label(forPNG: international) == "Vögel im Schwarm")
    // A compressed iTXt is not inflated for a label; other keywords are not labels.
    let compressed = inserting("iTXt", text("Title", [1, 0, 0, 0, 0x78, 0x9C]), into: png)
    #expect(PngineAccessibility.label(forPNG: compressed) == "Animation")
    let author = inserting("tEXt", text("Author", Array("someone".utf8)), into: png)
    #expect(PngineAccessibility.label(forPNG: author, fallback: "Boids") == "Boids")
  }

  @Test func hostileTextIsCleanedAndCut() throws {
    let png = Fixtures.png("examples_vite-gallery_shaders_cube.png")
    let noisy = inserting(
      "tEXt", text("Title", Array("  spinning\n\n\tcube\u{7}  ".utf8)), into: png)
    #expect(PngineAccessibility.label(forPNG: noisy) == "spinning cube")
    let long = inserting("tEXt", text("Title", Array(repeating: 0x61, count: 5000)), into: png)
    #expect(PngineAccessibility.label(forPNG: long, maximumLength: 50).count == 50)
    let empty = inserting("tEXt", text("Title", Array("\n\t ".utf8)), into: png)
    #expect(PngineAccessibility.label(forPNG: empty) == "Animation")
    #expect(PngineAccessibility.label(forPNG: [1, 2, 3]) == "Animation")  // not a PNG
  }
}
