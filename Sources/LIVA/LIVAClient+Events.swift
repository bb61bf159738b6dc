import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Logging
import SocketIO

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

// LIVAClient: the events of the connection, dispatched to the player and the app.
extension LIVAClient {
  /// The state a connection status leads to, or nil for no change (see
  /// ``ClientStateMachine/link(after:current:)``).
  static func state(
    after status: SocketIOStatus, speaking: Bool, idleAvailable: Bool
  ) -> LIVAState? {
    if case .idle = status { return nil }
    var machine = ClientStateMachine()
    _ = machine.apply(.idleAvailable(idleAvailable))
    if speaking { _ = machine.apply(.speakingStarted) }
    _ = machine.apply(.status(status))
    return machine.state
  }

  func handle(_ status: SocketIOStatus, of socket: SocketIOClient) async {
    let connected: Bool
    if case .connected = status { connected = true } else { connected = false }
    let wasConnected = protectedState.withLock { state -> Bool? in
      // A socket replaced by a fresh connect() (or dropped by disconnect()) speaks no more.
      guard state.socket === socket else { return nil }
      defer {
        state.connected = connected
        // A reconnect starts the downloads over: what was in flight is gone with the socket.
        if case .connected(let sid) = status, !sid.isEmpty { state.sid = sid }
        if connected {
          state.downloading = []
          state.retrying = []
          state.watchdogs.connected(at: state.lastTick)
          state.retries.reset()
        } else {
          state.watchdogs.disconnected()
        }
      }
      return state.connected
    }
    guard let wasConnected else { return }
    if wasConnected && !connected {
      logger.info("[LIVA] connection lost", metadata: ["status": "\(status)"])
      player.connectionLost()
      // Downloads cut off: their staged frames go, the cached versions stay.
      for name in protectedState.withLock({ $0.downloading }) {
        player.baseFrames.abandonDownload(name)
      }
    }
    if connected { player.connectionRestored() }
    apply(.idleAvailable(isIdleAvailable))
    apply(.status(status))
    if connected {
      await emit(.requestBaseAnimationsManifest(agentID: configuration.agentID))
    }
  }

  var isIdleAvailable: Bool { player.readyAnimations.contains(.idleForward) }

  func emit(_ event: ClientEvent) async {
    guard let socket = protectedState.withLock({ $0.socket }) else { return }
    do {
      try await socket.emit(event.name, [event.payload])
    } catch {
      logger.warning("emit failed", metadata: ["event": "\(event.name)", "error": "\(error)"])
    }
  }

  func handle(_ event: SocketIOEvent) async {
    let decoded: ServerEvent?
    var issues: [LIVAProtocolError] = []
    do {
      decoded = try ServerEvent.decode(
        name: event.name, arguments: event.arguments,
        limits: configuration.player.eventLimits, issues: &issues)
    } catch {
      logger.warning(
        "[LIVA] malformed event dropped",
        metadata: [
          "event": "\(event.name)", "field": "\(error.fieldPath ?? "")", "code": "\(error.code)",
          "error": "\(error.message)",
        ])
      player.noteRejectedEvent(error)
      Self.emit(.rejected(error), in: protectedState)
      return
    }
    player.noteIssues(issues)
    for issue in issues { Self.emit(.rejected(issue), in: protectedState) }
    guard let decoded else {
      logger.debug("unknown event ignored", metadata: ["event": "\(event.name)"])
      return
    }
    switch decoded {
    case .baseAnimationsManifest(let manifest):
      await handleManifest(manifest)
    case .animationTotalFrames(let name, let total):
      // Only what this client asked for is downloaded: the disk cache holds nothing unasked.
      guard protectedState.withLock({ $0.downloading.contains(name) }) else {
        let refusal = LIVAProtocolError(
          .unrequested, "a download of \(name) that was not requested is ignored",
          event: event.name, fieldPath: Wire.Field.animationType)
        logger.warning(
          "[LIVA] unrequested download ignored", metadata: ["animation": "\(name)"])
        player.noteRejectedEvent(refusal)
        Self.emit(.rejected(refusal), in: protectedState)
        return
      }
      protectedState.withLock { $0.watchdogs.downloadActive(name, at: $0.lastTick) }
      do {
        try player.baseFrames.beginDownload(name, frames: total)
      } catch {
        logger.warning("download refused", metadata: ["animation": "\(name)", "error": "\(error)"])
      }
    case .baseFrame(let frame):
      protectedState.withLock { state in
        if state.downloading.contains(frame.animationName) {
          state.watchdogs.downloadActive(frame.animationName, at: state.lastTick)
        }
      }
      do {
        try player.baseFrames.storeFrame(
          frame.image.data, index: frame.frameIndex, of: frame.animationName)
      } catch {
        logger.warning(
          "base frame refused",
          metadata: ["animation": "\(frame.animationName)", "error": "\(error)"])
      }
    case .animationFramesComplete(let name):
      let version = protectedState.withLock { state -> String in
        state.downloading.remove(name)
        state.watchdogs.downloadEnded(name)
        return state.manifest[name]?.version ?? ""
      }
      do {
        try player.baseFrames.finishDownload(name, version: version)
        protectedState.withLock { $0.retries.succeeded(name) }
      } catch {
        downloadFailed(name, error)
      }
      player.refreshAnimations(protectedState.withLock { Array($0.manifest.keys) })
      apply(.idleAvailable(isIdleAvailable))
    default:
      // Events and statuses come on two streams: an event of the connection that dropped can
      // be read after the next connection's status. It is still played, as one received
      // before the drop (nothing more of its message can come).
      let fromLostConnection = protectedState.withLock { state in
        event.sid.map { $0 != state.sid && state.sid != nil } ?? false
      }
      player.handle(decoded, fromLostConnection: fromLostConnection)
    }
  }

