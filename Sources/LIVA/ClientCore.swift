import LIVAEngine
import LIVAProtocol
import Logging
import SocketIO

/// Every decision of a ``LIVAClient``, as a pure value: the connection and its state, the
/// manifest and each download (with their watchdogs and retries), the texts waiting for their
/// answer, and which connection an input belongs to. Inputs are method calls, time is the
/// display clock given to ``tick(now:)``, and what to do is returned as ``Action``s that the
/// client carries out (the socket, the player, the app's streams, the log).
///
/// - Each connection the app starts gets a number (``connect()``); an input of another number
///   is of a socket replaced or dropped, and changes nothing.
/// - A download is one entry from its request to its end: asked for, then active (stamped by
///   each of its events; failed after ``Settings/downloadTimeout`` without one), or failed and
///   waiting for its retry (asked for again at the display time its policy gives, on the same
///   connection). A lost connection ends every entry: what was staged is abandoned.
/// - The manifest is asked for on connecting, again every ``Settings/manifestTimeout`` without
///   it, ``Settings/manifestAsks`` times in all, then given up until the next connection.
struct ClientCore {
  /// The limits of the waits.
  struct Settings {
    /// The agent whose animations are asked for.
    var agentID = ""
    /// Seconds without the manifest before asking again. Default 10.
    var manifestTimeout: Double = 10
    /// How many times in all the manifest is asked for on one connection. Default 3.
    var manifestAsks = 3
    /// Seconds without any event of a download before it fails. Default 15.
    var downloadTimeout: Double = 15
    /// The link counts as delivering while its bytes moved within this many seconds: a
    /// download then waits for its next event past ``downloadTimeout`` (a slow link takes
    /// longer than that for one event of large frames). Default 0.5.
    var deliveryQuiet: Double = 0.5
    /// The longest a download waits for its next event while the link delivers. Default 60.
    var maxDownloadStall: Double = 60
    /// Seconds a text sent waits for its answer.
    var answerTimeout: Double = 30
    /// When a failed download is asked for again.
    var retry = DownloadRetryPolicy()

    /// The defaults.
    init() {}

    /// A client's: its agent, answer timeout and retry policy.
    init(_ configuration: LIVAConfiguration) {
      agentID = configuration.agentID
      answerTimeout = configuration.answerTimeout
      retry = configuration.downloadRetry
    }
  }

  /// What the client does.
  enum Action: Equatable {
    /// Emit this on the current connection's socket.
    case emit(ClientEvent)
    /// The state changed: tell every ``LIVAClient/states`` stream (and ``LIVAClient/events``).
    case publish(LIVAState)
    /// Tell the app.
    case event(LIVAEvent)
    /// A download ended unfinished: drop its staged frames (the cached version stays).
    case abandonDownload(AnimationName)
    /// The connection dropped: the player holds what it received and knows more is not coming.
    case connectionLost
    /// A connection is up again.
    case connectionRestored
    /// Part of an event was refused: count it in the player's metrics and tell the app
    /// (``LIVAEvent/rejected(_:)``).
    case reject(LIVAProtocolError)
    /// A log line.
    case log(Logger.Level, String, [String: String])
    /// Bytes of the link arrived since the last tick: the player's speech waits for what is
    /// still coming (``EngineConfiguration/deliveryQuiet``).
    case linkDelivered
  }

  /// Where a download is.
  enum Download: Equatable {
    /// Asked for; its last event at this display time (nil: stamped at the next tick).
    case active(lastEvent: Double?)
    /// Failed; asked for again after `delay` seconds from when it failed (`due`; nil: stamped
    /// at the next tick).
    case retrying(delay: Double, due: Double?)
  }

  let settings: Settings
  /// Decides the ``LIVAState``.
  private(set) var machine = ClientStateMachine()
  /// The number of the app's newest connection, while it wants one (nil after
  /// ``disconnect()`` and before the first ``connect()``).
  private(set) var connection: Int?
  private var connections = 0
  /// Whether the namespace is connected.
  private(set) var connected = false
  /// The socket id of the newest namespace connection.
  private(set) var sid: String?
  /// The newest manifest.
  private(set) var manifest: [AnimationName: BaseAnimationInfo] = [:]
  /// Downloads asked for and not ended, and failed ones waiting for their retry.
  private(set) var downloads: [AnimationName: Download] = [:]
  /// Waiting for the manifest: since when (nil: stamped at the next tick), and asks so far.
  private var manifestWait: (since: Double?, asks: Int)?
  /// Consecutive failures of each download.
  private var retries: DownloadRetries
  /// Texts sent and not yet matched to a message, oldest first.
  private(set) var answers: PendingAnswers
  /// The text each message answers; at most ``PendingAnswers/limit``, the oldest going first.
  private(set) var texts: [MessageID: String] = [:]
  /// The message speaking, between its `speakingStarted` and `speakingEnded`.
  private(set) var speaking: MessageID?
  /// The last display tick's time.
  private(set) var lastTick: Double?
  /// The transport's byte count at the last tick.
  private var linkBytes = 0
  /// The display time of the last tick that saw the link's bytes move.
  private(set) var lastDelivery: Double?

