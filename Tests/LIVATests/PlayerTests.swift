import Foundation
import LIVA
import LIVAEngine
import LIVAPlatform
import LIVAProtocol
import LIVATestSupport
import Testing

@testable import LIVAMedia

@Suite("Player pipeline")
struct PlayerTests {
  /// A player configuration with an overlay store of `sprites` of the fixture's 8×8 mouths,
  /// `played` of them kept once played.
  static func overlayStore(sprites: Int, played: Int) -> (inout LIVAPlayer.Configuration) -> Void {
    { configuration in
      configuration.overlayByteLimit = 8 * 8 * 4 * sprites
      configuration.playedOverlayByteLimit = 8 * 8 * 4 * played
    }
  }

  func speak(_ player: LIVAPlayer, frames: [OverlayFrame], chunkSize: Int) {
    var start = 0
    var index = 0
    while start < frames.count {
      let slice = Array(frames[start..<min(start + chunkSize, frames.count)])
      player.handle(
        .frameImagesBatch(FrameImagesBatch(frames: slice, chunkIndex: index, batchIndex: 0)))
      player.handle(
        .audioChunk(
          AudioChunk(
            audio: silentMP3(seconds: Double(slice.count) / 30), chunkIndex: index,
            totalFrameImages: slice.count,
            animations: [ChunkAnimation(animationName: slice[0].animationName, sections: [slice])]))
      )
      player.handle(.chunkImagesReady(chunkIndex: index, totalImagesSent: slice.count))
      start += chunkSize
      index += 1
    }
    player.handle(.audioEnd)
  }

  /// Two chunks of 60 frames (2 s of audio each): at ±5 % the audio clock drifts 3 frames from
  /// the frame clock within a chunk, so lips that ignored it would be a frame or more off.
  @Test(
    "a message plays from idle to idle: every mouth drawn once, on its base frame, lips on the audio",
    arguments: [-0.05, 0, 0.05])
  func messagePlays(skew: Double) throws {
    let (player, link, audio, recorder) = try makePlayer(skew: skew)
    link.tick(at: 0)
    let frames = try wireFrames(count: 120, tag: "a")
    speak(player, frames: frames, chunkSize: 60)
    #expect(frames.allSatisfy { player.overlays.isReady($0.overlayId) })
    link.run(from: 0, to: 8)
    let metrics = player.metrics
    #expect(metrics.engine.pops == 0)
    #expect(metrics.engine.desyncs == 0)
    // A 60 Hz display never passes over a frame at this skew: every mouth is drawn.
    #expect(metrics.engine.overlayFramesDrawn == 120)
    #expect(metrics.engine.lateFrames == 0)
    #expect(metrics.baseFrameMisses == 0)
    #expect(player.mode == .idle)
    #expect(audio.segments.map(\.chunk.index) == [0, 1])
    // Each mouth is drawn in the audio's frame: from its start to one frame after.
    #expect(metrics.lipSync.count >= 110)
    #expect(metrics.lipSync.maxAbsolute < 1.0 / 30)
    // The composited pixels: the mouth colour at its rect (scaled ×2), the base colour elsewhere.
    let talking = recorder.frames.first { $0.content.overlayIndex == 10 }!
    func pixel(_ frame: RenderedFrame, _ x: Int, _ y: Int) -> [UInt8] {
      Array(frame.pixels[(y * frame.width + x) * 4..<(y * frame.width + x) * 4 + 4])
    }
    let m = FixtureAvatar.mouth
    #expect(pixel(talking, 32, 48) == [m.r, m.g, m.b, 255])
    let base = FixtureAvatar.baseColour(talking.content.animation.rawValue, talking.content.index)
    #expect(pixel(talking, 4, 4) == [base.r, base.g, base.b, 255])
  }

  /// A message's frames, `perChunk` a chunk, each chunk's mouths its own (their ids name it).
  static func ownMouths(chunks: Int, perChunk: Int) throws -> [OverlayFrame] {
    let sprite = try FixtureAvatar.sprite()
    return try wireWalk(chunks * perChunk).enumerated().map { position, entry in
      OverlayFrame(
        overlayId: "\(entry.0)/\(entry.1)/c\(position / perChunk).png",
        animationName: try AnimationName(parsing: entry.0),
        matchedSpriteFrameNumber: entry.1, sequenceIndex: position % perChunk,
        coordinates: PlacementRect(x: 12, y: 20, width: 8, height: 8),
        image: EncodedImage(data: sprite, mimeType: "image/png"))
    }
  }

