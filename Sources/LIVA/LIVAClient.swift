import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Logging
import SocketIO

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// A LIVA avatar connected to a backend: downloads the avatar's base animations (idle first),
/// receives speech, and plays it through a ``LIVAPlayer`` driven by a ``DisplayLink``, into a
/// ``RenderSurface`` and an ``AudioOutput``.
///
/// The first iOS SDK's API maps onto it as follows:
///
/// | first SDK | here |
/// |---|---|
/// | `configure(...)` | `LIVAClient(configuration:displayLink:audio:surface:)` |
/// | `attachView(_:)` | the `surface` argument (LIVAKit's view on Apple) |
/// | `connect()` / `disconnect()` | ``connect()`` / ``disconnect()`` |
/// | `state` | ``state`` |
/// | `onStateChange` / `onError` | ``states`` (errors arrive as ``LIVAState/error(_:)``) |
/// | `sendMessage(_:)` | ``sendMessage(_:)`` |
/// | `forceIdleNow()` | ``interrupt()`` |
public final class LIVAClient: Sendable {
  struct State {
    /// Decides ``LIVAClient/state``.
    var machine = ClientStateMachine()
    var socket: SocketIOClient?
    var tasks: [Task<Void, Never>] = []
    var manifest: [AnimationName: BaseAnimationInfo] = [:]
    var downloading: Set<AnimationName> = []
    /// Downloads that failed and will be asked for again (waiting for their retry).
    var retrying: Set<AnimationName> = []
    /// The waits on the backend (the manifest, each download), each with an end.
    var watchdogs = ClientWatchdogs()
    var continuations: [UUID: AsyncStream<LIVAState>.Continuation] = [:]
    var eventContinuations: [UUID: AsyncStream<LIVAEvent>.Continuation] = [:]
    var connected = false
    /// The socket id of the newest namespace connection: an event that arrived on another one
    /// belongs to a connection that is gone.
    var sid: String?
    /// Texts sent and not yet matched to a message, oldest first, each for a bounded time.
    var answers: PendingAnswers
    /// The last display tick's time (the player's clock), for the answers' watchdog.
    var lastTick: Double?
    /// The text each message answers (messages without one are absent); at most
    /// ``PendingAnswers/limit``, the oldest message's going first.
    var texts: [MessageID: String] = [:]
    /// The message speaking, between its `speakingStarted` and `speakingEnded`.
    var speaking: MessageID?
    /// Failed downloads and when to ask for them again.
    var retries: DownloadRetries
    /// The player's feed, signalled after every change of the client too (state, downloads,
    /// events): see ``LIVAClient/changes``.
    let changes: ChangeFeed
  }

  /// The configuration.
  public let configuration: LIVAConfiguration
  /// The playback pipeline (metrics, mode, direct event injection).
  public let player: LIVAPlayer
  let displayLink: any DisplayLink
  let protectedState: Locked<State>
  let logger: Logger

  /// Creates a client and starts drawing at once: with a warm cache the idle animation's first
  /// frame is on screen at the first display tick, before any connection.
  ///
  /// - Throws: ``LIVAClientError`` `cache` when the cache directory cannot be opened.
  public init(
    configuration: LIVAConfiguration, displayLink: any DisplayLink, audio: any AudioOutput,
    surface: any RenderSurface
  ) throws(LIVAClientError) {
    let created = configuration.startInstant ?? ContinuousClock.now
    self.configuration = configuration
    self.logger = configuration.logger
    self.displayLink = displayLink
    let store: BaseFrameStore
    do {
      store = try BaseFrameStore(
        root: configuration.cacheDirectory, diskByteLimit: configuration.cacheByteLimit,
        memoryByteLimit: configuration.decodedFrameByteLimit)
    } catch {
      throw LIVAClientError(.cache, "cannot open \(configuration.cacheDirectory.path): \(error)")
    }
    let changes = ChangeFeed()
    let state = Locked(
      State(
        answers: PendingAnswers(timeout: configuration.answerTimeout),
        retries: DownloadRetries(policy: configuration.downloadRetry), changes: changes))
    self.protectedState = state
    var playerConfiguration = configuration.player
    playerConfiguration.baseFrameBudget = configuration.decodedFrameByteLimit
    player = LIVAPlayer(
      configuration: playerConfiguration, baseFrames: store, audio: audio, surface: surface,
      logger: configuration.logger, createdAt: created,
      decodeScheduler: configuration.decodeScheduler, changes: changes
    ) { action in
      switch action {
      case .chunkQueued(let id) where id.index == 0:
        // A new message: it answers the oldest text sent and not yet answered.
        state.withLock { state in
          if state.texts[id.message] == nil, let text = state.answers.answer() {
            state.texts[id.message] = text
            if state.texts.count > PendingAnswers.limit, let oldest = state.texts.keys.min() {
              state.texts[oldest] = nil
            }
          }
        }
      case .speakingStarted(let message):
        state.withLock { $0.speaking = message }
        Self.apply(.speakingStarted, in: state)
        Self.emit(.speakingStarted(message, text: state.withLock { $0.texts[message] }), in: state)
      case .speakingEnded(let message, let interrupted):
        Self.apply(.speakingEnded, in: state)
        let text = state.withLock { state in
          if state.speaking == message { state.speaking = nil }
          return state.texts.removeValue(forKey: message)
        }
        Self.emit(.speakingEnded(message, text: text, interrupted: interrupted), in: state)
      case .evictImages(let message, _):
        // Interrupted before its first frame: it never started and will not end otherwise.
        // Its text, if it answered one, is reported as ended so the app is not left waiting.
        let text = state.withLock { state -> String? in
          state.speaking == message ? nil : state.texts.removeValue(forKey: message)
        }
        if let text {
          Self.emit(.speakingEnded(message, text: text, interrupted: true), in: state)
        }
      case .startAudio(let chunk, _):
        Self.emit(.chunkStarted(chunk), in: state)
      case .warning(let warning):
        Self.emit(.warning(warning), in: state)
      default: break
      }
    }
    // Warm cache: the idle frames are decoded from disk right away (off this thread).
    try? store.preload(.idleForward, frames: 0..<1)
    let player = player
    displayLink.start { [weak self] now in
      player.tick(now: now)
      self?.clientTick(now: now)
    }
  }

