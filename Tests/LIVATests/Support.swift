import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol

/// The frames a player presented.
final class FrameRecorder: @unchecked Sendable {
  // @unchecked: the virtual display link presents on the test's thread only.
  var frames: [RenderedFrame] = []
}

/// A player of the fixture avatar (or `avatar`) at `size`×`size`, no feather, presenting into
/// a ``FrameRecorder`` on a started virtual display link; its audio output's clock runs `skew`
/// off the display's. Decodes run on `scheduler` (inline by default: a handled event's images
/// are decoded when `handle` returns); `configure` sets the rest (a trailing closure is
/// `configure`); `observer` sees the engine's actions.
func makePlayer(
  size: Int = 64, skew: Double = 0, avatar: FixtureAvatar? = nil,
  scheduler: any DecodeScheduler = InlineDecodeScheduler(),
  configure: (inout LIVAPlayer.Configuration) -> Void = { _ in },
  observer: (@Sendable (EngineAction) -> Void)? = nil
) throws -> (LIVAPlayer, VirtualDisplayLink, HeadlessAudioOutput, FrameRecorder) {
  let avatar = try avatar ?? FixtureAvatar()
  var configuration = LIVAPlayer.Configuration()
  configuration.width = size
  configuration.height = size
  configuration.featherWidth = 0
  configure(&configuration)
  let audio = HeadlessAudioOutput(clockSkew: skew)
  let recorder = FrameRecorder()
  let player = LIVAPlayer(
    configuration: configuration, baseFrames: avatar.store, audio: audio,
    surface: CallbackSurface { recorder.frames.append($0) },
    decodeScheduler: scheduler, observer: observer)
  let link = VirtualDisplayLink()
  link.start { player.tick(now: $0) }
  return (player, link, audio, recorder)
}

/// Chunk 0 of a message: its images (batch 0), then its plan and audio (`frames.count / 30`
/// s); no `chunk_images_ready`, no `audio_end`.
func sendChunkZero(_ player: LIVAPlayer, frames: [OverlayFrame]) {
  player.handle(.frameImagesBatch(FrameImagesBatch(frames: frames, chunkIndex: 0, batchIndex: 0)))
  player.handle(planned(frames, chunk: 0, seconds: Double(frames.count) / 30))
}
