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

  var isIdleAvailable: Bool { player.readyAnimations.contains(.idleForward) }

  /// An event of connection `connection`: decoded, then the core decides what of it is taken
  /// (downloads it asked for) and the player plays the rest.
  func handle(_ event: SocketIOEvent, connection: Int) {
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
      perform([.reject(error)], connection: connection)
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
      let missing = player.baseFrames.plan(for: manifest).animations
      player.refreshAnimations(Array(manifest.keys))
      let idle = isIdleAvailable
      step {
        $0.manifestReceived(
          manifest, missing: missing, connection: connection, idleAvailable: idle)
      }
    case .animationTotalFrames(let name, let total):
      // Only what this client asked for is downloaded: the disk cache holds nothing unasked.
      let (accepted, actions) = protectedState.withLock {
        $0.core.downloadBegins(name, connection: connection)
      }
      perform(actions, connection: connection)
      guard accepted else { return }
      do {
        try player.baseFrames.beginDownload(name, frames: total)
      } catch {
        let idle = isIdleAvailable
        step { $0.downloadFinished(name, error: "\(error)", idleAvailable: idle) }
      }
    case .baseFrame(let frame):
      let name = frame.animationName
      guard protectedState.withLock({ $0.core.downloadActive(name, connection: connection) })
      else {
        logger.debug("a frame of no download in flight ignored", metadata: ["animation": "\(name)"])
        return
      }
      do {
        try player.baseFrames.storeFrame(frame.image.data, index: frame.frameIndex, of: name)
      } catch {
        logger.warning(
          "base frame refused", metadata: ["animation": "\(name)", "error": "\(error)"])
      }
    case .animationFramesComplete(let name):
      guard
        let version = protectedState.withLock({
          $0.core.downloadEnds(name, connection: connection)
        })
      else {
        logger.debug("the end of no download in flight ignored", metadata: ["animation": "\(name)"])
        return
      }
      var failure: String?
      do {
        try player.baseFrames.finishDownload(name, version: version)
      } catch {
        failure = "\(error)"
      }
      player.refreshAnimations(protectedState.withLock { Array($0.core.manifest.keys) })
      let idle = isIdleAvailable
      step { $0.downloadFinished(name, error: failure, idleAvailable: idle) }
    default:
      // Events and statuses come on two streams: an event of the connection that dropped can
      // be read after the next connection's status. It is still played, as one received
      // before the drop (nothing more of its message can come).
      let fromLostConnection = protectedState.withLock {
        $0.core.isFromLostConnection(sid: event.sid)
      }
      player.handle(decoded, fromLostConnection: fromLostConnection)
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