  /// A client dropped without ``disconnect()`` stops: its display link, its tasks, and its
  /// socket (which would otherwise reconnect and play for ever).
  deinit {
    displayLink.stop()
    let (socket, tasks) = protectedState.withLock { ($0.socket, $0.tasks) }
    for task in tasks { task.cancel() }
    if let socket { Task { await socket.disconnect() } }
  }

  // MARK: - State

  /// The current state.
  public var state: LIVAState { protectedState.withLock { $0.machine.state } }

  /// Every state change from now on (the current state first). Each call makes a new stream.
  public var states: AsyncStream<LIVAState> {
    let (stream, continuation) = AsyncStream<LIVAState>.makeStream(
      bufferingPolicy: .bufferingNewest(16))
    let id = UUID()
    let current = protectedState.withLock { state -> LIVAState in
      state.continuations[id] = continuation
      return state.machine.state
    }
    continuation.yield(current)
    continuation.onTermination = { [protectedState] _ in
      protectedState.withLock { _ = $0.continuations.removeValue(forKey: id) }
    }
    return stream
  }

  /// Base animations requested from the server and not complete yet, and failed ones waiting
  /// to be asked for again (``LIVAConfiguration/downloadRetry``). (While connected and the
  /// manifest has not come yet, the unknown set counts as one.)
  public var pendingDownloads: Int {
    protectedState.withLock {
      $0.downloading.union($0.retrying).count + ($0.watchdogs.awaitingManifest ? 1 : 0)
    }
  }

  /// Accounting of the pipeline.
  public var metrics: PlayerMetrics { player.metrics }

  /// Signalled after every change of what the client and its player report (``state``,
  /// ``pendingDownloads``, an event, the player's inputs and decode workers): wait on it with
  /// ``ChangeFeed/wait(timeout:until:)`` rather than polling.
  package var changes: ChangeFeed { player.changes }

  /// Every event from now on (see ``LIVAEvent``). Each call makes a new stream; it keeps the
  /// newest 256 events when the reader falls behind.
  public var events: AsyncStream<LIVAEvent> {
    let (stream, continuation) = AsyncStream<LIVAEvent>.makeStream(
      bufferingPolicy: .bufferingNewest(256))
    let id = UUID()
    protectedState.withLock { $0.eventContinuations[id] = continuation }
    continuation.onTermination = { [protectedState] _ in
      protectedState.withLock { _ = $0.eventContinuations.removeValue(forKey: id) }
    }
    return stream
  }

  /// A display tick: the waits on the backend that are overdue end (a text waiting for its
  /// answer longer than ``LIVAConfiguration/answerTimeout``, the manifest, a stalled
  /// download; see ``ClientWatchdogs``).
  func clientTick(now: Double) {
    let (expired, actions) = protectedState.withLock { state in
      state.lastTick = now
      let expired = state.answers.expire(now: now)
      let actions = state.watchdogs.tick(now: now)
      for case .downloadStalled(let name) in actions { state.downloading.remove(name) }
      return (expired, actions)
    }
    Self.givenUp(expired, why: "no answer in time", in: protectedState, logger: logger)
    for action in actions { overdue(action) }
  }

