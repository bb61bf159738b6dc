import LIVAEngine
import LIVAMedia

/// Which received mouth images are decoded now and which wait, encoded, for their turn: a pure
/// value ``PlayerCore`` owns.
///
/// A backend may send a whole message long before it plays. Images wait encoded (at most
/// `encodedBudget` bytes; beyond it an image is shed) and are sent to be decoded in the order
/// they will be drawn (the queued chunks' in playing order, then those no plan claimed yet, by
/// arrival) while the decoded bytes of images sent before whose chunk has not finished fit
/// `decodedBudget`. The images of the chunk playing (or next, before speech) and those the
/// chunk after it needs to start always go, so playback never waits on the budget: a chunk
/// finishes only when the next one starts, and the next starts once its first frames are
/// decoded. Decoded on arrival instead, a message's first mouths were pushed out of the store
/// by its last ones before they were drawn.
struct MouthDecodeWindow {
  /// Bytes of decoded images of unfinished chunks sent to be decoded at once.
  let decodedBudget: Int
  /// Bytes of encoded images waiting at most.
  let encodedBudget: Int
  /// Images waiting encoded, with their decoded size and their arrival number.
  private var waiting: [String: (overlay: EncodedOverlay, bytes: Int, order: Int)] = [:]
  private var waitingBytes = 0
  /// Images sent to be decoded whose room is still taken, with their decoded size and arrival.
  private var decoding: [String: (bytes: Int, order: Int)] = [:]
  private var decodingBytes = 0
  private var arrivals = 0
  /// Arrivals counted when the last two plans were queued: an image no plan claimed though
  /// two plans came after it is no chunk's (images come before their plan).
  private var arrivalsAtPlans = (older: 0, newer: 0)

  init(decodedBudget: Int, encodedBudget: Int) {
    self.decodedBudget = decodedBudget
    self.encodedBudget = encodedBudget
  }

  /// Whether `key` was sent to be decoded and still takes room.
  func isDecoding(_ key: String) -> Bool { decoding[key] != nil }

  /// Keeps `overlays` waiting (an image already waiting or sent is not taken twice); returns
  /// the keys shed because the encoded budget is full.
  mutating func receive(_ overlays: [EncodedOverlay]) -> [String] {
    var shed: [String] = []
    for overlay in overlays where waiting[overlay.key] == nil && decoding[overlay.key] == nil {
      guard waitingBytes + overlay.data.count <= encodedBudget else {
        shed.append(overlay.key)
        continue
      }
      let bytes = ImageHeader(reading: overlay.data)?.decodedByteCount ?? 0
      waiting[overlay.key] = (overlay, bytes, arrivals)
      waitingBytes += overlay.data.count
      arrivals += 1
    }
    return shed
  }

  /// A plan was queued: images no queued chunk claims (not in `claimed`) that arrived before
  /// the plan before last are no chunk's; those waiting are dropped, those sent free their
  /// room (the store lets unclaimed pixels go first). Returns how many waiting were dropped.
  mutating func planQueued(claimed: Set<String>) -> Int {
    let cutoff = arrivalsAtPlans.older
    let orphans = waiting.filter { $0.value.order < cutoff && !claimed.contains($0.key) }.keys
    drop(orphans)
    leave(decoding.filter { $0.value.order < cutoff && !claimed.contains($0.key) }.keys)
    arrivalsAtPlans = (arrivalsAtPlans.newer, arrivals)
    return orphans.count
  }

  /// `keys` left every queued chunk (their message was interrupted): those waiting are
  /// dropped, those sent free their room.
  mutating func forget(_ keys: some Sequence<String>) {
    drop(keys)
    leave(keys)
  }

  /// A chunk finished: every image sent that no queued chunk claims (played, or claimed by no
  /// plan at all) frees its room.
  mutating func chunkFinished(claimed: Set<String>) {
    leave(decoding.keys.filter { !claimed.contains($0) })
  }

  /// The images to decode now, given the queued chunks' keys in playing order (the first is
  /// the chunk playing or next).
  mutating func admit(chunks: [ChunkKeys]) -> [EncodedOverlay] {
    guard !waiting.isEmpty else { return [] }
    var order: [String] = []
    var placed = Set<String>()
    for key in chunks.lazy.map(\.ordered).joined()
    where waiting[key] != nil && placed.insert(key).inserted {
      order.append(key)
    }
    order += waiting.filter { !placed.contains($0.key) }.sorted { $0.value.order < $1.value.order }
      .map(\.key)
    var first = Set(chunks.first?.ordered ?? [])
    if chunks.count > 1 { first.formUnion(chunks[1].ordered.prefix(chunks[1].toStart)) }
    var batch: [EncodedOverlay] = []
    for key in order {
      let entry = waiting[key]!
      if !first.contains(key), decodingBytes > 0, decodingBytes + entry.bytes > decodedBudget {
        break
      }
      drop([key])
      decoding[key] = (entry.bytes, entry.order)
      decodingBytes += entry.bytes
      batch.append(entry.overlay)
    }
    return batch
  }

  private mutating func drop(_ keys: some Sequence<String>) {
    for key in keys {
      if let entry = waiting.removeValue(forKey: key) { waitingBytes -= entry.overlay.data.count }
    }
  }

  private mutating func leave(_ keys: some Sequence<String>) {
    for key in keys {
      if let entry = decoding.removeValue(forKey: key) { decodingBytes -= entry.bytes }
    }
  }
}

/// A queued chunk's image keys: each once, in the order the chunk draws them (first use
/// first), and how many of them its first frames draw (those it needs to start).
package struct ChunkKeys: Sendable {
  /// Every key the chunk draws, first use first.
  package let ordered: [String]
  /// How many of ``ordered`` the chunk's first `startFrames` frames draw.
  let toStart: Int

  package init(_ plan: ChunkPlan, startFrames: Int) {
    var seen = Set<String>()
    var ordered: [String] = []
    var toStart = 0
    for (position, frame) in plan.frames.enumerated() {
      for layer in frame.layers where seen.insert(layer.key).inserted { ordered.append(layer.key) }
      if position < startFrames { toStart = ordered.count }
    }
    self.ordered = ordered
    self.toStart = toStart
  }
}
