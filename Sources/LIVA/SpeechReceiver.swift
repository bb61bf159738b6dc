import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol

/// Which message each incoming speech event belongs to, and what the player must do with it.
///
/// A pure state machine (no clock, no locks, no I/O): every input is a `mutating` method that
/// returns the ``Action``s for the owner, and time comes in as an argument. It gives every
/// message one ``MessageID`` that the engine, the ingest pipeline and the overlay store all
/// use, so images, plans and evictions never have to be matched up afterwards.
///
/// The protocol marks a new message only by `chunk_index == 0`, and lets a chunk's image
/// batches come before its `receive_audio`. The rules (protocol.md is silent on the
/// ambiguous cases; these are the robust readings):
/// - `receive_audio` with chunk 0 opens a new message, unless the open message was itself
///   opened by chunk-0 batches (or a chunk-0 `animation_chunk_metadata`) and has no chunk-0
///   audio yet: then it is that message's audio.
/// - A chunk-0 image batch opens a new message when nothing is open, when the open message
///   has ended (`audio_end`) or has moved past chunk 0, or when the open message's chunk 0
///   already had a batch with the same `batch_index`.
/// - A chunk > 0 whose `master_chunk_index` is below the open message's chunk 0 is stale (it
///   belongs to an interrupted message) and is dropped; so is an `audio_end` that follows
///   such a stale event.
/// - Older per-image variant: `animation_chunk_metadata` (the plan) and an audio-only
///   `receive_audio` of the same chunk are paired, whichever comes first. Audio without a plan
///   waits ``pairingTimeout`` seconds for one, then plays with mouthless slots for its
///   duration, so no audio is ever lost.
public struct SpeechReceiver: Sendable {
  /// What the owner must do.
  public enum Action: Sendable, Equatable {
    /// Give this plan to the engine, and keep the chunk's audio (nil: none) for when the engine
    /// starts it.
    case enqueue(ChunkPlan, audio: Data?)
    /// Decode these images for `message` (their keys are the overlay ids).
    case decode([EncodedOverlay], chunk: Int, message: MessageID)
    /// These images will not come (rejected in the event): the engine draws their frames
    /// without them.
    case imagesFailed([String])
    /// `chunk_images_ready` for the chunk of `message`.
    case imagesSent(chunk: Int, message: MessageID, total: Int)
    /// `audio_end` of the open message.
    case audioEnded(MessageID)
    /// An event was dropped as stale (it belongs to an interrupted message).
    case stale(event: String, chunk: Int?)
  }

  private struct Open: Sendable {
    let id: MessageID
    var masterBase: Int?
    var chunk0Audio = false
    var chunk0Plan = false
    var chunk0Batches: Set<Int> = []
    var pastChunk0 = false
    var ended = false
  }

  private struct Pending: Sendable {
    var message: MessageID
    var audio: Data?
    var frames: [PlannedFrame]?
    var since: Double
  }

  /// How long an audio-only chunk waits for its `animation_chunk_metadata`, in seconds.
  public var pairingTimeout: Double
  /// The speaking frame rate, for the mouthless slots of a chunk without a plan.
  public var speakingFPS: Double
  private var open: Open?
  private var nextMessage = 0
  private var lastEventMessage: MessageID?
  private var pending: [Int: Pending] = [:]

  /// Creates a receiver; message numbers start at 0.
  public init(pairingTimeout: Double = 0.5, speakingFPS: Double = 30) {
    self.pairingTimeout = pairingTimeout
    self.speakingFPS = speakingFPS
  }

  /// The message being received, if any.
  public var currentMessage: MessageID? { open?.id }

  // MARK: - Inputs

