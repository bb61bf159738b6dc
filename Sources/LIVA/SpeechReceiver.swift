import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol

/// Which message each incoming speech event belongs to, and what the player must do with it.
///
/// A pure state machine (no clock, no locks, no I/O): every input is a `mutating` method that
/// returns the ``Action``s for the owner, and time comes in as an argument. It gives every
/// message one ``MessageID``; the engine's plans carry it.
///
/// The rules, in the protocol's terms (see `docs/Protocol.md`, "Message identity"):
/// - **Only a new chunk 0 starts a message.** A `receive_audio` with `chunk_index == 0` opens a
///   message (and so interrupts the one playing) unless it is a re-send of the open message's
///   chunk 0: the same audio and plan with the same `master_chunk_index`, or, when either has
///   none, while that message is still being received. Nothing else opens or interrupts a message.
/// - **Images belong to no message.** `overlay_id` is a content key (one id, one image), so
///   batches, per-image events and `first_frame_image` only fill the image store; a re-sent or
///   late batch costs a dedupe, never a message. A chunk is ready from its plan's ids.
/// - **Chunks after chunk 0** join the open message when their `master_chunk_index` says so
///   (`master - base == chunk_index`), or, without a usable master, when the open message has
///   no chunk of that index yet and has not ended. One with a master below the open message's
///   chunk 0 is stale (an interrupted message) and dropped; a re-send of a chunk the open
///   message has is dropped as a duplicate; a chunk that cannot be the open message's (its
///   index is taken by other content, or the message ended) is parked as *early* and joins the
///   next message its master fits, or is dropped after ``earlyTimeout``.
/// - **`audio_end`** ends the open message unless the last speech event was stale; a later
///   chunk whose master proves it belongs to the message reopens it (the `audio_end` was an
///   interrupted message's).
/// - **`chunk_images_ready`** names a chunk index only: it is credited to the open message's
///   chunk of that index once that chunk's plan is here; before, it waits, and a new message
///   keeps only a chunk-0 one (chunks after 0 cannot precede their chunk 0).
/// - **Older per-image variant:** `animation_chunk_metadata` (the plan) and an audio-only
///   `receive_audio` of the same chunk are paired, whichever comes first. Audio without a plan
///   waits ``pairingTimeout`` seconds for one, then plays with mouthless slots for its
///   duration, so no audio is ever lost.
/// - **An interrupt from the app** (``interrupt()``) ends the open message for good: its later
///   chunks are dropped.
public struct SpeechReceiver: Sendable {
  /// What the owner must do.
  public enum Action: Sendable, Equatable {
    /// A new message opens: whatever plays or waits of the one before is dropped at once, even
    /// before the new one's first plan (which follows in the same actions, or later for
    /// audio that waits for its plan).
    case begin(MessageID)
    /// Give this plan to the engine, and keep the chunk's audio (nil: none) for when the engine
    /// starts it. The plan is the open message's, never a re-send of a chunk it has.
    case enqueue(ChunkPlan, audio: Data?)
    /// Decode these images (their keys are the overlay ids); `chunk` is the event's chunk
    /// index, for logs.
    case decode([EncodedOverlay], chunk: Int)
    /// These images will not come (rejected in the event): the engine draws their frames
    /// without them.
    case imagesFailed([String])
    /// `chunk_images_ready` for the chunk of `message`: nothing more is coming for it.
    /// `ahead`: it came before the chunk's plan, so (Socket.IO keeps order) every image of the
    /// chunk must have come before it too; the owner checks that against the images it has.
    case imagesSent(chunk: Int, message: MessageID, total: Int, ahead: Bool = false)
    /// `audio_end` of the open message.
    case audioEnded(MessageID)
    /// An event was dropped: see ``DropReason``.
    case dropped(event: String, chunk: Int?, reason: DropReason)
    /// Frames of a plan were rejected (the frame only: its slot plays without a mouth);
    /// `code` names why (e.g. `noPlacement`).
    case framesRejected(code: String, count: Int, chunk: Int)
  }

  /// Why a speech event was dropped.
  public enum DropReason: String, Sendable, Equatable {
    /// It belongs to an interrupted (older) message.
    case stale
    /// A re-send of something already received.
    case duplicate
    /// A chunk after chunk 0 whose message's chunk 0 never came within ``earlyTimeout``.
    case orphan
  }

  struct Message: Sendable {
    let id: MessageID
    /// `master_chunk_index` of chunk 0.
    var base: Int?
    /// What identifies each chunk received: its master and a fingerprint of its content.
    var chunks: [Int: ChunkSeen] = [:]
    var ended = false
    var interrupted = false
    /// Every chunk so far had `master − base == chunk_index`: a chunk that does not belongs to
    /// another message. False once the backend showed it numbers otherwise.
    var mastersContiguous = true
    /// The connection it came on (counted up at each reconnection): a new connection never
    /// re-sends it.
    var connection: Int
    /// Ended by its connection's drop, not by `audio_end`: events of that connection read
    /// after the drop are still its own.
    var endedByDrop = false
  }