  /// Issue: one message of 24 chunks sent as fast as the backend made them, its distinct mouths
  /// 184 MiB decoded against a 64 MiB store: ~430 mouths were never drawn (decoded on arrival,
  /// stored unowned, and the earliest pushed out by the latest before they were drawn).
  @Test(
    "speech sent far ahead, its distinct mouths four times the overlay store: every mouth is drawn, the store stays within its bytes"
  )
  func farAheadSpeechPlaysWhole() throws {
    let chunks = 8
    let perChunk = 30
    let limit = 8 * 8 * 4 * perChunk * 2  // two chunks' mouths
    let (player, link, _, _) = try makePlayer(
      configure: Self.overlayStore(sprites: perChunk * 2, played: 4))
    link.tick(at: 0)
    speak(
      player, frames: try Self.ownMouths(chunks: chunks, perChunk: perChunk), chunkSize: perChunk)
    var peak = 0
    var time = 0.0
    while time < 14 {
      time += 1.0 / 60
      link.tick(at: time)
      peak = max(peak, player.overlays.statistics.bytes)
    }
    let metrics = player.metrics
    #expect(metrics.engine.overlayFramesDrawn == chunks * perChunk)
    #expect(metrics.engine.skippedOverlays == 0)
    #expect(metrics.engine.pops == 0)
    #expect(peak <= limit)
    #expect(player.mode == .idle)
  }

  /// The ahead recording, once a chunk waited for its first frames to decode: the window had
  /// room for about one chunk's mouths, so the next chunk's images waited for the playing one
  /// to finish, which it does only when the next starts: each boundary waited the longest
  /// start wait (1.5 s).
  @Test(
    "speech sent far ahead, room for one chunk's mouths: each next chunk's first frames decode while the one before plays, no boundary waits"
  )
  func farAheadNextChunkStartsOnTime() throws {
    let chunks = 4
    let perChunk = 30
    let (player, link, _, _) = try makePlayer(
      configure: Self.overlayStore(sprites: perChunk + 12, played: 12))
    link.tick(at: 0)
    speak(
      player, frames: try Self.ownMouths(chunks: chunks, perChunk: perChunk), chunkSize: perChunk)
    link.run(from: 0, to: 8)
    let metrics = player.metrics
    #expect(metrics.engine.boundaryWaits == 0)
    #expect(metrics.engine.holds(.waitingForNextChunk) == 0)
    #expect(metrics.engine.overlayFramesDrawn == chunks * perChunk)
    #expect(metrics.evictedQueuedImages == 0)
    #expect(player.mode == .idle)
  }

  @Test(
    "a chunk whose distinct mouths alone outgrow the store: the mouths pushed out are counted, not lost silently"
  )
  func oversizeChunkCountsLostMouths() throws {
    let (player, link, _, _) = try makePlayer(configure: Self.overlayStore(sprites: 10, played: 2))
    link.tick(at: 0)
    let frames = try wireFrames(count: 30, tag: "big")  // 28 distinct mouths
    speak(player, frames: frames, chunkSize: 30)
    link.run(from: 0, to: 4)
    let metrics = player.metrics
    #expect(metrics.evictedQueuedImages > 0)
    #expect(metrics.engine.overlayFramesDrawn + metrics.evictedQueuedImages >= 28)
  }

  @Test(
    "images no plan ever claims, four times the overlay store, neither block the decode window nor stay held: the next message plays whole"
  )
  func orphanImagesDoNotBlockTheWindow() throws {
    let (player, link, _, _) = try makePlayer(configure: Self.overlayStore(sprites: 60, played: 4))
    link.tick(at: 0)
    let sprite = try FixtureAvatar.sprite()
    for batch in 0..<8 {
      let orphans = try (0..<30).map { index in
        OverlayFrame(
          overlayId: "orphan/\(batch)/\(index).png",
          animationName: try AnimationName(parsing: "talking_1_s_talking_1_e"),
          matchedSpriteFrameNumber: 0, sequenceIndex: index,
          coordinates: PlacementRect(x: 12, y: 20, width: 8, height: 8),
          image: EncodedImage(data: sprite, mimeType: "image/png"))
      }
      player.handle(
        .frameImagesBatch(FrameImagesBatch(frames: orphans, chunkIndex: batch, batchIndex: 0)))
    }
    let frames = try wireFrames(count: 90, tag: "real")
    speak(player, frames: frames, chunkSize: 30)
    link.run(from: 0, to: 8)
    #expect(player.metrics.engine.overlayFramesDrawn == 90)
    #expect(player.metrics.engine.skippedOverlays == 0)
  }

