import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Testing

@testable import LIVA
@testable import LIVARecording

/// ``RecordingSurface/sample(at:)``: video frame `n` is due `n / videoRate` s after the first
/// presented frame, and shows the picture on screen when the display tick that reaches it
/// samples. Frames are presented and sampled by hand, at times whose due frames are counted
/// here; the PNG files are decoded and compared with the pictures presented.
@Suite("The recording surface's sampling")
struct RecordingSurfaceTests {
  static let width = 3
  static let height = 2

  /// A picture of one colour, unlike any other `shade`.
  static func pixels(_ shade: UInt8) -> [UInt8] {
    (0..<width * height).flatMap { pixel in [shade, UInt8(pixel * 40), 255 - shade, 255] }
  }

  static func frame(
    _ time: Double, shade: UInt8, index: Int = 0, mode: EngineMode = .talking,
    chunk: ChunkID? = nil, overlayIndex: Int? = nil, mouth: Bool = false
  ) throws -> RenderedFrame {
    let overlays =
      mouth
      ? [OverlayLayer(key: "mouth", rect: PlacementRect(x: 0, y: 0, width: 1, height: 1))] : []
    return RenderedFrame(
      time: time, width: width, height: height, pixels: pixels(shade),
      content: DrawnFrame(
        animation: try AnimationName(parsing: "talking_1_s_talking_1_e"), index: index,
        overlays: overlays, chunk: chunk, overlayIndex: overlayIndex, mode: mode),
      audioPosition: nil)
  }

  static func surface(rate: Double = 20) throws -> (RecordingSurface, URL) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "liva-recording-surface-\(UUID().uuidString)")
    return (try RecordingSurface(directory: directory, videoRate: rate), directory)
  }

  /// The files written, by name, and each one's pixels.
  static func written(in directory: URL) throws -> [String: [UInt8]] {
    var written: [String: [UInt8]] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
      let image = try SystemImageCodec().decode(
        Data(contentsOf: directory.appendingPathComponent(name)))
      #expect(image.width == width && image.height == height)
      written[name] = image.pixels
    }
    return written
  }

  @Test("one frame per 1/rate s from the first presented frame, each the picture on screen then")
  func framesDue() throws {
    let (surface, directory) = try Self.surface(rate: 20)  // a frame every 50 ms
    defer { try? FileManager.default.removeItem(at: directory) }
    surface.sample(at: 0.5)  // nothing presented: no video yet
    #expect(surface.origin == nil)

    surface.present(try Self.frame(1.0, shade: 10))
    surface.sample(at: 1.0)  // frame 0, due at 1.0
    surface.present(try Self.frame(1.03, shade: 20))
    surface.sample(at: 1.03)  // frame 1 is due at 1.05: none
    surface.sample(at: 1.12)  // frames 1 (1.05) and 2 (1.10)
    surface.present(try Self.frame(1.13, shade: 30))
    surface.present(try Self.frame(1.14, shade: 40))
    surface.sample(at: 1.15)  // frame 3 at 1.15, to the tick: the latest picture
    surface.sample(at: 1.15)  // the same tick again: nothing more
    #expect(surface.finish() == 4)
    #expect(surface.origin == 1.0)
    #expect(surface.timeline.map(\.time) == [1.0, 1.03, 1.13, 1.14])

    let written = try Self.written(in: directory)
    #expect(
      written == [
        "frame_00000.png": Self.pixels(10), "frame_00001.png": Self.pixels(20),
        "frame_00002.png": Self.pixels(20), "frame_00003.png": Self.pixels(40),
      ])
  }

  @Test("the video's time starts at the first presented frame, not at the first sample")
  func originIsTheFirstFrame() throws {
    let (surface, directory) = try Self.surface(rate: 10)
    defer { try? FileManager.default.removeItem(at: directory) }
    surface.present(try Self.frame(2.0, shade: 10))
    // A first sample 0.35 s later writes the frames due at 2.0, 2.1, 2.2 and 2.3 at once.
    surface.sample(at: 2.35)
    #expect(surface.finish() == 4)
    #expect(try Self.written(in: directory).count == 4)
  }

  @Test("a frame with a mouth lists its chunk and overlay frame; frames without one do not")
  func mouths() throws {
    let (surface, directory) = try Self.surface(rate: 20)
    defer { try? FileManager.default.removeItem(at: directory) }
    let chunk = ChunkID(message: MessageID(1), index: 2)
    surface.present(try Self.frame(0, shade: 1, chunk: chunk, overlayIndex: 5, mouth: true))
    surface.sample(at: 0)  // frame 0: mouth 5
    // A speech slot drawn without its mouth.
    surface.present(try Self.frame(0.04, shade: 2, chunk: chunk, overlayIndex: 6))
    surface.sample(at: 0.05)  // frame 1: no mouth
    surface.present(try Self.frame(0.06, shade: 3, mode: .idle))
    surface.sample(at: 0.1)  // frame 2: idle
    surface.present(try Self.frame(0.11, shade: 4, chunk: chunk, overlayIndex: 7, mouth: true))
    surface.sample(at: 0.2)  // frames 3 and 4: mouth 7 in both
    #expect(surface.finish() == 5)
    #expect(
      surface.videoMouths == [
        .init(number: 0, chunk: chunk, overlayIndex: 5),
        .init(number: 3, chunk: chunk, overlayIndex: 7),
        .init(number: 4, chunk: chunk, overlayIndex: 7),
      ])
  }

  @Test("motion is judged between consecutive video frames, not presented frames")
  func motion() throws {
    let (surface, directory) = try Self.surface(rate: 20)
    defer { try? FileManager.default.removeItem(at: directory) }
    surface.present(try Self.frame(0, shade: 1, index: 0))
    surface.sample(at: 0)  // frame 0: base frame 0
    surface.present(try Self.frame(0.01, shade: 2, index: 1))
    surface.present(try Self.frame(0.02, shade: 3, index: 2))
    surface.sample(at: 0.05)  // frame 1: base frame 2, one skipped in the video
    surface.sample(at: 0.1)  // frame 2: base frame 2 again, a repeat
    surface.present(try Self.frame(0.11, shade: 4, index: 3))
    surface.sample(at: 0.15)  // frame 3: base frame 3, the next one
    #expect(surface.finish() == 4)
    let motion = surface.videoMotion
    let counts: [Int] = [motion.compared, motion.repeats, motion.skips]
    #expect(counts == [3, 1, 1])
  }
}