  /// Reports texts that wait for their answer no more (``LIVAEvent/messageUnanswered(text:)``).
  static func givenUp(_ texts: [String], why: String, in state: Locked<State>, logger: Logger) {
    for text in texts {
      logger.warning("[LIVA] a message sent got no answer", metadata: ["why": "\(why)"])
      emit(.messageUnanswered(text: text), in: state)
    }
  }

  static func emit(_ event: LIVAEvent, in state: Locked<State>) {
    let (continuations, changes) = state.withLock {
      (Array($0.eventContinuations.values), $0.changes)
    }
    for continuation in continuations { continuation.yield(event) }
    changes.signal()
  }

  /// Feeds the state machine; a new state goes to every ``states`` stream and ``events``.
  static func apply(_ input: ClientStateMachine.Input, in state: Locked<State>) {
    let changed = state.withLock {
      state -> (LIVAState, [AsyncStream<LIVAState>.Continuation])? in
      guard let newState = state.machine.apply(input) else { return nil }
      return (newState, Array(state.continuations.values))
    }
    guard let (newState, continuations) = changed else {
      state.withLock { $0.changes }.signal()
      return
    }
    for continuation in continuations { continuation.yield(newState) }
    emit(.stateChanged(newState), in: state)
    if case .error(let error) = newState { emit(.error(error), in: state) }
  }

  func apply(_ input: ClientStateMachine.Input) { Self.apply(input, in: protectedState) }

  // MARK: - Connection

  /// Connects to the backend (and keeps reconnecting when the connection drops), asks for the
  /// avatar's manifest and downloads what the cache lacks, idle first.
  ///
  /// Does nothing while connecting, connected or waiting to reconnect. Once the connection
  /// ended for good (the server disconnected or refused the client, or reconnection gave up
  /// after the policy's failure limit: ``state`` is ``LIVAState/error(_:)``), it starts afresh
  /// with a new socket and a new failure count.
  public func connect() async {
    if let current = protectedState.withLock({ $0.socket }) {
      guard await !current.isStarted else { return }
      // The old socket stopped for good: drop it (its statuses no longer count) and start over.
      let tasks = protectedState.withLock { state -> [Task<Void, Never>] in
        guard state.socket === current else { return [] }
        defer {
          state.socket = nil
          state.tasks = []
        }
        return state.tasks
      }
      for task in tasks { task.cancel() }
    }
    let socket = SocketIOClient(configuration: socketConfiguration, logger: logger)
    let alreadyConnected = protectedState.withLock { state -> Bool in
      guard state.socket == nil else { return true }
      state.socket = socket
      return false
    }
    guard !alreadyConnected else { return }
    apply(.connectRequested)
    // The tasks hold the client only while they handle an element: a client the app drops
    // is released, and its deinit stops the socket.
    let events = Task { [weak self, stream = socket.events, weak socket] in
      for await event in stream {
        guard let self, let socket else { return }
        // A socket replaced by a fresh connect() (or dropped by disconnect()) speaks no more:
        // its late manifest would ask the new socket for downloads that the new connection's
        // status then forgets (never downloaded, so never ready).
        guard protectedState.withLock({ $0.socket === socket }) else { continue }
        await handle(event)
        changes.signal()
        // A backend that asked for an acknowledgement (to pace or to retry) gets one once the
        // event is taken in, whatever it held: as python-socketio's own client answers.
        if event.wantsAck { await event.ack([]) }
      }
    }
    let statuses = Task { [weak self, stream = socket.statusUpdates, weak socket] in
      for await status in stream {
        guard let self, let socket else { return }
        await handle(status, of: socket)
        changes.signal()
      }
    }
    let current = protectedState.withLock { state -> Bool in
      guard state.socket === socket else { return false }
      state.tasks += [events, statuses]
      return true
    }
    if current { await socket.connect() }
    // A disconnect() that came before the socket started found nothing to stop (and may have
    // reported idle before this connect() reported connecting): stop it now, and say so.
    let superseded = protectedState.withLock { state -> (gone: Bool, idle: Bool) in
      (state.socket !== socket, state.socket == nil)
    }
    guard superseded.gone else { return }
    await socket.disconnect()
    events.cancel()
    statuses.cancel()
    if superseded.idle { apply(.disconnectRequested) }
  }