  struct ChunkSeen: Sendable, Equatable {
    var master: Int?
    var fingerprint: Int
    /// When it arrived.
    var at: Double
  }

  struct AudioWaiting: Sendable {
    var message: MessageID
    var audio: Data
    var since: Double
  }

  struct Early: Sendable {
    var chunk: AudioChunk
    var since: Double
    /// The message open when it was parked.
    var openThen: MessageID?
    /// The connection it came on: only a chunk 0 of the same connection takes it.
    var connection: Int
    /// It was the next chunk of the message open then (parked only because an `audio_end`
    /// ended that message): without masters, that message's, not a new chunk 0's.
    var nextOfOpen = false
  }

  /// How long an audio-only chunk waits for its `animation_chunk_metadata`, in seconds.
  public var pairingTimeout: Double
  /// How long a chunk that arrived before its message's chunk 0 waits for it, in seconds.
  public var earlyTimeout: Double
  /// The speaking frame rate, for the mouthless slots of a chunk without a plan.
  public var speakingFPS: Double
  /// Seconds after a chunk 0 within which the same chunk 0 (without masters) is a re-send even
  /// after `audio_end`.
  public var resendWindow: Double = 5
  /// Seconds a `chunk_images_ready` waits for its chunk's plan; an older one was another
  /// message's.
  public var readyAheadTimeout: Double = 2
  var open: Message?
  /// Reconnections so far, and the connection of the event being handled (set by
  /// ``receive(_:now:fromLostConnection:)``, read only inside it).
  var connection = 0
  var eventConnection = 0
  var nextMessage = 0
  var lastEventStale = false
  /// Audio-only chunks of the open message waiting for their plan, by chunk index.
  var awaitingPlan: [Int: AudioWaiting] = [:]
  /// `animation_chunk_metadata` plans not paired yet, by chunk index, with their arrival: at
  /// most ``unpairedLimit`` (the oldest goes first), each for ``unpairedLifetime``.
  var plans: [Int: (frames: [PlannedFrame], fingerprint: Int, at: Double)] = [:]
  /// `chunk_images_ready` whose chunk's plan is not here yet: chunk index → total. As capped
  /// as ``plans``, and its entries are used only within ``readyAheadTimeout``.
  var readyAhead: [Int: (total: Int, at: Double)] = [:]
  var early: [Early] = []
  /// Chunk 0 of the last few messages before the open one, to know their late re-sends.
  var recentOpeners: [ChunkSeen] = []

  /// Without masters, how long before its chunk 0 a chunk may have come to be taken as that
  /// message's (a race between the backend's tasks), in seconds.
  public static let raceWindow = 0.25

  /// The most chunks parked as early at once; the oldest goes first.
  public static let earlyLimit = 16

  /// The most metadata plans, and `chunk_images_ready`, waiting for their chunk at once; the
  /// oldest goes first. A backend sends a chunk's plan and its audio a moment apart: more
  /// than a few waiting is a backend that lost them (or an attack), not speech.
  public static let unpairedLimit = 16
  /// Seconds a metadata plan waits for its chunk's audio before it is let go.
  public static let unpairedLifetime = 30.0

  /// Creates a receiver; message numbers start at 0.
  public init(pairingTimeout: Double = 0.5, earlyTimeout: Double = 0.5, speakingFPS: Double = 30) {
    self.pairingTimeout = pairingTimeout
    self.earlyTimeout = earlyTimeout
    self.speakingFPS = speakingFPS
  }

  /// The message being received, if any.
  public var currentMessage: MessageID? { open?.id }

  /// Fingerprints of the metadata plans paired in the open message, to spot re-sends.
  var plansSent: [MessageID: [Int: Int]] = [:]

  // MARK: - Inputs

  /// Handles one decoded speech event at time `now` (any monotonic clock, the same as
  /// ``expire(now:)``'s). Events that are not speech return no action.
  ///
  /// `fromLostConnection`: the event came on the connection before the last
  /// ``connectionRestored()`` (read after it: events and statuses travel apart). It is judged
  /// with that connection's messages: a chunk 0 it re-sends is a re-send.
  public mutating func receive(
    _ event: ServerEvent, now: Double, fromLostConnection: Bool = false
  ) -> [Action] {
    eventConnection = fromLostConnection ? connection - 1 : connection
    switch event {
    case .audioChunk(let chunk):
      return audioChunk(chunk, now: now)
    case .frameImagesBatch(let batch):
      return images(batch.frames, chunk: batch.chunkIndex)
    case .frameImage(let frame):
      return images([frame], chunk: frame.chunkIndex ?? 0)
    case .chunkImagesReady(let chunk, let total):
      return imagesReady(chunk: chunk, total: total, now: now)
    case .audioEnd:
      guard var current = open, !lastEventStale, !current.ended, !current.interrupted else {
        return [
          .dropped(
            event: Wire.Event.audioEnd, chunk: nil,
            reason: open?.ended == true ? .duplicate : .stale)
        ]
      }
      current.ended = true
      open = current
      // Audio still waiting for its plan plays now: nothing more will come.
      return flushAwaiting() + [.audioEnded(current.id)]
    case .animationChunkMetadata(let metadata):
      return metadataPlan(metadata, now: now)
    default:
      return []
    }
  }