  init(settings: Settings = Settings()) {
    self.settings = settings
    retries = DownloadRetries(policy: settings.retry)
    answers = PendingAnswers(timeout: settings.answerTimeout)
  }

  /// The state reported.
  var state: LIVAState { machine.state }

  /// Whether the manifest is awaited.
  var awaitingManifest: Bool { manifestWait != nil }

  /// Downloads not complete (active or waiting for a retry), the manifest awaited counting as
  /// one.
  var pendingDownloads: Int { downloads.count + (awaitingManifest ? 1 : 0) }

  /// Whether `name` is asked for and not ended: its events are taken.
  func isDownloading(_ name: AnimationName) -> Bool {
    if case .active = downloads[name] { return true }
    return false
  }

  /// Whether an event of socket id `sid` came on a connection older than the newest one.
  func isFromLostConnection(sid eventSID: String?) -> Bool {
    guard let eventSID, let sid else { return false }
    return eventSID != sid
  }

  // MARK: - The app

  /// The app connects: a new connection number, which every input of its socket carries.
  mutating func connect() -> (connection: Int, actions: [Action]) {
    connections += 1
    connection = connections
    let actions = changing { _ = $0.machine.apply(.connectRequested) }
    return (connections, actions)
  }

  /// The app disconnects: nothing more is awaited, what was staged is abandoned, and the texts
  /// waiting for an answer are given up.
  mutating func disconnect() -> [Action] {
    publishing { core in
      core.connection = nil
      var actions = core.connectionEnded()
      actions += core.givenUp(core.answers.clear(), why: "disconnected")
      _ = core.machine.apply(.disconnectRequested)
      return actions
    }
  }

  /// The app sent `text`: it waits for its answer (past ``PendingAnswers/limit`` the oldest is
  /// given up).
  mutating func sent(_ text: String) -> [Action] {
    let pushedOut = answers.sent(text, at: lastTick)
    return givenUp(pushedOut, why: "more than \(PendingAnswers.limit) waiting")
  }

  /// Sending `text` failed: it waits no more.
  mutating func sendFailed(_ text: String) { answers.withdraw(text) }

  // MARK: - The socket

  /// Socket `connection` reports `status`; `idleAvailable` says whether the idle animation
  /// can be drawn now.
  mutating func status(
    _ status: SocketIOStatus, connection: Int, idleAvailable: Bool
  ) -> [Action] {
    guard connection == self.connection else { return [] }
    return publishing { core in
      var actions: [Action] = []
      let isConnected: Bool
      if case .connected = status { isConnected = true } else { isConnected = false }
      if core.connected && !isConnected {
        actions.append(.log(.info, "[LIVA] connection lost", ["status": "\(status)"]))
        actions.append(.connectionLost)
      }
      // Whatever the status, what was in flight is gone with the socket it was asked on.
      actions += core.connectionEnded()
      core.connected = isConnected
      if case .connected(let sid) = status {
        if !sid.isEmpty { core.sid = sid }
        core.manifestWait = (core.lastTick, 1)
        core.retries.reset()
        actions.append(.connectionRestored)
      }
      _ = core.machine.apply(.idleAvailable(idleAvailable))
      _ = core.machine.apply(.status(status))
      if isConnected {
        actions.append(.emit(.requestBaseAnimationsManifest(agentID: core.settings.agentID)))
      }
      return actions
    }
  }

