import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Logging

// PlayerCore: carrying out the speech session's commands and the engine's actions.
extension PlayerCore {
  /// Ends an input: the window of base frames, if it is due, is asked for last, worked out
  /// from the state the input left.
  mutating func finish(_ effects: [Effect]) -> [Effect] {
    guard windowDue else { return effects }
    windowDue = false
    windowSteps += 1
    return effects + [.requestWindow(window(budget: baseFrameBudget), step: windowSteps)]
  }

  mutating func perform(_ commands: [SpeechSession.Command]) -> [Effect] {
    var effects: [Effect] = []
    // Claimed before anything else: a message these commands begin interrupts the one before,
    // and that must not drop images the new chunks share with it.
    for case .enqueue(let plan, _) in commands {
      let keys = Set(plan.frames.flatMap(\.layers).map(\.key))
      if !keys.isEmpty { effects.append(.claim(keys, message: plan.message)) }
    }
    for command in commands {
      switch command {
      case .begin(let message):
        generation += 1
        effects += perform(engine.begin(message), at: lastTick ?? 0)
      case .enqueue(let plan, let audio):
        effects += enqueue(plan, audio: audio)
      case .imagesSent(let id, let ahead):
        guard session.credits(id, ahead: ahead, knows: engine.knowsImage) else {
          accounting.staleEvents += 1
          effects.append(
            .log(
              .info, "[LIVA] chunk_images_ready before any of its chunk's images: ignored",
              ["chunk": "\(id)"]))
          continue
        }
        if engine.currentMessage == id.message { engine.chunkImagesComplete(chunkIndex: id.index) }
      case .audioEnded:
        engine.audioEnded()
        // The message will finish instead of waiting for a next chunk: a path the window
        // (planned while it waited) did not hold. Its first frame may be due at the next tick.
        windowDue = true
      case .decode(let overlays, _):
        engine.imagesInFlight(overlays.map(\.key))
        effects += receiveImages(overlays)
      case .imagesFailed(let keys):
        accounting.failedImages += keys.count
        for key in keys { engine.imageFailed(key) }
      case .dropped(let event, let chunk, let reason):
        switch reason {
        case .stale: accounting.staleEvents += 1
        case .duplicate: accounting.duplicateEvents += 1
        case .orphan: accounting.orphanChunks += 1
        }
        effects.append(
          .log(
            .info, "[LIVA] speech event dropped",
            [
              "event": event, "chunk": chunk.map(String.init) ?? "-", "reason": reason.rawValue,
            ]))
      case .framesRejected(let code, let count, let chunk):
        accounting.rejections["frame.\(code)", default: 0] += count
        effects.append(
          .log(
            .warning, "[LIVA] frames without a place for their mouth: drawn without it",
            ["code": code, "frames": "\(count)", "chunk": "\(chunk)"]))
      }
    }
    return effects
  }

  mutating func enqueue(_ plan: ChunkPlan, audio data: Data?) -> [Effect] {
    let chunkKeys = ChunkKeys(plan, startFrames: engine.configuration.startThresholdFrames)
    let keys = Set(chunkKeys.ordered)
    var effects: [Effect] = []
    let actions = engine.enqueue(plan)
    var queued: [ChunkID] = []
    for case .chunkQueued(let id) in actions {
      queued.append(id)
      session.queued(id, keys: chunkKeys, audio: data)
    }
    if queued.isEmpty, !keys.isEmpty {
      // Not taken (a re-send, or stale): its claims go, unless a queued chunk has them.
      effects.append(.release(keys.subtracting(keysStillUsed), message: plan.message))
    }
    // Received before the drop but handled after it: its message cannot continue either.
    if offline { engine.connectionLost() }
    let now = lastTick ?? 0
    effects += perform(actions, at: now)
    if let data, !data.isEmpty {
      for id in queued { effects.append(.prepareAudio(id, data, at: now)) }
    }
    if !queued.isEmpty {
      let orphans = mouths.planQueued(claimed: keysStillUsed)
      if orphans > 0 {
        effects.append(
          .log(.info, "[LIVA] overlay images no plan claimed: let go", ["images": "\(orphans)"]))
      }
    }
    effects += admitDecodes()
    windowDue = true
    return effects
  }

  mutating func perform(_ actions: [EngineAction], at now: Double) -> [Effect] {
    var effects: [Effect] = []
    for action in actions {
      switch action {
      case .startAudio(let id, let offset):
        if let data = session.audio(for: id) {
          effects.append(.startAudio(id, data, offset: offset, at: now, generation: generation))
        } else {
          effects.append(.log(.warning, "[LIVA] no audio for chunk", ["chunk": "\(id)"]))
        }
      case .stopAudio(let id):
        effects.append(.stopAudio(id, at: now))
      case .pauseAudio:
        effects.append(.pauseAudio(at: now))
      case .resumeAudio:
        effects.append(.resumeAudio(at: now))
      case .evictImages(let message, _):
        let dropped = session.dropped(message)
        mouths.forget(dropped.subtracting(keysStillUsed))
        effects += admitDecodes()
        // Its images are content: decodes under way go on (the next message may show the
        // same mouths), and what only it claimed is the first to go when room is needed.
        effects.append(.evict(message))
      case .chunkFinished(let report):
        let keys = session.finished(report.id)
        accounting.chunkReports.append(report)
        if accounting.chunkReports.count > 1_000 { accounting.chunkReports.removeFirst() }
        // Played: its images go first when room is needed, or at a purge.
        let used = keysStillUsed
        let released = keys.subtracting(used)
        if !released.isEmpty { effects.append(.release(released, message: report.id.message)) }
        // Played, or sent to decode and claimed by no chunk still queued (no plan came for
        // them): their room in the window is free.
        mouths.chunkFinished(claimed: used)
        effects += admitDecodes()
        effects.append(
          .log(
            .debug, "chunk finished",
            [
              "chunk": "\(report.id)", "drawn": "\(report.drawn)", "skipped": "\(report.skipped)",
              "late": "\(report.late)",
            ]))
      case .warning(let warning) where warning.code == .mouthLost:
        effects.append(.log(.debug, "\(warning)", [:]))
      case .warning(let warning):
        effects.append(.log(.warning, "[LIVA] \(warning.message)", ["code": "\(warning.code)"]))
      case .chunkQueued, .speakingStarted, .speakingEnded, .modeChanged:
        effects.append(.log(.trace, "engine", ["action": "\(action)"]))
      }
      effects.append(.notify(action))
    }
    return effects
  }
}
