import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Testing

/// Faults the player rides out, each a scenario that once lost speech (issue items named in
/// each test), on a virtual clock with inline decoding.
@Suite("Player faults")
struct PlayerFaultTests {
  final class Box<Value>: @unchecked Sendable {
    // @unchecked: set once before the first event, read on the test's thread.
    var value: Value
    init(_ value: Value) { self.value = value }
  }

  @Test(
    "a chunk whose first image failed before its plan came, with no chunk_images_ready, still plays"
  )
  func firstImageFailedBeforePlan() throws {
    let (player, link, audio, shown) = try makePlayer(size: 32)
    link.tick(at: 0)
    var frames = try wireFrames(count: 20, tag: "f")
    frames[0].image = EncodedImage(data: Data([0, 1, 2, 3]), mimeType: "image/png")  // corrupt
    sendChunkZero(player, frames: frames)
    player.handle(.audioEnd)
    link.run(from: 0, to: 3)
    #expect(audio.segments.map(\.chunk.index) == [0])
    let mouths = Set(
      shown.frames.filter { !$0.content.overlays.isEmpty }.compactMap(\.content.overlayIndex))
    #expect(mouths == Set(1..<20))
    #expect(player.mode == .idle)
  }

  @Test(
    "an interrupted message's late chunk_images_ready(1) does not mark the next message's chunk 1 ready before its images came"
  )
  func staleReadyAheadOfItsChunk() throws {
    // Found by a generated session, shrunk: m1 barges in; m0's late `chunk_images_ready(1)` comes
    // before m1 has a chunk 1; m1's chunk 1 then arrives with its batches just behind it.
    let (player, link, audio, shown) = try makePlayer(size: 32)
    link.tick(at: 0)
    let m0 = try wireFrames(count: 14, tag: "a")
    sendChunkZero(player, frames: m0)
    link.run(from: 0, to: 0.1)
    let m1 = try wireFrames(count: 21, tag: "b")
    sendChunkZero(player, frames: Array(m1[0..<9]))
    link.run(from: 0.1, to: 0.2)
    player.handle(.chunkImagesReady(chunkIndex: 1, totalImagesSent: 17))
    link.run(from: 0.2, to: 0.62)
    let chunk1 = Array(m1[9..<21]).enumerated().map { position, frame in
      var frame = frame
      frame.sequenceIndex = position
      // One mouth the client already has (ids are content: messages share them).
      if position == 11 { frame.overlayId = m0[0].overlayId }
      return frame
    }
    player.handle(planned(chunk1, chunk: 1, seconds: 12.0 / 30))
    link.tick(at: 0.62 + 1.0 / 60)
    player.handle(
      .frameImagesBatch(FrameImagesBatch(frames: chunk1, chunkIndex: 1, batchIndex: 0)))
    player.handle(.audioEnd)
    link.run(from: 0.62 + 1.0 / 60, to: 3)
    let last = ChunkID(message: MessageID(1), index: 1)
    #expect(audio.segments.last?.chunk == last)
    let mouths = Set(
      shown.frames.filter { $0.content.chunk == last && !$0.content.overlays.isEmpty }
        .compactMap(\.content.overlayIndex))
    #expect(mouths == Set(0..<12))
  }

  @Test(
    "a chunk of a dropped connection read after the next connection's status plays out without holding for its missing mouths"
  )
  func chunkOfLostConnectionReadLate() throws {
    // Events and statuses travel on two streams: the client can read the old connection's
    // chunk after `connectionRestored`. Two thirds of its mouths never came (the drop cut them).
    let (player, link, audio, shown) = try makePlayer(size: 32)
    link.tick(at: 0)
    player.connectionLost()
    player.connectionRestored()
    let frames = try wireFrames(count: 30, tag: "l")
    player.handle(
      .frameImagesBatch(
        FrameImagesBatch(frames: Array(frames[0..<10]), chunkIndex: 0, batchIndex: 0)),
      fromLostConnection: true)
    player.handle(planned(frames, chunk: 0, seconds: 1), fromLostConnection: true)
    link.run(from: 0, to: 4)
    let segment = try #require(audio.segments.first)
    let lastSpeech = try #require(shown.frames.last { $0.content.chunk != nil })
    #expect(lastSpeech.time <= segment.start + (segment.duration ?? 0) + 2.0 / 30)
    #expect(player.metrics.engine.holds(.overlayNotReady) == 0)
    #expect(player.mode == .idle)
  }