  /// Handles one decoded speech event at time `now` (any monotonic clock, the same as
  /// ``expire(now:)``'s). Events that are not speech return no action.
  public mutating func receive(_ event: ServerEvent, now: Double) -> [Action] {
    switch event {
    case .audioChunk(let chunk):
      return audioChunk(chunk, now: now)
    case .frameImagesBatch(let batch):
      return images(batch.frames, chunk: batch.chunkIndex, batchIndex: batch.batchIndex)
    case .frameImage(let frame):
      return images([frame], chunk: frame.chunkIndex ?? 0, batchIndex: nil)
    case .chunkImagesReady(let chunk, let total):
      guard let id = attribute(chunk: chunk) else {
        return [.stale(event: "chunk_images_ready", chunk: chunk)]
      }
      return [.imagesSent(chunk: chunk, message: id, total: total)]
    case .audioEnd:
      guard let current = open, lastEventMessage == current.id, !current.ended else {
        return [.stale(event: "audio_end", chunk: nil)]
      }
      open?.ended = true
      // Audio still waiting for its plan plays now: nothing more will come.
      return flushPending(of: current.id) + [.audioEnded(current.id)]
    case .animationChunkMetadata(let metadata):
      return metadataPlan(metadata, now: now)
    default:
      return []
    }
  }

  /// Plays audio that waited longer than ``pairingTimeout`` for its plan.
  public mutating func expire(now: Double) -> [Action] {
    var actions: [Action] = []
    for (chunk, entry) in pending.sorted(by: { $0.key < $1.key })
    where entry.audio != nil && now - entry.since >= pairingTimeout {
      pending[chunk] = nil
      actions.append(enqueueAction(chunk: chunk, entry))
    }
    return actions
  }

  /// The connection is gone: audio waiting for a plan plays now.
  public mutating func connectionLost() -> [Action] {
    guard let id = open?.id else { return [] }
    return flushPending(of: id)
  }

  // MARK: - Attribution

  private mutating func openMessage() -> MessageID {
    let id = MessageID(nextMessage)
    nextMessage += 1
    open = Open(id: id)
    pending = [:]
    return id
  }

  /// The message of an event of chunk `chunk` that is not a chunk-0 opener.
  private mutating func attribute(chunk: Int, master: Int? = nil) -> MessageID? {
    if let current = open {
      if chunk > 0, let master, let base = current.masterBase, master < base {
        lastEventMessage = nil
        return nil
      }
      if chunk > 0 { open?.pastChunk0 = true }
      lastEventMessage = current.id
      return current.id
    }
    let id = openMessage()
    if chunk > 0 { open?.pastChunk0 = true }
    lastEventMessage = id
    return id
  }

  private mutating func audioChunk(_ chunk: AudioChunk, now: Double) -> [Action] {
    let frames = Self.plannedFrames(chunk)
    let id: MessageID
    if chunk.chunkIndex == 0 {
      if let current = open, !current.chunk0Audio, !current.pastChunk0, !current.ended,
        frames.isEmpty || !current.chunk0Plan
      {
        id = current.id  // the audio of a message its batches (or plan) opened
      } else {
        id = openMessage()
      }
      open?.chunk0Audio = true
      open?.masterBase = chunk.masterChunkIndex
      lastEventMessage = id
    } else {
      guard let owner = attribute(chunk: chunk.chunkIndex, master: chunk.masterChunkIndex) else {
        return [.stale(event: "receive_audio", chunk: chunk.chunkIndex)]
      }
      id = owner
    }
    var actions: [Action] = []
    if let first = chunk.firstFrameImage, let sheet = first.sheetFilename,
      let frame = chunk.animations.lazy.flatMap({ $0.sections.joined() }).first(where: {
        !$0.isRejected
      }), frame.sheetFilename == sheet
    {
      // `first_frame_image`: the first mouth, ahead of its batch.
      actions.append(
        .decode(
          [EncodedOverlay(key: frame.overlayId, data: first.image.data)], chunk: chunk.chunkIndex,
          message: id))
    }
    if frames.isEmpty {
      // Audio only: pair it with its plan (older variant), or play it without one later.
      if var entry = pending[chunk.chunkIndex], entry.message == id, let planned = entry.frames {
        pending[chunk.chunkIndex] = nil
        entry.audio = chunk.audio
        entry.frames = planned
        actions.append(enqueueAction(chunk: chunk.chunkIndex, entry))
      } else {
        pending[chunk.chunkIndex] = Pending(
          message: id, audio: chunk.audio, frames: nil, since: now)
      }
      return actions
    }
    if chunk.chunkIndex == 0 { open?.chunk0Plan = true }
    actions.append(
      .enqueue(ChunkPlan(index: chunk.chunkIndex, frames: frames, message: id), audio: chunk.audio))
    return actions
  }