  @Test("a new message interrupts the old one: its audio stops and its mouths never come back")
  func interrupts() throws {
    let (player, link, audio, recorder) = try makePlayer()
    link.tick(at: 0)
    let first = try wireFrames(count: 60, tag: "a")
    speak(player, frames: first, chunkSize: 20)
    #expect(first.allSatisfy { player.overlays.isReady($0.overlayId) })
    link.run(from: 0, to: 1.2)
    let second = try wireFrames(count: 20, tag: "b")
    speak(player, frames: second, chunkSize: 20)
    #expect(second.allSatisfy { player.overlays.isReady($0.overlayId) })
    link.run(from: 1.2, to: 5)
    #expect(audio.segments.contains { $0.stoppedAt != nil })
    let after = recorder.frames.filter { $0.time > 1.2 }
    #expect(!after.contains { $0.content.overlays.contains { $0.key.hasSuffix("/a.png") } })
    #expect(after.filter { !$0.content.overlays.isEmpty }.count == 20)
    // Its images are content nobody claims any more: the first to go when room is needed.
    player.purgeMemory([.playedOverlays])
    #expect(!first.contains { player.overlays.isReady($0.overlayId) })
    #expect(player.metrics.engine.interrupts == 1)
    #expect(player.heldChunks == 0)
  }