  @Test("an interrupt between a tick's decision and its audio start: the start is dropped")
  func interruptBeforeAudioStart() throws {
    let holder = Box<LIVAPlayer?>(nil)
    let (player, link, audio, _) = try makePlayer(
      size: 32,
      observer: { action in
        // Runs outside the lock, after the tick decided to start the chunk's audio and before
        // the start is carried out: another thread's interrupt at the worst moment.
        if case .speakingStarted = action { holder.value?.interrupt() }
      })
    holder.value = player
    link.tick(at: 0)
    let frames = try wireFrames(count: 20, tag: "i")
    sendChunkZero(player, frames: frames)
    link.run(from: 0, to: 2)
    #expect(player.metrics.engine.interrupts == 1)
    #expect(audio.segments.isEmpty)
  }

  @Test(
    "a speech frame is drawn with its chunk's audio position from the tick's one clock reading, less the lookahead"
  )
  func drawCarriesTheTicksAudioPosition() throws {
    var core = PlayerCore(audioLookahead: 0.01)
    _ = core.setAvailableAnimations(PlayerCoreRequestTests.counts(FixtureAvatar.counts))
    let frames = try wireFrames(count: 30, tag: "pos")
    queueDecodedChunk(frames, seconds: 1, into: &core)
    var started: (id: ChunkID, at: Double)?
    var tick = 0
    while started == nil, tick < 120 {
      let now = Double(tick) / 60
      for case .startAudio(let id, _, _, _, _) in core.tick(now: now, audio: nil) {
        started = (id, now)
      }
      tick += 1
    }
    let (id, start) = try #require(started)
    var checked = 0
    for _ in 0..<20 {
      let now = Double(tick) / 60
      let position = now - start + 0.01  // read 0.01 s ahead of the tick
      let effects = core.tick(now: now, audio: AudioClock(chunk: id, position: position))
      for case .draw(let frame, _, let drawnWith, _) in effects {
        #expect(frame.chunk == id)
        #expect(abs(try #require(drawnWith) - (now - start)) < 1e-9)
        checked += 1
      }
      tick += 1
    }
    #expect(checked > 5)
    // Another chunk's clock is no position for this chunk's frame.
    let other = ChunkID(message: id.message, index: id.index + 1)
    var drawn = 0
    while drawn == 0, tick < 400 {
      for case .draw(_, _, let drawnWith, _) in core.tick(
        now: Double(tick) / 60, audio: AudioClock(chunk: other, position: 0.5))
      {
        #expect(drawnWith == nil)
        drawn += 1
      }
      tick += 1
    }
    #expect(drawn == 1)
  }

  @Test("the played chunks' images are released: a purge of unused images frees them")
  func playedImagesReleased() throws {
    let (player, link, _, _) = try makePlayer(size: 32)
    link.tick(at: 0)
    let frames = try wireFrames(count: 20, tag: "p")
    sendChunkZero(player, frames: frames)
    player.handle(.audioEnd)
    link.run(from: 0, to: 0.3)
    // While the chunk plays, its images are claimed: a purge keeps them.
    player.purgeMemory([.playedOverlays])
    #expect(frames.allSatisfy { player.overlays.isReady($0.overlayId) })
    link.run(from: 0.3, to: 3)
    #expect(player.heldChunks == 0)
    player.purgeMemory([.playedOverlays])
    #expect(player.overlays.statistics.count == 0)
  }
}

@Suite("Player core: requests and first frames")
struct PlayerCoreRequestTests {
  static func counts(_ names: [String: Int]) -> [AnimationName: Int] {
    Dictionary(uniqueKeysWithValues: names.map { (try! AnimationName(parsing: $0.key), $0.value) })
  }

