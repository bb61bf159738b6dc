import Foundation
import LIVA
import LIVAMedia
import LIVAPlatform
import LIVAProtocol
import Testing

/// A whole message judged from the presented pixels alone: every base frame's colour names its
/// animation and index, and every mouth's colour names its place in the message, so what was
/// on screen is read back from the pictures, not from the player's own account of them.
@Suite("Player pipeline: the pixels of a whole message")
struct MessagePixelsTests {
  /// The mouth of the message's `position`-th frame: a flat colour no base frame has.
  static func mouthColour(_ position: Int) -> RGBA { RGBA(250, UInt8(position * 2), 200) }

  @Test(
    "every mouth of a 120-frame message on screen once in order, on its planned base frame, placed exactly; idle after"
  )
  func wholeMessage() throws {
    let (player, link, _, recorder) = try makePlayer()
    link.tick(at: 0)

    let walk = wireWalk(120)
    let codec = SystemImageCodec()
    let frames = try walk.enumerated().map { position, entry in
      OverlayFrame(
        overlayId: "\(entry.0)/\(entry.1)/p\(position).png",
        animationName: try AnimationName(parsing: entry.0),
        matchedSpriteFrameNumber: entry.1, sequenceIndex: position % 60,
        coordinates: PlacementRect(x: 12, y: 20, width: 8, height: 8),
        image: EncodedImage(
          data: try codec.encode(
            RGBAImage(width: 8, height: 8, fill: Self.mouthColour(position)), as: .png),
          mimeType: "image/png"))
    }
    for chunk in 0..<2 {
      let slice = Array(frames[chunk * 60..<chunk * 60 + 60])
      player.handle(
        .frameImagesBatch(FrameImagesBatch(frames: slice, chunkIndex: chunk, batchIndex: 0)))
      player.handle(planned(slice, chunk: chunk, seconds: 2))
      player.handle(.chunkImagesReady(chunkIndex: chunk, totalImagesSent: 60))
    }
    player.handle(.audioEnd)
    link.run(from: 0, to: 8)
    let presented = recorder.frames

    // Every base colour of the avatar, to name the frame under a pixel.
    var bases: [[UInt8]: (String, Int)] = [:]
    for (animation, count) in FixtureAvatar.counts {
      for index in 0..<count {
        let c = FixtureAvatar.baseColour(animation, index)
        bases[[c.r, c.g, c.b, 255]] = (animation, index)
      }
    }
    func pixel(_ frame: RenderedFrame, _ x: Int, _ y: Int) -> [UInt8] {
      Array(frame.pixels[(y * frame.width + x) * 4..<(y * frame.width + x) * 4 + 4])
    }
    // The mouth's rect on screen: (12, 20, 8, 8) on the 32×32 base, drawn at twice its size.
    let inside = (40..<56).flatMap { y in (24..<40).map { (x: $0, y: y) } }
    let ring =
      (23...40).flatMap { [(x: $0, y: 39), (x: $0, y: 56)] }
      + (40..<56).flatMap { [(x: 23, y: $0), (x: 40, y: $0)] }

    var shown: [Int] = []
    var problems: [String] = []
    for (n, frame) in presented.enumerated() {
      let under = pixel(frame, 4, 4)
      guard let base = bases[under] else {
        problems.append("frame \(n): \(under) is no base frame's colour")
        continue
      }
      if ring.contains(where: { pixel(frame, $0.x, $0.y) != under }) {
        problems.append("frame \(n): the base around the mouth's rect is not \(base)")
      }
      let centre = pixel(frame, 32, 48)
      if centre == under { continue }  // no mouth
      guard centre[0] == 250, centre[2] == 200, centre[1] % 2 == 0, centre[1] / 2 < 120 else {
        problems.append("frame \(n): \(centre) is neither the base nor a mouth")
        continue
      }
      let position = Int(centre[1]) / 2
      if inside.contains(where: { pixel(frame, $0.x, $0.y) != centre }) {
        problems.append("frame \(n): mouth \(position) does not fill its rect")
      }
      if base != walk[position] {
        problems.append("frame \(n): mouth \(position) on \(base), planned on \(walk[position])")
      }
      if shown.last != position { shown.append(position) }
    }
    #expect(problems.isEmpty, "\(problems.prefix(5))")
    #expect(shown == Array(0..<120), "mouths on screen, in order: \(shown)")
    // After the message, idle: the last frames show no mouth, on an idle animation.
    let last = try #require(presented.last)
    #expect(pixel(last, 32, 48) == pixel(last, 4, 4))
    #expect(bases[pixel(last, 4, 4)].map { !$0.0.contains("talking") } == true)
  }
}
