import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol

// SpeechReceiver: what each chunk event does (new message, join, re-send, stale, parked).
extension SpeechReceiver {
  mutating func audioChunk(_ chunk: AudioChunk, now: Double) -> [Action] {
    let frames = Self.plannedFrames(chunk)
    let seen = ChunkSeen(
      master: chunk.masterChunkIndex, fingerprint: Self.fingerprint(chunk.audio, frames), at: now)
    var actions: [Action] = []
    let id: MessageID
    if chunk.chunkIndex == 0 {
      if let current = open, isResend(seen, of: 0, in: current) {
        lastEventStale = false
        return [.dropped(event: Wire.Event.receiveAudio, chunk: 0, reason: .duplicate)]
      }
      // A late re-send of an interrupted message's chunk 0: an older master, or (without
      // masters) the content of a recent earlier chunk 0.
      if let master = chunk.masterChunkIndex, let base = open?.base, master < base {
        lastEventStale = true
        return [.dropped(event: Wire.Event.receiveAudio, chunk: 0, reason: .stale)]
      }
      if chunk.masterChunkIndex == nil,
        recentOpeners.contains(where: {
          $0.fingerprint == seen.fingerprint && now - $0.at < resendWindow
        })
      {
        lastEventStale = true
        return [.dropped(event: Wire.Event.receiveAudio, chunk: 0, reason: .stale)]
      }
      if let previous = open?.chunks[0] {
        recentOpeners.append(previous)
        if recentOpeners.count > 4 { recentOpeners.removeFirst() }
      }
      id = openMessage(base: chunk.masterChunkIndex)
      open?.chunks[0] = seen
      actions.append(.begin(id))
      actions += firstFrame(chunk)
      actions += accept(chunk, frames: frames, message: id, now: now)
      let adopted = adoptEarly(base: chunk.masterChunkIndex, now: now)
      for entry in adopted.sorted(by: { $0.chunk.chunkIndex < $1.chunk.chunkIndex }) {
        actions += audioChunk(entry.chunk, now: now)
      }
      return actions
    }
    switch place(chunk, seen: seen) {
    case .stale:
      lastEventStale = true
      return [.dropped(event: Wire.Event.receiveAudio, chunk: chunk.chunkIndex, reason: .stale)]
    case .duplicate:
      lastEventStale = false
      return [.dropped(event: Wire.Event.receiveAudio, chunk: chunk.chunkIndex, reason: .duplicate)]
    case .early:
      if early.count >= Self.earlyLimit {
        let dropped = early.removeFirst()
        actions.append(
          .dropped(event: Wire.Event.receiveAudio, chunk: dropped.chunk.chunkIndex, reason: .orphan)
        )
      }
      let nextOfOpen = open.map {
        !$0.interrupted && chunk.chunkIndex == ($0.chunks.keys.max() ?? -1) + 1
      }
      early.append(
        Early(
          chunk: chunk, since: now, openThen: open?.id, connection: eventConnection,
          nextOfOpen: nextOfOpen ?? false))
      return actions
    case .open(let reopens):
      lastEventStale = false
      guard var current = open else { return [] }
      if reopens { current.ended = false }
      current.chunks[chunk.chunkIndex] = seen
      open = current
      actions += firstFrame(chunk)
      actions += accept(chunk, frames: frames, message: current.id, now: now)
      return actions
    }
  }

  /// Takes out of ``early`` the chunks that came before a new chunk 0 (master `base`) and are
  /// its own. With masters on both, the masters say. Without, only a race of the backend's
  /// tasks: chunks that came within ``raceWindow``, forming a run 1, 2, … with no gap, none the
  /// next chunk of the message open when it came (that message's, after an `audio_end` that
  /// may have been an interrupted message's).
  mutating func adoptEarly(base: Int?, now: Double) -> [Early] {
    let connection = eventConnection
    let proven = { (entry: Early) in
      base != nil && entry.chunk.masterChunkIndex != nil && entry.connection == connection
        && Self.fits(entry.chunk, base: base)
    }
    var taken = Set(early.indices.filter { proven(early[$0]) })
    var have = Set(taken.map { early[$0].chunk.chunkIndex } + [0])
    let racing = early.indices.filter {
      let entry = early[$0]
      return !proven(entry) && entry.connection == connection && Self.fits(entry.chunk, base: base)
        && now - entry.since <= Self.raceWindow && !entry.nextOfOpen
    }
    for position in racing.sorted(by: { early[$0].chunk.chunkIndex < early[$1].chunk.chunkIndex }) {
      let index = early[position].chunk.chunkIndex
      // A re-send of a chunk taken is taken too (and dropped as a duplicate).
      guard have.contains(index - 1) || have.contains(index) else { continue }
      have.insert(index)
      taken.insert(position)
    }
    let adopted = taken.sorted().map { early[$0] }
    early = early.indices.filter { !taken.contains($0) }.map { early[$0] }
    return adopted
  }