  @Test("play_base_animation for an animation not downloaded yet waits for it, then plays")
  func deferredRequest() throws {
    var core = PlayerCore()
    _ = core.setAvailableAnimations(Self.counts(FixtureAvatar.counts))
    _ = core.tick(now: 0, audio: nil)
    let hi = try AnimationName(parsing: "hi_1_s_hi_1_e")
    _ = core.handle(.playBaseAnimation(hi))
    #expect(core.engine.pendingAnimationRequests.isEmpty)
    var withHi = FixtureAvatar.counts
    withHi["idle_1_e_hi_1_s"] = 4
    withHi["hi_1_s_hi_1_e"] = 6
    withHi["hi_1_e_idle_1_s"] = 4
    _ = core.tick(now: 1, audio: nil)
    _ = core.setAvailableAnimations(Self.counts(withHi))
    var shown: [String] = []
    for tick in 61...400 {
      for case .draw(let frame, _, _, _) in core.tick(now: Double(tick) / 60, audio: nil) {
        shown.append(frame.animation.description)
      }
    }
    #expect(shown.contains("hi_1_s_hi_1_e"))
    // Past its lifetime, a request is forgotten.
    var late = PlayerCore()
    _ = late.setAvailableAnimations(Self.counts(FixtureAvatar.counts))
    _ = late.tick(now: 0, audio: nil)
    _ = late.handle(.playBaseAnimation(hi))
    _ = late.tick(now: 11, audio: nil)
    _ = late.setAvailableAnimations(Self.counts(withHi))
    #expect(late.engine.pendingAnimationRequests.isEmpty && late.engine.mode == .idle)
  }

  @Test(
    "a chunk with first_frame_image starts on its first frame after 0.15 s, not 0.5 s, without ten"
  )
  func firstFrameImage() throws {
    func speakingStart(firstFrame: Bool) throws -> Double? {
      var core = PlayerCore()
      _ = core.setAvailableAnimations(Self.counts(FixtureAvatar.counts))
      _ = core.tick(now: 0, audio: nil)
      let frames = try wireFrames(count: 20, tag: "ff").map {
        var frame = $0
        frame.sheetFilename = "ff.png"
        return frame
      }
      var chunk = AudioChunk(
        audio: silentMP3(seconds: 20.0 / 30), chunkIndex: 0,
        animations: [
          ChunkAnimation(
            animationName: frames[0].animationName,
            sections: [
              frames.map {
                var f = $0
                f.image = nil
                return f
              }
            ])
        ])
      // Only the first mouth is here: as first_frame_image, or as a one-image batch.
      if firstFrame {
        chunk.firstFrameImage = FirstFrameImage(
          image: frames[0].image!, sheetFilename: frames[0].sheetFilename)
      } else {
        for case .decode(let overlays) in core.handle(
          .frameImagesBatch(FrameImagesBatch(frames: [frames[0]], chunkIndex: 0)))
        {
          for overlay in overlays { _ = core.decoded(.imageReady(key: overlay.key)) }
        }
      }
      for case .decode(let overlays) in core.handle(.audioChunk(chunk)) {
        for overlay in overlays { _ = core.decoded(.imageReady(key: overlay.key)) }
      }
      for tick in 1...120 {
        let now = Double(tick) / 60
        for case .notify(.speakingStarted) in core.tick(now: now, audio: nil) { return now }
      }
      return nil
    }
    let withFirstFrame = try #require(try speakingStart(firstFrame: true))
    let without = try #require(try speakingStart(firstFrame: false))
    #expect(withFirstFrame + 0.15 < without)  // 0.4 s and 0.6 s here, with idle at 10 fps
  }