  /// A download failed (its staged frames are gone, the cached version stays): report it, and
  /// ask for the animation again when the retry policy says so.
  func downloadFailed(_ name: AnimationName, _ error: any Error) {
    let decision = protectedState.withLock { state in
      let decision = state.retries.failed(name)
      if case .retry = decision { state.retrying.insert(name) }
      return decision
    }
    logger.warning(
      "download failed",
      metadata: ["animation": "\(name)", "error": "\(error)", "decision": "\(decision)"])
    // Not a state: the connection is fine, and what is cached goes on playing.
    Self.emit(.error(LIVAClientError(.download, "\(name): \(error)")), in: protectedState)
    guard case .retry(let delay) = decision else { return }
    let socket = protectedState.withLock { $0.socket }
    let task = Task { [self] in
      try? await Task.sleep(for: delay)
      // Only on the same connection, when nobody asked for it meanwhile.
      let ask = protectedState.withLock { state -> Bool in
        state.retrying.remove(name)
        guard state.connected, state.socket === socket, state.manifest[name] != nil,
          !state.downloading.contains(name)
        else { return false }
        state.downloading.insert(name)
        state.watchdogs.downloadActive(name, at: state.lastTick)
        return true
      }
      changes.signal()
      if ask { await emit(.requestSpecificBaseAnimation(name, agentID: configuration.agentID)) }
    }
    protectedState.withLock { $0.tasks.append(task) }
  }

  /// Carries out what ``ClientWatchdogs`` found overdue.
  func overdue(_ action: ClientWatchdogs.Action) {
    switch action {
    case .askManifest(let attempt):
      logger.warning("[LIVA] no manifest yet: asking again", metadata: ["attempt": "\(attempt)"])
      let task = Task { [self] in
        await emit(.requestBaseAnimationsManifest(agentID: configuration.agentID))
      }
      protectedState.withLock { $0.tasks.append(task) }
    case .manifestGivenUp(let asks):
      logger.error("[LIVA] the manifest never came", metadata: ["asks": "\(asks)"])
      Self.emit(
        .error(LIVAClientError(.timeout, "the manifest did not come after \(asks) asks")),
        in: protectedState)
      changes.signal()
    case .downloadStalled(let name):
      // Its staged frames go (the cached version stays); the retry policy decides what next.
      player.baseFrames.abandonDownload(name)
      downloadFailed(
        name, LIVAClientError(.timeout, "the download stopped: no event of it in time"))
    }
  }

  func handleManifest(_ manifest: [AnimationName: BaseAnimationInfo]) async {
    let plan = player.baseFrames.plan(for: manifest)
    let requests = protectedState.withLock { state -> [AnimationName] in
      state.manifest = manifest
      state.watchdogs.manifestReceived()
      let requests = plan.animations.filter { !state.downloading.contains($0) }
      state.downloading.formUnion(requests)
      for name in requests { state.watchdogs.downloadActive(name, at: state.lastTick) }
      return requests
    }
    player.refreshAnimations(Array(manifest.keys))
    apply(.idleAvailable(isIdleAvailable))
    for name in requests {
      await emit(.requestSpecificBaseAnimation(name, agentID: configuration.agentID))
    }
  }

  func postMessage(_ text: String, readyAnimations: [AnimationName])
    async throws(LIVAClientError)
  {
    guard let url = URL(string: configuration.serverURL)?.appendingPathComponent("messages") else {
      throw LIVAClientError(.send, "bad server URL \(configuration.serverURL)")
    }
    var request = URLRequest(url: url)
    request.httpMethod = "POST"
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    request.setValue(configuration.userID, forHTTPHeaderField: "X-User-ID")
    let body = HTTPUserMessage(
      agentID: configuration.agentID, message: text, instanceID: configuration.instanceID,
      userResolution: String(configuration.resolution), readyAnimations: readyAnimations)
    do {
      request.httpBody = Data(body.body.jsonText.utf8)
      let (_, response) = try await URLSession.shared.data(for: request)
      if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
        throw LIVAClientError(.send, "POST /messages answered \(http.statusCode)")
      }
    } catch let error as LIVAClientError {
      throw error
    } catch {
      throw LIVAClientError(.send, "POST /messages failed: \(error)")
    }
  }
}