  enum Placement {
    case stale, duplicate, early
    /// The open message's; `reopens`: its master proves it, after an `audio_end`.
    case open(reopens: Bool)
  }

  /// Where a chunk after chunk 0 goes (see the type's rules).
  func place(_ chunk: AudioChunk, seen: ChunkSeen) -> Placement {
    guard var current = open else { return .early }
    // Its connection dropped, and this came on that connection: the drop did not end it.
    if current.endedByDrop && current.connection == eventConnection { current.ended = false }
    let index = chunk.chunkIndex
    if let master = chunk.masterChunkIndex, let base = current.base {
      if master < base { return .stale }
      if isResend(seen, of: index, in: current) { return .duplicate }
      if current.interrupted { return .stale }
      if master - base == index { return .open(reopens: current.ended) }
      // Another message's, unless this backend numbers its chunks otherwise.
      if current.mastersContiguous || current.chunks[index] != nil || current.ended {
        return .early
      }
      return .open(reopens: false)
    }
    if isResend(seen, of: index, in: current) { return .duplicate }
    if current.interrupted && current.chunks[index] == nil { return .stale }
    if current.chunks[index] != nil || current.ended || current.interrupted { return .early }
    return .open(reopens: false)
  }

  /// Whether `seen` is the chunk `index` `message` already has: the same master when both
  /// have one, else the same content.
  func isResend(_ seen: ChunkSeen, of index: Int, in message: Message) -> Bool {
    guard let known = message.chunks[index], known.fingerprint == seen.fingerprint,
      !(index == 0 && message.connection != eventConnection)
    else {
      return false
    }
    if let a = known.master, let b = seen.master { return a == b }
    // Without masters, the same content is a re-send while the message is received, or within
    // ``resendWindow`` of the first copy: later, a message may say the same thing again.
    return !(index == 0 && message.ended && seen.at - known.at >= resendWindow)
  }

  static func fits(_ chunk: AudioChunk, base: Int?) -> Bool {
    guard let base, let master = chunk.masterChunkIndex else { return true }
    return master - base == chunk.chunkIndex
  }

  /// The plan and audio of a chunk placed in `message`: enqueued, or paired later.
  mutating func accept(
    _ chunk: AudioChunk, frames: [PlannedFrame], message: MessageID, now: Double
  ) -> [Action] {
    let index = chunk.chunkIndex
    var actions: [Action] = []
    let unplaced = Self.unplacedFrames(chunk)
    if unplaced > 0 {
      actions.append(.framesRejected(code: "noPlacement", count: unplaced, chunk: index))
    }
    if frames.isEmpty {
      // Audio only: pair it with its plan (older variant), or play it without one later.
      if let plan = plans.removeValue(forKey: index) {
        actions.append(
          enqueueAction(index: index, message: message, frames: plan.frames, audio: chunk.audio))
      } else {
        awaitingPlan[index] = AudioWaiting(message: message, audio: chunk.audio, since: now)
        return actions
      }
    } else {
      actions.append(
        .enqueue(
          ChunkPlan(
            index: index, frames: frames, message: message,
            startsOnFirstFrame: !firstFrame(chunk).isEmpty),
          audio: chunk.audio))
    }
    if let ready = readyAhead.removeValue(forKey: index), now - ready.at <= readyAheadTimeout {
      actions.append(.imagesSent(chunk: index, message: message, total: ready.total, ahead: true))
    }
    return actions
  }

  mutating func openMessage(base: Int?) -> MessageID {
    let id = MessageID(nextMessage)
    nextMessage += 1
    open = Message(id: id, base: base, connection: eventConnection)
    lastEventStale = false
    awaitingPlan = [:]
    // Chunks after 0 cannot precede their chunk 0: what waits for them was the old message's.
    readyAhead = readyAhead.filter { $0.key == 0 }
    plans = plans.filter { $0.key == 0 }
    return id
  }