  /// Found by a generated session, shrunk: the whole player missed the first
  /// frame of the finish (its window was planned while the message waited for a next chunk,
  /// a path that does not go there) and drew the frame after it next: a pop.
  @Test(
    "audio_end while waiting for the next chunk updates the window: the finish's first frame is in it"
  )
  func audioEndUpdatesWindow() throws {
    var core = PlayerCore()
    _ = core.setAvailableAnimations(Self.counts(FixtureAvatar.counts))
    _ = core.tick(now: 0, audio: nil)
    let frames = try wireFrames(count: 12, tag: "end")
    queueDecodedChunk(frames, seconds: 12.0 / 30, into: &core)
    // Play the chunk out; the message then waits for a chunk that never comes.
    var tick = 1
    while tick < 600, core.metrics.engine.holds(.waitingForNextChunk) == 0 {
      _ = core.tick(now: Double(tick) / 60, audio: nil)
      tick += 1
    }
    // 20 frames (a frame counts 1 MiB until one is presented): the plan decides what is in.
    let budget = 22 << 20
    let before = Set(core.window(budget: budget))
    let effects = core.handle(.audioEnd)
    #expect(effects.contains { if case .requestWindow = $0 { true } else { false } })
    let after = Set(core.window(budget: budget))
    var next: DrawnFrame?
    while next == nil, tick < 900 {
      for case .draw(let frame, _, _, _) in core.tick(now: Double(tick) / 60, audio: nil) {
        next = frame
      }
      tick += 1
    }
    let first = try #require(next)
    let ref = BaseFrameRef(animation: first.animation, index: first.index)
    #expect(after.contains(ref), "the finish's first frame \(ref) is in the updated window")
    #expect(!before.contains(ref), "the scenario: the waiting plan's window did not hold it")
  }

  /// The player's default base-frame budget: 6 frames of 1280×768 in the window.
  static let productionBudget = 32 << 20

  /// A core over the fixture avatar's animations, planning its window with
  /// ``productionBudget``.
  static func productionCore() -> PlayerCore {
    var core = PlayerCore(baseFrameBudget: productionBudget)
    _ = core.setAvailableAnimations(counts(FixtureAvatar.counts))
    return core
  }

  /// Tells `core` that `frame` was presented at `time` as a 1280×768 frame; returns its answer.
  @discardableResult
  static func presentAtProductionSize(
    _ frame: DrawnFrame, at time: Double, to core: inout PlayerCore
  ) -> [PlayerCore.Effect] {
    core.rendered(
      [.presented(frame, at: time, audioPosition: nil, frameBytes: 1280 * 768 * 4)],
      sinceStart: time)
  }

  /// `liva demo --size 1280x768` missed 1–3 base frames a run on two shared cores (CPU taken
  /// by the recorder's encoder): 32 MiB of base frames is 6 frames of 1280×768, the window
  /// reached 4 frames ahead, and it was refreshed only every fourth draw, so just before each
  /// refresh the next frame's decode had not even been asked for.
  @Test(
    "at production size the window asked for always holds the next 3 frames drawn: it is refreshed as often as its reach needs"
  )
  func windowReachesAheadAtProductionSize() throws {
    let budget = Self.productionBudget
    var core = Self.productionCore()
    let frames = try wireFrames(count: 60, tag: "reach")
    queueDecodedChunk(frames, seconds: 2, into: &core)
    var drawn: [BaseFrameRef] = []
    var windows: [Set<BaseFrameRef>] = []  // the window asked for as of each draw
    var window = Set<BaseFrameRef>()
    for tick in 0..<(60 * 4) {
      let time = Double(tick) / 60
      var effects = core.tick(now: time, audio: nil)
      while !effects.isEmpty {
        let effect = effects.removeFirst()
        switch effect {
        case .draw(let frame, _, _, _):
          effects += Self.presentAtProductionSize(frame, at: time, to: &core)
          drawn.append(BaseFrameRef(animation: frame.animation, index: frame.index))
        case .requestWindow(let frames, _):
          window = Set(frames)
        default:
          break
        }
      }
      if windows.count < drawn.count { windows.append(window) }
    }
    try #require(drawn.count > 60, "the scenario: a chunk and idle drawn")
    for index in 0..<(drawn.count - 3) {
      for ahead in drawn[(index + 1)...(index + 3)] where ahead != drawn[index] {
        #expect(windows[index].contains(ahead), "draw \(index): \(ahead) not asked for")
      }
    }
  }