  /// The manifest came on `connection`; `missing` is what the cache lacks of it, in priority
  /// order. Returns the downloads to ask for (those not in flight already), none while not
  /// connected.
  mutating func manifestReceived(
    _ manifest: [AnimationName: BaseAnimationInfo], missing: [AnimationName], connection: Int,
    idleAvailable: Bool
  ) -> [Action] {
    guard connection == self.connection else { return [] }
    return publishing { core in
      core.manifest = manifest
      core.manifestWait = nil
      _ = core.machine.apply(.idleAvailable(idleAvailable))
      // Read after the link dropped (events and statuses come on two streams): nothing is
      // asked for; the next connection asks for the manifest again.
      guard core.connected else { return [] }
      var actions: [Action] = []
      for name in missing where !core.isDownloading(name) {
        core.downloads[name] = .active(lastEvent: core.lastTick)
        actions.append(.emit(.requestSpecificBaseAnimation(name, agentID: core.settings.agentID)))
      }
      return actions
    }
  }

  /// A download's first event (`animation_total_frames`) came on `connection`: true when it
  /// was asked for (take it), false when not (refused: the disk holds nothing unasked).
  mutating func downloadBegins(_ name: AnimationName, connection: Int) -> (
    accepted: Bool, actions: [Action]
  ) {
    guard connection == self.connection, isDownloading(name) else {
      let refusal = LIVAProtocolError(
        .unrequested, "a download of \(name) that was not requested is ignored",
        event: Wire.Event.animationTotalFrames, fieldPath: Wire.Field.animationType)
      return (
        false,
        [
          .log(.warning, "[LIVA] unrequested download ignored", ["animation": "\(name)"]),
          .reject(refusal),
        ]
      )
    }
    downloads[name] = .active(lastEvent: lastTick)
    return (true, [])
  }

  /// An event of download `name` (a frame) came on `connection`: its watchdog starts over.
  /// False when the download is not in flight (the frame is not taken).
  mutating func downloadActive(_ name: AnimationName, connection: Int) -> Bool {
    guard connection == self.connection, isDownloading(name) else { return false }
    downloads[name] = .active(lastEvent: lastTick)
    return true
  }

  /// Download `name`'s end came on `connection`: the version to finish it as, or nil when it
  /// was not in flight (nothing to finish).
  mutating func downloadEnds(_ name: AnimationName, connection: Int) -> String? {
    guard connection == self.connection, isDownloading(name) else { return nil }
    downloads[name] = nil
    return manifest[name]?.version ?? ""
  }

  /// Download `name` was finished (`error` nil) or failed (refused, incomplete, unwritable):
  /// on failure the retry policy decides.
  mutating func downloadFinished(
    _ name: AnimationName, error: String?, idleAvailable: Bool
  ) -> [Action] {
    publishing { core in
      _ = core.machine.apply(.idleAvailable(idleAvailable))
      guard let error else {
        core.retries.succeeded(name)
        return []
      }
      return core.downloadFailed(name, error)
    }
  }

  /// Whether the idle animation can be drawn changed (the player's animations were refreshed).
  mutating func idleAvailability(_ available: Bool) -> [Action] {
    changing { _ = $0.machine.apply(.idleAvailable(available)) }
  }

  // MARK: - The player

  /// A new message was queued: it answers the oldest text waiting, if any.
  mutating func messageQueued(_ message: MessageID) {
    guard texts[message] == nil, let text = answers.answer() else { return }
    texts[message] = text
    if texts.count > PendingAnswers.limit, let oldest = texts.keys.min() {
      texts[oldest] = nil
    }
  }

  /// The player began `message`'s speech.
  mutating func speakingStarted(_ message: MessageID) -> [Action] {
    speaking = message
    return changing { _ = $0.machine.apply(.speakingStarted) }
      + [.event(.speakingStarted(message, text: texts[message]))]
  }

  /// The player ended `message`'s speech.
  mutating func speakingEnded(_ message: MessageID, interrupted: Bool) -> [Action] {
    let actions = changing { _ = $0.machine.apply(.speakingEnded) }
    if speaking == message { speaking = nil }
    let text = texts.removeValue(forKey: message)
    return actions + [.event(.speakingEnded(message, text: text, interrupted: interrupted))]
  }

  /// `message` was interrupted before its first frame: it never started and will not end
  /// otherwise, so its text, if it answered one, is reported as ended.
  mutating func messageDropped(_ message: MessageID) -> [Action] {
    guard speaking != message, let text = texts.removeValue(forKey: message) else { return [] }
    return [.event(.speakingEnded(message, text: text, interrupted: true))]
  }

  // MARK: - Time

