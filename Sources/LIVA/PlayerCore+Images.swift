import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Logging

// PlayerCore: the mouths received, what the decode window sends, and what became of them.
extension PlayerCore {
  /// What became of an image sent to be decoded (``Effect/decode(_:)``): ready in the store,
  /// failed, or shed by the queue. A failed or shed image's mouth is lost.
  public mutating func decoded(_ event: IngestEvent) -> [Effect] {
    switch event {
    case .imageReady(let key):
      engine.imageReady(key)
      return []
    case .imageFailed(let key, let error):
      accounting.failedImages += 1
      engine.imageFailed(key)
      return [
        .log(
          .warning, "[LIVA] overlay image failed to decode: its mouth is lost",
          ["key": key, "chunk": chunkLabel(drawing: key), "error": "\(error)"])
      ]
    case .imageShed(let key):
      accounting.shedImages += 1
      engine.imageFailed(key)
      return [
        .log(
          .warning, "[LIVA] overlay image shed under backpressure",
          ["key": key, "chunk": chunkLabel(drawing: key)])
      ]
    }
  }

  /// The first queued chunk that draws `key`, for logs ("-": none).
  func chunkLabel(drawing key: String) -> String {
    session.chunkIndex(drawing: key).map(String.init) ?? "-"
  }

  /// Images left the store. Those a queued chunk still needed are counted in
  /// ``PlayerMetrics/evictedQueuedImages`` and logged: their mouths are lost unless they come
  /// again.
  public mutating func imagesRemoved(_ keys: [String], storeBytes: Int) -> [Effect] {
    for key in keys { engine.imageEvicted(key) }
    let needed = keysStillUsed
    let lost = keys.filter { needed.contains($0) && mouths.isDecoding($0) }.count
    accounting.evictedQueuedImages += lost
    guard lost > 0 else { return [] }
    return [
      .log(
        .warning,
        "[LIVA] overlay images of a queued chunk pushed out of the store: their mouths are lost",
        ["images": "\(lost)", "storeBytes": "\(storeBytes)"])
    ]
  }

  // MARK: - The decode window of mouths

  /// Keeps received images waiting encoded (see ``MouthDecodeWindow``); one beyond
  /// ``encodedOverlayBudget`` is shed (its mouth lost, logged).
  mutating func receiveImages(_ overlays: [EncodedOverlay]) -> [Effect] {
    var effects: [Effect] = []
    let shed = mouths.receive(overlays)
    if !shed.isEmpty {
      accounting.failedImages += shed.count
      for key in shed { engine.imageFailed(key) }
      effects.append(
        .log(
          .warning, "[LIVA] overlay images shed: more held back than the budget",
          ["images": "\(shed.count)", "budget": "\(encodedOverlayBudget)"]))
    }
    return effects + admitDecodes()
  }

  /// Sends the images whose turn it is to be decoded (see ``MouthDecodeWindow``).
  mutating func admitDecodes() -> [Effect] {
    let batch = mouths.admit(chunks: session.chunkKeys)
    return batch.isEmpty ? [] : [.decode(batch)]
  }

  var keysStillUsed: Set<String> { session.keysStillUsed }
}