  @Test(
    "a new message 0.3 s into the first, its batches before its audio: all of its mouths and audio play"
  )
  func newMessageBatchesFirst() throws {
    let (player, link, audio, recorder) = try makePlayer()
    link.tick(at: 0)
    let first = try wireFrames(count: 60, tag: "a")
    speak(player, frames: first, chunkSize: 60)
    link.run(from: 0, to: 0.3)
    #expect(player.metrics.engine.overlayFramesDrawn > 0)
    // The second message: its chunk-0 batch (batch_index 0 again) comes before its audio.
    let second = try wireFrames(count: 20, tag: "b")
    speak(player, frames: second, chunkSize: 20)
    link.run(from: 0.3, to: 5)
    let after = recorder.frames.filter { $0.time > 0.3 }
    #expect(
      after.filter { $0.content.overlays.contains { $0.key.hasSuffix("/b.png") } }.count == 20)
    #expect(audio.segments.contains { $0.chunk.message == MessageID(1) })
    #expect(player.metrics.engine.interrupts == 1)
    #expect(player.metrics.engine.pops == 0 && player.metrics.engine.desyncs == 0)
  }

  @Test("a corrupt image costs its mouth only; the chunk's audio starts on its first slot")
  func corruptImage() throws {
    let (player, link, audio, recorder) = try makePlayer()
    link.tick(at: 0)
    var frames = try wireFrames(count: 20, tag: "c")
    frames[0].image = EncodedImage(data: Data(repeating: 0x42, count: 64))  // not an image
    speak(player, frames: frames, chunkSize: 20)
    link.run(from: 0, to: 4)
    let speech = recorder.frames.filter { $0.content.chunk != nil }
    #expect(speech.compactMap(\.content.overlayIndex) == Array(0..<20))
    #expect(speech.first?.content.overlays.isEmpty == true)
    #expect(audio.segments.first?.start == speech.first?.time)
    #expect(player.metrics.failedImages == 1)
    #expect(player.metrics.engine.mouthlessFrames == 1)
    #expect(player.metrics.engine.holds(.overlayNotReady) == 0)
  }

  @Test("an audio-only chunk 0 interrupts the old message and its audio plays")
  func audioOnlyChunkZero() throws {
    let (player, link, audio, _) = try makePlayer()
    link.tick(at: 0)
    speak(player, frames: try wireFrames(count: 60, tag: "a"), chunkSize: 60)
    link.run(from: 0, to: 1)
    player.handle(.audioChunk(AudioChunk(audio: silentMP3(seconds: 1), chunkIndex: 0)))
    player.handle(.audioEnd)
    link.run(from: 1, to: 5)
    #expect(audio.segments.contains { $0.chunk == ChunkID(message: MessageID(1), index: 0) })
    #expect(audio.segments.contains { $0.chunk.message == MessageID(0) && $0.stoppedAt != nil })
    #expect(player.metrics.engine.pops == 0)
    #expect(player.mode == .idle)
  }

  @Test("pause and resume: picture and audio stop together and go on together, nothing jumps")
  func pauseResume() throws {
    let (player, link, audio, recorder) = try makePlayer()
    link.tick(at: 0)
    let frames = try wireFrames(count: 60, tag: "p")
    speak(player, frames: frames, chunkSize: 60)
    link.run(from: 0, to: 1)
    let before = try #require(recorder.frames.last)
    let position = audio.position(at: 1)
    player.pause()
    #expect(player.isPaused)
    link.run(from: 1, to: 3)
    #expect(recorder.frames.last?.time == before.time)  // nothing drawn while paused
    #expect(audio.position(at: 3)?.position == position?.position)  // the audio stood still
    player.resume()
    link.run(from: 3, to: 8)
    let after = recorder.frames.filter { $0.time > 3 }
    let firstAfter = try #require(after.first)
    #expect(firstAfter.content.overlayIndex.map { $0 - (before.content.overlayIndex ?? 0) } == 1)
    #expect(player.metrics.lipSync.maxAbsolute <= 1.0 / 30 + 1e-9)
    #expect(player.metrics.engine.overlayFramesDrawn == 60)
    #expect(player.metrics.engine.pops == 0)
  }

  @Test("debug step mode: one slot forward, back to the frame before, described")
  func stepMode() throws {
    let (player, link, _, recorder) = try makePlayer()
    link.tick(at: 0)
    link.run(from: 0, to: 0.3)  // idle frame 3 of 6
    let onScreen = try #require(recorder.frames.last?.content)
    let next = try #require(player.stepForward())
    #expect(player.isPaused)
    #expect(next.animation == onScreen.animation && next.index == onScreen.index + 1)
    #expect(recorder.frames.last?.content == next)
    #expect(player.describe().description.contains("base=\(next.animation)#\(next.index)"))
    #expect(player.stepBackward() == onScreen)
    #expect(recorder.frames.last?.content == onScreen)
    player.resume()
    #expect(!player.isPaused)
  }

  @Test(
    "a chunk handled after the connection-lost report (received before the drop) plays out without a boundary hold"
  )
  func lateEventsAfterDrop() throws {
    let (player, link, audio, _) = try makePlayer()
    link.tick(at: 0)
    player.connectionLost()  // the status task ran first
    let frames = try wireFrames(count: 20, tag: "d")
    sendChunkZero(player, frames: frames)
    link.run(from: 0, to: 4)
    #expect(audio.segments.count == 1)
    #expect(player.metrics.engine.holds(.waitingForNextChunk) == 0)
    #expect(player.mode == .idle)
    // Back online, a message without audio_end waits at its boundary again.
    player.connectionRestored()
    sendChunkZero(player, frames: frames)
    link.run(from: 4, to: 8)
    #expect(audio.segments.count == 2)
    #expect(player.metrics.engine.holds(.waitingForNextChunk) > 0)
  }

  @Test(
    "decode ahead, not preload: with memory for 14 frames, a message plays with no base-frame miss, and idle frame 0 stays in"
  )
  func decodeAhead() throws {
    let frameBytes = FixtureAvatar.size * FixtureAvatar.size * 4
    let avatar = try FixtureAvatar(memoryByteLimit: 14 * frameBytes, preload: false)
    let (player, link, _, _) = try makePlayer(avatar: avatar) {
      $0.baseFrameBudget = 14 * frameBytes
    }
    let idleZero = AnimationName.idleForward
    #expect(avatar.store.decodedFrame(0, of: idleZero) != nil)  // in before the first tick
    link.tick(at: 0)
    link.run(from: 0, to: 1)
    speak(player, frames: try wireFrames(count: 60, tag: "w"), chunkSize: 30)
    var idleZeroAlways = true
    var peak = 0
    for second in 1..<8 {
      link.run(from: Double(second), to: Double(second + 1))
      idleZeroAlways = idleZeroAlways && avatar.store.decodedFrame(0, of: idleZero) != nil
      peak = max(peak, avatar.store.statistics.memoryBytes)
    }
    let metrics = player.metrics
    #expect(metrics.baseFrameMisses == 0)
    #expect(metrics.engine.overlayFramesDrawn == 60)
    #expect(metrics.engine.pops == 0 && metrics.engine.desyncs == 0)
    #expect(idleZeroAlways)
    #expect(peak <= 14 * frameBytes)
    #expect(player.mode == .idle)
    // Fewer frames decoded at once than the avatar has: a window, not a preload.
    #expect(peak < FixtureAvatar.counts.values.reduce(0, +) * frameBytes)
  }

  /// Decodes only when the test says: a worker that has not got round to it yet.
  final class ManualDecodeScheduler: DecodeScheduler, @unchecked Sendable {
    // @unchecked: used from the test's thread only.
    var queued: [@Sendable () -> Void] = []
    func schedule(_ work: @escaping @Sendable () -> Void) { queued.append(work) }
    func runAll() {
      while !queued.isEmpty { queued.removeFirst()() }
    }
  }

  @Test(
    "a base frame missed on a tick is shown on the first tick after it is decoded, not when the next frame is due"
  )
  func missedFrameShownWhenReady() throws {
    let avatar = try FixtureAvatar(preload: false)
    let scheduler = ManualDecodeScheduler()
    let (player, link, _, recorder) = try makePlayer(avatar: avatar, scheduler: scheduler)
    link.tick(at: 0)
    #expect(recorder.frames.isEmpty)
    #expect(player.metrics.baseFrameMisses == 1)
    scheduler.runAll()
    link.tick(at: 1.0 / 60)
    // Idle runs at 10 fps: without the retry the first frame would wait until 0.1 s.
    #expect(recorder.frames.first?.time == 1.0 / 60)
    #expect(recorder.frames.first?.content.index == 0)
    #expect(player.metrics.baseFrameMisses == 1)
    link.run(from: 1.0 / 60, to: 0.35)
    scheduler.runAll()
    // Then the idle loop goes on at its own pace: frames 1, 2, 3 at 0.1, 0.2, 0.3 s.
    #expect(recorder.frames.map(\.content.index).prefix(4) == [0, 1, 2, 3])
  }

  /// A player on idle frame 0 whose memory then holds only that frame, and whose worker runs
  /// only when the test says.
  func playerWithWorkerBehind() throws -> (
    LIVAPlayer, VirtualDisplayLink, FrameRecorder, ManualDecodeScheduler, FixtureAvatar
  ) {
    let avatar = try FixtureAvatar(preload: false)
    let scheduler = ManualDecodeScheduler()
    let (player, link, _, recorder) = try makePlayer(avatar: avatar, scheduler: scheduler)
    link.tick(at: 0)  // idle frame 0, read inline
    scheduler.runAll()
    avatar.store.purgeMemory(keeping: [BaseFrameRef(animation: .idleForward, index: 0)])
    return (player, link, recorder, scheduler, avatar)
  }

  @Test(
    "a base frame missed outside speech is shown late, never skipped: the body does not jump"
  )
  func missedFrameNeverSkipped() throws {
    // The worker falls behind by two slots.
    let (player, link, recorder, scheduler, _) = try playerWithWorkerBehind()
    link.run(from: 1.0 / 60, to: 0.25)
    #expect(player.metrics.baseFrameMisses >= 2)
    scheduler.runAll()
    link.run(from: 0.25, to: 0.6)
    scheduler.runAll()
    link.run(from: 0.6, to: 1.0)
    let indices = recorder.frames.map(\.content.index)
    #expect(indices.prefix(4) == [0, 1, 2, 3], "\(indices)")
    // Every frame is the one after the frame before: no index skipped.
    #expect(zip(indices, indices.dropFirst()).allSatisfy { $1 == $0 + 1 || $1 == 0 }, "\(indices)")
  }

  @Test(
    "a base frame that never comes holds the body for at most two more slots, then it goes on"
  )
  func missedFrameBounded() throws {
    let (_, link, recorder, scheduler, avatar) = try playerWithWorkerBehind()
    // Frame 1 never arrives (its worker never runs) until 0.45 s: slots 0.1, 0.2, 0.3 hold it,
    // 0.4 goes on to frame 2, which the worker then brings.
    link.run(from: 1.0 / 60, to: 0.45)
    scheduler.queued.removeAll()
    _ = try avatar.store.frame(2, of: .idleForward)
    _ = try avatar.store.frame(3, of: .idleForward)
    link.run(from: 0.45, to: 0.55)
    #expect(
      recorder.frames.map(\.content.index) == [0, 2, 3], "\(recorder.frames.map(\.content.index))")
  }

  @Test(
    "the first frame of a session is the kept idle frame, read on the first tick: no wait for a worker"
  )
  func keptFirstFrameOnTheFirstTick() throws {
    let avatar = try FixtureAvatar(preload: false)
    // An earlier session decoded idle frame 0 once and kept it raw on disk; memory is empty.
    _ = try avatar.store.frame(0, of: .idleForward)
    avatar.store.purgeMemory()
    #expect(avatar.store.decodedFrame(0, of: .idleForward) == nil)
    let scheduler = ManualDecodeScheduler()  // no worker gets round to anything
    let (player, link, _, recorder) = try makePlayer(avatar: avatar, scheduler: scheduler)
    link.tick(at: 0)
    #expect(recorder.frames.first?.time == 0)
    #expect(recorder.frames.first?.content.index == 0)
    #expect(recorder.frames.first?.content.animation == .idleForward)
    #expect(player.metrics.baseFrameMisses == 0)
    // Only the very first frame is read inline: later ones wait for the worker as before.
    link.run(from: 1.0 / 60, to: 0.15)
    #expect(recorder.frames.count == 1)
    #expect(player.metrics.baseFrameMisses >= 1)
    scheduler.runAll()
    link.run(from: 0.15, to: 0.25)
    #expect(recorder.frames.map(\.content.index).prefix(2) == [0, 1])
  }

  @Test(
    "memory pressure: a purge while paused leaves idle frame 0 and the frame on screen; after resuming, no blank frame and no miss"
  )
  func purgeMemory() throws {
    let frameBytes = FixtureAvatar.size * FixtureAvatar.size * 4
    let avatar = try FixtureAvatar()  // every frame decoded
    let (player, link, _, recorder) = try makePlayer(avatar: avatar)
    link.run(from: 0, to: 0.35)
    let onScreen = try #require(recorder.frames.last?.content)
    #expect(avatar.store.statistics.memoryBytes > 10 * frameBytes)
    // In the background: paused, then everything but what is on screen and idle frame 0.
    player.pause()
    player.purgeMemory([.framePoolSpares, .playedOverlays, .decodedFrames])
    #expect(avatar.store.statistics.memoryBytes <= 2 * frameBytes)
    #expect(avatar.store.decodedFrame(0, of: .idleForward) != nil)
    #expect(avatar.store.decodedFrame(onScreen.index, of: onScreen.animation) != nil)
    link.run(from: 0.35, to: 10)
    player.resume()
    let presented = recorder.frames.count
    link.run(from: 10, to: 13)
    #expect(player.metrics.baseFrameMisses == 0)
    #expect(recorder.frames.count > presented + 20)
    // In the foreground: what is outside the window goes, playback does not notice.
    player.purgeMemory([.decodedFramesBehind])
    let window = player.windowFrames
    #expect(avatar.store.statistics.memoryBytes <= window.count * frameBytes)
    #expect(avatar.store.decodedFrame(0, of: .idleForward) != nil)
    link.run(from: 13, to: 16)
    #expect(player.metrics.baseFrameMisses == 0)
  }

  /// A headless output that also records what it was handed ahead of time.
  final class PreparingAudio: AudioOutput, @unchecked Sendable {
    // @unchecked: used from the test's thread only.
    let base = HeadlessAudioOutput()
    var prepared: [ChunkID] = []
    var startedWhenPrepared: [Int] = []
    func start(_ chunk: ChunkID, audio: Data, offset: Double, at time: Double) {
      base.start(chunk, audio: audio, offset: offset, at: time)
    }
    func stop(_ chunk: ChunkID, at time: Double) { base.stop(chunk, at: time) }
    func pause(at time: Double) { base.pause(at: time) }
    func resume(at time: Double) { base.resume(at: time) }
    func position(at time: Double) -> AudioClock? { base.position(at: time) }
    func prepare(_ chunk: ChunkID, audio: Data, at time: Double) {
      prepared.append(chunk)
      startedWhenPrepared.append(base.segments.count)
    }
  }

  @Test("each chunk's audio is handed to the output as soon as it is queued, before it starts")
  func audioPreparedAhead() throws {
    let avatar = try FixtureAvatar()
    let audio = PreparingAudio()
    var configuration = LIVAPlayer.Configuration()
    configuration.featherWidth = 0
    let player = LIVAPlayer(
      configuration: configuration, baseFrames: avatar.store, audio: audio,
      surface: CallbackSurface { _ in }, decodeScheduler: InlineDecodeScheduler())
    let link = VirtualDisplayLink()
    link.start { player.tick(now: $0) }
    link.run(from: 0, to: 0.5)
    speak(player, frames: try wireFrames(count: 90, tag: "p"), chunkSize: 30)
    link.run(from: 0.5, to: 6)
    #expect(audio.prepared.map(\.index) == [0, 1, 2])
    // All three were handed over before the first one started.
    #expect(audio.startedWhenPrepared == [0, 0, 0])
    #expect(audio.base.segments.map(\.chunk) == audio.prepared)
  }
}
