import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Testing

/// Non-square avatars: the output follows the frames, a fixed output size fits them by content
/// mode, and the surface gets its frames from a small pool.
@Suite("Output size, content mode and frame pool")
struct OutputSizeTests {
  final class Kept: @unchecked Sendable {
    // @unchecked: the virtual display link presents on the test's thread only.
    var frames: [RenderedFrame] = []
    var last: RenderedFrame?
  }

  static let colour = RGBA(30, 120, 220)

  /// Frame `index`'s colour (frame 0 is ``colour``).
  static func colour(_ index: Int) -> RGBA { RGBA(30, 120, UInt8(220 - index * 40)) }

  /// An idle loop of 40×24 (5:3) frames, each one flat colour.
  func store() throws -> BaseFrameStore {
    let store = try BaseFrameStore(
      root: FileManager.default.temporaryDirectory.appendingPathComponent(
        "liva-output-\(UUID().uuidString)"))
    for name in [AnimationName.idleForward, .idleBack] {
      try store.beginDownload(name, frames: 4)
      for index in 0..<4 {
        let png = try SystemImageCodec().encode(
          RGBAImage(width: 40, height: 24, fill: Self.colour(index)), as: .png)
        try store.storeFrame(png, index: index, of: name)
      }
      try store.finishDownload(name, version: "1")
      try store.preload(name)
    }
    return store
  }

  func run(
    _ configuration: LIVAPlayer.Configuration, keepAll: Bool = false, keepNone: Bool = false,
    retaining: Int = 2
  ) throws -> (LIVAPlayer, Kept) {
    let kept = Kept()
    let player = LIVAPlayer(
      configuration: configuration, baseFrames: try store(), audio: HeadlessAudioOutput(),
      surface: CallbackSurface(retaining: retaining) { frame in
        if keepNone {
          // Checked here, then dropped: what a surface that copies its frames sees.
          let c = Self.colour(frame.content.index)
          if Array(frame.pixels.prefix(4)) != [c.r, c.g, c.b, 255] { kept.last = frame }
        } else if keepAll {
          kept.frames.append(frame)
        } else {
          kept.last = frame
        }
      })
    let link = VirtualDisplayLink()
    link.start { player.tick(now: $0) }
    link.run(from: 0, to: 10)
    return (player, kept)
  }

  @Test("without an output size, frames come out at the avatar's own size and aspect")
  func followsFrames() throws {
    let (_, kept) = try run(LIVAPlayer.Configuration())
    let frame = try #require(kept.last)
    #expect(frame.width == 40 && frame.height == 24 && frame.pixels.count == 40 * 24 * 4)
  }

  @Test("a square output fits a 5:3 avatar unsquashed, with bands (aspect fit, the default)")
  func fitsSquare() throws {
    var configuration = LIVAPlayer.Configuration()
    configuration.width = 60
    configuration.height = 60
    let (_, kept) = try run(configuration)
    let frame = try #require(kept.last)
    func pixel(_ x: Int, _ y: Int) -> [UInt8] {
      Array(frame.pixels[(y * 60 + x) * 4..<(y * 60 + x) * 4 + 4])
    }
    let c = Self.colour(frame.content.index)
    #expect(frame.width == 60 && frame.height == 60)
    #expect(pixel(30, 2) == [0, 0, 0, 255])  // 40×24 at 1.5× is 60×36: bands of 12 rows
    #expect(pixel(30, 30) == [c.r, c.g, c.b, 255] && pixel(0, 13) == [c.r, c.g, c.b, 255])
    #expect(pixel(30, 57) == [0, 0, 0, 255])
  }

  @Test("the frame pool: a surface that drops its frames makes no allocation per frame")
  func poolReuses() throws {
    let (player, kept) = try run(LIVAPlayer.Configuration())
    #expect(player.metrics.framesPresented >= 100)
    #expect(player.framePoolAllocations <= 3)
    #expect(kept.last != nil)
  }

  @Test("a surface that keeps one frame gets two buffers, allocated once each")
  func poolForOneRetained() throws {
    let (player, kept) = try run(LIVAPlayer.Configuration(), retaining: 1)
    #expect(player.metrics.framesPresented >= 100)
    #expect(player.framePoolAllocations == 2)
    let frame = try #require(kept.last)
    let c = Self.colour(frame.content.index)
    #expect(Array(frame.pixels.prefix(4)) == [c.r, c.g, c.b, 255])
  }

  @Test("a surface that keeps no frame is handed the compositor's buffer, each frame right")
  func passThrough() throws {
    let (player, kept) = try run(LIVAPlayer.Configuration(), keepNone: true, retaining: 0)
    #expect(player.metrics.framesPresented >= 100)
    #expect(kept.last == nil)  // no frame showed another frame's colour
    #expect(player.framePoolAllocations == 0)
  }

  @Test("a surface that keeps more frames than it declared still gets each frame unchanged")
  func passThroughHeld() throws {
    for retaining in [0, 1] {
      let (player, kept) = try run(LIVAPlayer.Configuration(), keepAll: true, retaining: retaining)
      #expect(kept.frames.count >= 100)
      #expect(
        kept.frames.allSatisfy { frame in
          let c = Self.colour(frame.content.index)
          return Array(frame.pixels.prefix(4)) == [c.r, c.g, c.b, 255]
        })
      if retaining > 0 { #expect(player.framePoolAllocations >= kept.frames.count) }
    }
  }

  @Test("the frame pool never writes into a frame a surface still holds")
  func poolRespectsHolders() throws {
    let (player, kept) = try run(LIVAPlayer.Configuration(), keepAll: true)
    #expect(kept.frames.count >= 100)
    // Each kept frame still shows its own base frame's colour.
    #expect(
      kept.frames.allSatisfy { frame in
        let c = Self.colour(frame.content.index)
        return Array(frame.pixels.prefix(4)) == [c.r, c.g, c.b, 255]
      })
    // Every buffer is still held, so each frame needed its own.
    #expect(player.framePoolAllocations >= kept.frames.count)
  }
}