  private mutating func metadataPlan(_ metadata: AnimationChunkMetadata, now: Double) -> [Action] {
    let frames = metadata.sections.flatMap { section in
      section.frames.map { Self.plannedFrame($0, zone: nil) }
    }
    let id: MessageID
    if metadata.chunkIndex == 0 {
      if let current = open, !current.chunk0Plan, !current.pastChunk0, !current.ended {
        id = current.id
      } else {
        id = openMessage()
      }
      open?.chunk0Plan = true
      lastEventMessage = id
    } else {
      guard let owner = attribute(chunk: metadata.chunkIndex) else {
        return [.stale(event: "animation_chunk_metadata", chunk: metadata.chunkIndex)]
      }
      id = owner
    }
    if var entry = pending[metadata.chunkIndex], entry.message == id, entry.audio != nil {
      pending[metadata.chunkIndex] = nil
      entry.frames = frames
      return [enqueueAction(chunk: metadata.chunkIndex, entry)]
    }
    pending[metadata.chunkIndex] = Pending(message: id, audio: nil, frames: frames, since: now)
    return []
  }

  private mutating func images(_ frames: [OverlayFrame], chunk: Int, batchIndex: Int?) -> [Action] {
    let id: MessageID
    if chunk == 0 {
      let reopens: Bool
      if let current = open {
        reopens =
          current.ended || current.pastChunk0
          || batchIndex.map { current.chunk0Batches.contains($0) } ?? false
      } else {
        reopens = true
      }
      if let current = open, !reopens { id = current.id } else { id = openMessage() }
      if let batchIndex { open?.chunk0Batches.insert(batchIndex) }
      lastEventMessage = id
    } else {
      guard let owner = attribute(chunk: chunk) else {
        return [.stale(event: "receive_frame_images_batch", chunk: chunk)]
      }
      id = owner
    }
    var encoded: [EncodedOverlay] = []
    var failed: [String] = []
    encoded.reserveCapacity(frames.count)
    for frame in frames {
      if let overlay = EncodedOverlay(frame) {
        encoded.append(overlay)
      } else if frame.isRejected {
        failed.append(frame.overlayId)
      }
    }
    var actions: [Action] = []
    if !failed.isEmpty { actions.append(.imagesFailed(failed)) }
    if !encoded.isEmpty { actions.append(.decode(encoded, chunk: chunk, message: id)) }
    return actions
  }

  private mutating func flushPending(of id: MessageID) -> [Action] {
    var actions: [Action] = []
    for (chunk, entry) in pending.sorted(by: { $0.key < $1.key })
    where entry.message == id && entry.audio != nil {
      pending[chunk] = nil
      actions.append(enqueueAction(chunk: chunk, entry))
    }
    return actions
  }

  private func enqueueAction(chunk: Int, _ entry: Pending) -> Action {
    var frames = entry.frames ?? []
    if frames.isEmpty, let audio = entry.audio, let timing = try? MP3Timing(parsing: audio) {
      // No plan: the audio's duration in mouthless slots, so the audio still plays on time.
      let slots = Int((timing.duration * speakingFPS).rounded())
      frames = Array(repeating: .continuation(animation: .idleForward), count: max(0, slots))
    }
    return .enqueue(
      ChunkPlan(index: chunk, frames: frames, message: entry.message), audio: entry.audio)
  }

  // MARK: - Plans

  /// The engine's frames of a `receive_audio` plan: one slot per frame object, in order, a
  /// rejected frame object as a mouthless slot that keeps its time.
  static func plannedFrames(_ chunk: AudioChunk) -> [PlannedFrame] {
    chunk.animations.flatMap { animation in
      animation.sections.flatMap { section in
        section.map { plannedFrame($0, zone: animation.zoneTopLeft) }
      }
    }
  }

  static func plannedFrame(_ frame: OverlayFrame, zone: SIMD2<Double>?) -> PlannedFrame {
    guard !frame.isRejected, frame.matchedSpriteFrameNumber >= 0 else {
      return .continuation(animation: frame.animationName)
    }
    var frame = frame
    if frame.zoneTopLeft == nil { frame.zoneTopLeft = zone }
    return PlannedFrame(
      key: frame.overlayId, animation: frame.animationName,
      baseFrame: frame.matchedSpriteFrameNumber,
      rect: frame.placement ?? PlacementRect(x: 0, y: 0, width: 0, height: 0))
  }
}