  /// After the window was refreshed every frame, the demo still missed the first frames of
  /// speech: at 1280×768 the idle loop's next four frames filled the window and the way into
  /// talking was never decoded ahead.
  @Test(
    "idle at production size: the window holds the first frame into talking, the frame speech walks back to, and the next two idle frames"
  )
  func idleWindowHoldsTheWayIntoTalking() throws {
    let budget = Self.productionBudget
    var core = Self.productionCore()
    let intoTalking = BaseFrameRef(
      animation: try AnimationName(parsing: "idle_1_e_talking_1_s"), index: 0)
    var drawn: [BaseFrameRef] = []
    var windows: [[BaseFrameRef]] = []
    for tick in 0..<(60 * 3) {
      let time = Double(tick) / 60
      for case .draw(let frame, _, _, _) in core.tick(now: time, audio: nil) {
        Self.presentAtProductionSize(frame, at: time, to: &core)
        drawn.append(BaseFrameRef(animation: frame.animation, index: frame.index))
        windows.append(core.window(budget: budget))
      }
    }
    try #require(drawn.count > 20, "the scenario: idle drawn")
    for (index, window) in windows.enumerated() {
      #expect(window.count <= 6)
      #expect(window.contains(intoTalking), "draw \(index): \(window)")
      if index + 2 < drawn.count {
        #expect(window.contains(drawn[index + 1]) && window.contains(drawn[index + 2]))
      }
      // Speech walks the half that leaves idle_1_e back to it.
      let onScreen = drawn[index]
      if onScreen.animation.from == .idleEnd, onScreen.index > 0 {
        let behind = BaseFrameRef(animation: onScreen.animation, index: onScreen.index - 1)
        #expect(window.contains(behind), "draw \(index): \(window)")
      }
    }
  }

  /// `liva demo --size 1280x768` missed idle frames at the end of an idle half (3 runs in 4 in
  /// CI): speech was queued but held back while its images were still arriving on a
  /// delivering link, the window planned only the way into talking (the prediction assumes the
  /// images come at once), and idle went on to a frame nobody had asked for.
  @Test(
    "idle with speech held back at production size: the window holds the next idle frames as well as the way into talking"
  )
  func heldSpeechWindowHoldsIdle() throws {
    let budget = Self.productionBudget
    var core = Self.productionCore()
    let frames = try wireFrames(count: 30, tag: "held")
    // The chunk is planned; its images are still on the (delivering) link.
    _ = core.handle(planned(frames, chunk: 0, seconds: 1))
    var drawn: [BaseFrameRef] = []
    var windows: [Set<BaseFrameRef>] = []
    for tick in 0..<(60 * 4) {
      let time = Double(tick) / 60
      _ = core.linkDelivered()
      for case .draw(let frame, _, _, _) in core.tick(now: time, audio: nil) {
        Self.presentAtProductionSize(frame, at: time, to: &core)
        drawn.append(BaseFrameRef(animation: frame.animation, index: frame.index))
        windows.append(Set(core.window(budget: budget)))
      }
    }
    try #require(drawn.count > 20, "the scenario: idle drawn while speech waits")
    try #require(
      drawn.allSatisfy { !$0.animation.to.pose.isTalking }, "the scenario: speech held back")
    for index in 0..<(drawn.count - 2) where drawn[index + 1] != drawn[index] {
      #expect(
        windows[index].contains(drawn[index + 1]),
        "draw \(index): \(drawn[index + 1]) not asked for")
    }
  }
}

/// Hands `core` chunk 0 of `frames` as a backend does, its images first, every one of them
/// decoded at once; then its plan (`seconds` of audio) and its `chunk_images_ready`.
func queueDecodedChunk(_ frames: [OverlayFrame], seconds: Double, into core: inout PlayerCore) {
  for case .decode(let overlays) in core.handle(
    .frameImagesBatch(FrameImagesBatch(frames: frames, chunkIndex: 0)))
  {
    for overlay in overlays { _ = core.decoded(.imageReady(key: overlay.key)) }
  }
  _ = core.handle(planned(frames, chunk: 0, seconds: seconds))
  _ = core.handle(.chunkImagesReady(chunkIndex: 0, totalImagesSent: frames.count))
}