  /// Plays audio that waited longer than ``pairingTimeout`` for its plan, and drops early
  /// chunks that waited longer than ``earlyTimeout`` for their chunk 0.
  public mutating func expire(now: Double) -> [Action] {
    var actions: [Action] = []
    for (index, entry) in awaitingPlan.sorted(by: { $0.key < $1.key })
    where now - entry.since >= pairingTimeout {
      awaitingPlan[index] = nil
      actions.append(
        enqueueAction(index: index, message: entry.message, frames: nil, audio: entry.audio))
    }
    plans = plans.filter { now - $0.value.at < Self.unpairedLifetime }
    readyAhead = readyAhead.filter { now - $0.value.at <= readyAheadTimeout }
    while let first = early.first, now - first.since >= earlyTimeout {
      early.removeFirst()
      // No chunk 0 came for it. The next chunk of the open message, which an `audio_end` ended
      // (without masters a late one of an interrupted message looks the same): it is that
      // message's. Anything else is an orphan.
      if var current = open, current.id == first.openThen, !current.interrupted,
        first.chunk.chunkIndex == (current.chunks.keys.max() ?? -1) + 1
      {
        let frames = Self.plannedFrames(first.chunk)
        current.ended = false
        if let master = first.chunk.masterChunkIndex, let base = current.base,
          master - base != first.chunk.chunkIndex
        {
          current.mastersContiguous = false  // this backend numbers otherwise: believe it
        }
        current.chunks[first.chunk.chunkIndex] = ChunkSeen(
          master: nil, fingerprint: Self.fingerprint(first.chunk.audio, frames), at: now)
        open = current
        actions += firstFrame(first.chunk)
        actions += accept(first.chunk, frames: frames, message: current.id, now: now)
        continue
      }
      actions.append(
        .dropped(event: Wire.Event.receiveAudio, chunk: first.chunk.chunkIndex, reason: .orphan))
    }
    return actions
  }

  /// The connection is gone: audio waiting for a plan plays now, and the open message can get
  /// nothing more (after a reconnect, the same words again are a new message).
  public mutating func connectionLost() -> [Action] {
    let actions = flushAwaiting()
    endOpenByDrop()
    recentOpeners = []
    readyAhead = [:]
    early = []
    return actions
  }

  /// The connection is back: what comes now is new (a new connection never re-sends the old
  /// one's events).
  public mutating func connectionRestored() {
    endOpenByDrop()
    connection += 1
    recentOpeners = []
    readyAhead = [:]
  }

  /// The open message can get nothing more: its connection dropped (unless `audio_end` ended
  /// it before).
  mutating func endOpenByDrop() {
    if open?.ended == false { open?.endedByDrop = true }
    open?.ended = true
  }

  /// The app interrupted the open message: its later chunks are dropped as stale.
  public mutating func interrupt() {
    open?.interrupted = true
    awaitingPlan = [:]
    readyAhead = [:]
  }

  // MARK: - Plans

  static func fingerprint(_ audio: Data, _ frames: [PlannedFrame]) -> Int {
    var hasher = Hasher()
    hasher.combine(audio)
    hasher.combine(frames)
    return hasher.finalize()
  }

  /// The engine's frames of a `receive_audio` plan: one slot per frame object, in order, a
  /// rejected frame object as a mouthless slot that keeps its time.
  static func plannedFrames(_ chunk: AudioChunk) -> [PlannedFrame] {
    chunk.animations.flatMap { animation in
      animation.sections.flatMap { section in
        section.map { plannedFrame($0, zone: animation.zoneTopLeft) }
      }
    }
  }

  /// Frames of a plan with neither `coordinates` nor a `zone_top_left` (their own or their
  /// section's): nowhere to draw their mouth.
  static func unplacedFrames(_ chunk: AudioChunk) -> Int {
    chunk.animations.reduce(0) { count, animation in
      count
        + animation.sections.joined().filter {
          !$0.isRejected && $0.matchedSpriteFrameNumber >= 0 && $0.coordinates == nil
            && $0.zoneTopLeft == nil && animation.zoneTopLeft == nil
        }.count
    }
  }

  static func plannedFrame(_ frame: OverlayFrame, zone: SIMD2<Double>?) -> PlannedFrame {
    guard !frame.isRejected, frame.matchedSpriteFrameNumber >= 0 else {
      return .continuation(animation: frame.animationName)
    }
    var frame = frame
    if frame.zoneTopLeft == nil { frame.zoneTopLeft = zone }
    guard let placement = frame.placement else {
      // Neither coordinates nor a zone: the base frame plays, without a mouth.
      return PlannedFrame(
        animation: frame.animationName, baseFrame: frame.matchedSpriteFrameNumber, layers: [])
    }
    return PlannedFrame(
      key: frame.overlayId, animation: frame.animationName,
      baseFrame: frame.matchedSpriteFrameNumber, rect: placement)
  }
}
