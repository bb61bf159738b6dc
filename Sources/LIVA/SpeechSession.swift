import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol

/// The life of every message, from the speech events to the engine's commands: which message
/// an event belongs to (its ``SpeechReceiver``), each chunk's audio and image keys while the
/// engine holds it, and what a `chunk_images_ready` means. The engine is told what to do
/// (``Command``) and keeps no copy of these decisions.
///
/// A pure value: time, and what is known of the images, come in as arguments; commands come
/// out. ``PlayerCore`` carries them out and reports back what the engine did with each chunk
/// (``queued(_:keys:audio:)``, ``finished(_:)``, ``dropped(_:)``).
package struct SpeechSession: Sendable {
  /// What the owner must do, in order.
  package enum Command: Sendable, Equatable {
    /// A new message: tell the engine (it interrupts the one before).
    case begin(MessageID)
    /// Give this plan of the message begun to the engine; `audio` is kept for when the engine
    /// starts it once the owner reports the chunk ``queued(_:keys:audio:)``.
    case enqueue(ChunkPlan, audio: Data?)
    /// `chunk_images_ready` of this chunk: nothing more is coming for it, unless
    /// ``credits(_:ahead:knows:)`` says it was another message's. `ahead`: it came before the
    /// chunk's plan.
    case imagesSent(ChunkID, ahead: Bool)
    /// `audio_end` of the open message: tell the engine.
    case audioEnded(MessageID)
    /// Decode these images (see ``SpeechReceiver/Action/decode(_:chunk:)``).
    case decode([EncodedOverlay], chunk: Int)
    /// These images will not come.
    case imagesFailed([String])
    /// An event was dropped.
    case dropped(event: String, chunk: Int?, reason: SpeechReceiver.DropReason)
    /// Frames of a plan were rejected (their slots play without a mouth).
    case framesRejected(code: String, count: Int, chunk: Int)
  }

  private var receiver: SpeechReceiver
  /// The audio of every chunk the engine holds (queued or playing), when it has any: its keys
  /// are a subset of ``keysByChunk``'s.
  private var audioByChunk: [ChunkID: Data] = [:]
  /// The image keys of every chunk the engine holds, first use first.
  private var keysByChunk: [ChunkID: ChunkKeys] = [:]

  package init(speakingFPS: Double) {
    receiver = SpeechReceiver(speakingFPS: speakingFPS)
  }

  // MARK: - Reading

  /// Chunks whose audio or image keys are held (queued or playing in the engine).
  package var heldChunks: Int { keysByChunk.count }

  /// The audio of a chunk the engine holds.
  package func audio(for id: ChunkID) -> Data? { audioByChunk[id] }

  /// The keys of the chunks the engine holds, oldest message and lowest index first.
  package var chunkKeys: [ChunkKeys] {
    keysByChunk.sorted { ($0.key.message, $0.key.index) < ($1.key.message, $1.key.index) }
      .map(\.value)
  }

  /// The chunk index of the first held chunk that draws `key`, for logs.
  package func chunkIndex(drawing key: String) -> Int? {
    keysByChunk.first { $0.value.ordered.contains(key) }?.key.index
  }

  /// Every image key a held chunk draws.
  package var keysStillUsed: Set<String> {
    keysByChunk.values.reduce(into: Set<String>()) { $0.formUnion($1.ordered) }
  }

  // MARK: - Inputs

  /// One speech event at `now`.
  package mutating func receive(_ event: ServerEvent, now: Double, fromLostConnection: Bool)
    -> [Command]
  {
    Self.commands(receiver.receive(event, now: now, fromLostConnection: fromLostConnection))
  }

  /// Expires what waited too long (see ``SpeechReceiver/expire(now:)``).
  package mutating func expire(now: Double) -> [Command] {
    Self.commands(receiver.expire(now: now))
  }

  /// The connection is gone (see ``SpeechReceiver/connectionLost()``).
  package mutating func connectionLost() -> [Command] { Self.commands(receiver.connectionLost()) }

  /// The connection is back.
  package mutating func connectionRestored() { receiver.connectionRestored() }

  /// The app interrupted the open message: its later chunks are dropped.
  package mutating func interrupt() { receiver.interrupt() }

  // MARK: - What the engine did

  /// The engine queued the chunk `id`: its keys and audio are held until it finishes or its
  /// message is dropped.
  package mutating func queued(_ id: ChunkID, keys: ChunkKeys, audio: Data?) {
    keysByChunk[id] = keys
    if let audio, !audio.isEmpty { audioByChunk[id] = audio }
  }

  /// The chunk played to its end; returns the keys it drew.
  package mutating func finished(_ id: ChunkID) -> Set<String> {
    audioByChunk.removeValue(forKey: id)
    return Set(keysByChunk.removeValue(forKey: id)?.ordered ?? [])
  }

  /// The engine dropped every chunk of `message` (interrupted); returns the keys they drew.
  package mutating func dropped(_ message: MessageID) -> Set<String> {
    audioByChunk = audioByChunk.filter { $0.key.message != message }
    let keys = keysByChunk.filter { $0.key.message == message }.values
      .reduce(into: Set<String>()) { $0.formUnion($1.ordered) }
    keysByChunk = keysByChunk.filter { $0.key.message != message }
    return keys
  }

  // MARK: - Deciding

  /// Whether a `chunk_images_ready` of chunk `id` (judged when its turn comes, after the
  /// commands before it were carried out) is that chunk's. `knows(key)`: whether an image was
  /// received (ready, decoding or failed).
  ///
  /// Socket.IO keeps order, and `chunk_images_ready` follows its chunk's batches: when none of
  /// the chunk's images came before it, it was another message's. One that came before the
  /// chunk's plan was another's unless every one of the plan's images came before it (an
  /// interrupted message's, or a chunk of the same index earlier: its images are still coming,
  /// and taken as sent they would be drawn without).
  package func credits(_ id: ChunkID, ahead: Bool, knows: (String) -> Bool) -> Bool {
    guard let keys = keysByChunk[id]?.ordered, !keys.isEmpty else { return true }
    return ahead ? keys.allSatisfy(knows) : keys.contains(where: knows)
  }

  private static func commands(_ actions: [SpeechReceiver.Action]) -> [Command] {
    actions.map { action in
      switch action {
      case .begin(let message): .begin(message)
      case .enqueue(let plan, let audio): .enqueue(plan, audio: audio)
      case .audioEnded(let message): .audioEnded(message)
      case .imagesSent(let chunk, let message, _, let ahead):
        .imagesSent(ChunkID(message: message, index: chunk), ahead: ahead)
      case .decode(let overlays, let chunk): .decode(overlays, chunk: chunk)
      case .imagesFailed(let keys): .imagesFailed(keys)
      case .dropped(let event, let chunk, let reason):
        .dropped(event: event, chunk: chunk, reason: reason)
      case .framesRejected(let code, let count, let chunk):
        .framesRejected(code: code, count: count, chunk: chunk)
      }
    }
  }
}