  /// `first_frame_image`: the first mouth, ahead of its batch.
  func firstFrame(_ chunk: AudioChunk) -> [Action] {
    guard let first = chunk.firstFrameImage, let sheet = first.sheetFilename,
      let frame = chunk.animations.lazy.flatMap({ $0.sections.joined() }).first(where: {
        !$0.isRejected
      }), frame.sheetFilename == sheet
    else { return [] }
    return [
      .decode(
        [EncodedOverlay(key: frame.overlayId, data: first.image.data)], chunk: chunk.chunkIndex)
    ]
  }

  mutating func metadataPlan(_ metadata: AnimationChunkMetadata, now: Double) -> [Action] {
    let frames = metadata.sections.flatMap { section in
      section.frames.map { Self.plannedFrame($0, zone: nil) }
    }
    let index = metadata.chunkIndex
    if let waiting = awaitingPlan.removeValue(forKey: index) {
      lastEventStale = false
      var actions = [
        enqueueAction(index: index, message: waiting.message, frames: frames, audio: waiting.audio)
      ]
      if let ready = readyAhead.removeValue(forKey: index), now - ready.at <= readyAheadTimeout {
        actions.append(
          .imagesSent(chunk: index, message: waiting.message, total: ready.total, ahead: true))
      }
      return actions
    }
    let fingerprint = Self.fingerprint(Data(), frames)
    if let current = open, current.chunks[index] != nil,
      plansSent[current.id]?[index] == fingerprint
    {
      return [.dropped(event: Wire.Event.animationChunkMetadata, chunk: index, reason: .duplicate)]
    }
    plans[index] = (frames, fingerprint, now)
    Self.cap(&plans, at: \.at)
    return []
  }

  mutating func imagesReady(chunk: Int, total: Int, now: Double) -> [Action] {
    if let current = open, current.chunks[chunk] != nil, awaitingPlan[chunk] == nil {
      // The open message's (a re-send is harmless). It may be the next message's, ahead of its
      // chunk 0, but it is not kept for that one: wrongly credited, it would cost mouths that
      // are still coming; missed, the next chunk 0 only starts on its own images.
      return [.imagesSent(chunk: chunk, message: current.id, total: total)]
    }
    readyAhead[chunk] = (total, now)
    Self.cap(&readyAhead, at: \.at)
    return []
  }

  /// Drops the oldest entries of `parked` beyond ``unpairedLimit``.
  static func cap<Value>(_ parked: inout [Int: Value], at time: KeyPath<Value, Double>) {
    guard parked.count > unpairedLimit else { return }
    let oldest = parked.sorted {
      ($0.value[keyPath: time], $0.key) < ($1.value[keyPath: time], $1.key)
    }
    .prefix(parked.count - unpairedLimit).map(\.key)
    for key in oldest { parked[key] = nil }
  }

  func images(_ frames: [OverlayFrame], chunk: Int) -> [Action] {
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
    if !encoded.isEmpty { actions.append(.decode(encoded, chunk: chunk)) }
    return actions
  }

  mutating func flushAwaiting() -> [Action] {
    var actions: [Action] = []
    for (index, entry) in awaitingPlan.sorted(by: { $0.key < $1.key }) {
      awaitingPlan[index] = nil
      actions.append(
        enqueueAction(index: index, message: entry.message, frames: nil, audio: entry.audio))
    }
    return actions
  }

  mutating func enqueueAction(
    index: Int, message: MessageID, frames: [PlannedFrame]?, audio: Data
  ) -> Action {
    if let frames, !frames.isEmpty {
      plansSent[message, default: [:]][index] = Self.fingerprint(Data(), frames)
      plansSent = plansSent.filter { $0.key == message }
    }
    var frames = frames ?? []
    if frames.isEmpty, let timing = try? MP3Timing(parsing: audio) {
      // No plan: the audio's duration in mouthless slots, so the audio still plays on time.
      let slots = Int((timing.duration * speakingFPS).rounded())
      frames = Array(repeating: .continuation(animation: .idleForward), count: max(0, slots))
    }
    return .enqueue(ChunkPlan(index: index, frames: frames, message: message), audio: audio)
  }
}