  /// The socket's configuration: the server, the connection query, reconnection, auth, TLS.
  var socketConfiguration: SocketIOClientConfiguration {
    let query = LIVAConnectionQuery(
      userID: configuration.userID, agentID: configuration.agentID,
      instanceID: configuration.instanceID, userResolution: String(configuration.resolution))
    var socketConfiguration = SocketIOClientConfiguration(url: configuration.serverURL)
    socketConfiguration.query = query.items
    socketConfiguration.reconnection = configuration.reconnection
    socketConfiguration.auth = configuration.auth
    socketConfiguration.tlsConfiguration = configuration.tlsConfiguration
    return socketConfiguration
  }

  /// Disconnects and stops reconnecting. Playback of what was received goes on.
  public func disconnect() async {
    let (socket, tasks) = protectedState.withLock { state in
      defer {
        state.socket = nil
        state.tasks = []
        state.connected = false
        state.watchdogs.disconnected()
        state.retrying = []
      }
      return (state.socket, state.tasks)
    }
    await socket?.disconnect()
    for task in tasks { task.cancel() }
    Self.givenUp(
      protectedState.withLock { $0.answers.clear() }, why: "disconnected", in: protectedState,
      logger: logger)
    apply(.disconnectRequested)
  }

  /// Sends a user message; the backend answers with speech. The animations ready to draw are
  /// sent along so the backend only plans with those.
  ///
  /// - Throws: ``LIVAClientError`` `send` when the message cannot be sent.
  public func sendMessage(_ text: String) async throws(LIVAClientError) {
    let ready = player.readyAnimations
    let pushedOut = protectedState.withLock { $0.answers.sent(text, at: $0.lastTick) }
    Self.givenUp(
      pushedOut, why: "more than \(PendingAnswers.limit) waiting", in: protectedState,
      logger: logger)
    do {
      if configuration.sendMessagesOverHTTP {
        try await postMessage(text, readyAnimations: ready)
      } else {
        try await send(.userMessage(text, readyAnimations: ready))
      }
    } catch {
      protectedState.withLock { $0.answers.withdraw(text) }
      throw error
    }
  }

  /// Tells the backend the app's session id (`set_session_id`).
  ///
  /// - Throws: ``LIVAClientError`` `send` when not connected or the emit fails.
  public func setSessionID(_ sessionID: String) async throws(LIVAClientError) {
    try await send(.setSessionID(sessionID))
  }

  /// Voice input: sends a recording of the user (`user_full_audio`, the audio as a binary
  /// attachment); the backend answers with speech as for a text message.
  ///
  /// - Parameters:
  ///   - audio: the recording, in the format the backend expects (e.g. WAV or MP3).
  ///   - messageHistory: earlier turns, as the backend expects them.
  ///   - appName: `app_name`.
  /// - Throws: ``LIVAClientError`` `send` when not connected or the emit fails.
  public func sendVoice(
    _ audio: Data, messageHistory: [WireValue] = [], appName: String = "liva"
  ) async throws(LIVAClientError) {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    try await send(
      .userFullAudio(
        audio: audio, encoding: .binary, userID: configuration.userID,
        agentID: configuration.agentID, appName: appName, instanceID: configuration.instanceID,
        userResolution: String(configuration.resolution), messageHistory: messageHistory,
        timestamp: formatter.string(from: Date())))
  }

  func send(_ event: ClientEvent) async throws(LIVAClientError) {
    guard let socket = protectedState.withLock({ $0.socket }) else {
      throw LIVAClientError(.send, "not connected")
    }
    do {
      try await socket.emit(event.name, [event.payload])
    } catch {
      throw LIVAClientError(.send, "\(event.name): \(error)")
    }
  }

  /// Pauses the avatar: the picture holds and the audio pauses with it.
  public func pause() { player.pause() }

  /// Resumes after ``pause()``: picture and audio go on together.
  public func resume() { player.resume() }

  /// Debug step mode: advances one frame slot and returns the frame drawn (see
  /// ``LIVAPlayer/stepForward()``).
  @discardableResult
  public func stepForward() -> DrawnFrame? { player.stepForward() }

  /// Debug step mode: goes back one step (see ``LIVAPlayer/stepBackward()``).
  @discardableResult
  public func stepBackward() -> DrawnFrame? { player.stepBackward() }

  /// What is on screen (see ``LIVAPlayer/describe()``).
  public func describe() -> FrameDescription { player.describe() }

  /// Interrupts the speech (the first SDK's `forceIdleNow`): audio stops, the mouths of the
  /// message never come back, and the avatar returns to idle through its transitions.
  public func interrupt() { player.interrupt() }

  /// Plays a base animation (e.g. `hi_1_s_hi_1_e`) when the avatar is idle.
  public func play(_ animation: AnimationName) { player.play(animation) }

}