  /// A display tick at `now`: what is overdue ends (answers, the manifest, stalled
  /// downloads) and retries that are due are asked for. `linkBytes` is the transport's count
  /// of bytes received (``LIVATransport/bytesReceived``): when it moved, the link is
  /// delivering.
  mutating func tick(now: Double, linkBytes: Int? = nil) -> [Action] {
    lastTick = now
    var actions: [Action] = []
    if let linkBytes, linkBytes != self.linkBytes {
      // A new transport counts from zero: only a rise is a delivery.
      if linkBytes > self.linkBytes {
        lastDelivery = now
        actions.append(.linkDelivered)
      }
      self.linkBytes = linkBytes
    }
    let delivering = lastDelivery.map { now - $0 < settings.deliveryQuiet } ?? false
    actions += givenUp(answers.expire(now: now), why: "no answer in time")
    if let (stamp, asks) = manifestWait {
      let since = stamp ?? now
      if now - since < settings.manifestTimeout {
        manifestWait = (since, asks)
      } else if asks < settings.manifestAsks {
        manifestWait = (now, asks + 1)
        actions.append(
          .log(.warning, "[LIVA] no manifest yet: asking again", ["attempt": "\(asks + 1)"]))
        actions.append(.emit(.requestBaseAnimationsManifest(agentID: settings.agentID)))
      } else {
        manifestWait = nil
        actions.append(.log(.error, "[LIVA] the manifest never came", ["asks": "\(asks)"]))
        actions.append(
          .event(.error(LIVAClientError(.timeout, "the manifest did not come after \(asks) asks"))))
      }
    }
    for (name, download) in downloads.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
      switch download {
      case .active(nil):
        downloads[name] = .active(lastEvent: now)
      case .active(let last?)
      where now - last >= settings.downloadTimeout
        && !(delivering && now - last < settings.maxDownloadStall):
        downloads[name] = nil
        actions.append(.abandonDownload(name))
        actions += downloadFailed(name, "the download stopped: no event of it in time")
      case .retrying(let delay, nil):
        downloads[name] = .retrying(delay: delay, due: now + delay)
      case .retrying(_, let due?) where now >= due:
        // Only while connected and still in the manifest.
        guard connected, manifest[name] != nil else {
          downloads[name] = nil
          continue
        }
        downloads[name] = .active(lastEvent: now)
        actions.append(.emit(.requestSpecificBaseAnimation(name, agentID: settings.agentID)))
      default:
        break
      }
    }
    return actions
  }

  // MARK: - Helpers

  /// Runs `change`, and appends ``Action/publish(_:)`` (with the events of an error state)
  /// when the state it leaves differs from the one before.
  private mutating func publishing(_ change: (inout ClientCore) -> [Action]) -> [Action] {
    let before = machine.state
    var actions = change(&self)
    let after = machine.state
    if after != before {
      actions.append(.publish(after))
      if case .error(let error) = after { actions.append(.event(.error(error))) }
    }
    return actions
  }

  private mutating func changing(_ change: (inout ClientCore) -> Void) -> [Action] {
    publishing { core -> [Action] in
      change(&core)
      return []
    }
  }

  /// The connection is gone (lost, or the app disconnected): every download ends (what was
  /// staged is abandoned) and nothing is awaited.
  private mutating func connectionEnded() -> [Action] {
    let abandoned = downloads.keys.filter(isDownloading).sorted { $0.rawValue < $1.rawValue }
    downloads = [:]
    manifestWait = nil
    return abandoned.map(Action.abandonDownload)
  }

  /// A download failed: reported, and scheduled again when the retry policy says so.
  private mutating func downloadFailed(_ name: AnimationName, _ error: String) -> [Action] {
    let decision = retries.failed(name)
    if case .retry(let delay) = decision, connected {
      let seconds =
        Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
      downloads[name] = .retrying(delay: seconds, due: lastTick.map { $0 + seconds })
    } else {
      downloads[name] = nil
    }
    return [
      .log(
        .warning, "download failed",
        ["animation": "\(name)", "error": error, "decision": "\(decision)"]),
      // Not a state: the connection is fine, and what is cached goes on playing.
      .event(.error(LIVAClientError(.download, "\(name): \(error)"))),
    ]
  }

  private func givenUp(_ texts: [String], why: String) -> [Action] {
    texts.flatMap { text -> [Action] in
      [
        .log(.warning, "[LIVA] a message sent got no answer", ["why": why]),
        .event(.messageUnanswered(text: text)),
      ]
    }
  }
}
