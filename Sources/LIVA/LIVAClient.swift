import Foundation
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import Locking
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
    /// Every decision (connection, downloads, watchdogs, answers); this shell carries out
    /// its actions.
    var core: ClientCore
    /// The transport of ``ClientCore/connection``.
    var socket: (any LIVATransport)?
    /// The current socket's two readers (its events, its statuses).
    var tasks: [Task<Void, Never>] = []
    /// The state last told to the ``LIVAClient/states`` streams.
    var published: LIVAState = .idle
    var continuations: [UUID: AsyncStream<LIVAState>.Continuation] = [:]
    var eventContinuations: [UUID: AsyncStream<LIVAEvent>.Continuation] = [:]
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
  /// Emits the core asks for, in order, each with the connection it was decided on: one task
  /// sends them on that connection's socket (none if it is gone).
  let outbox: AsyncStream<(connection: Int?, event: ClientEvent)>.Continuation

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
    let videoCodec = configuration.playbackForms ? BaseFrameStore.systemVideoCodec : nil
    let decodedFrameByteLimit = configuration.decodedFrameByteLimit
    do {
      store = try BaseFrameStore(
        root: configuration.cacheDirectory, diskByteLimit: configuration.cacheByteLimit,
        memoryByteLimit: decodedFrameByteLimit, videoCodec: videoCodec)
    } catch {
      throw LIVAClientError(.cache, "cannot open \(configuration.cacheDirectory.path): \(error)")
    }
    let changes = ChangeFeed()
    let state = Locked(
      State(core: ClientCore(settings: ClientCore.Settings(configuration)), changes: changes))
    self.protectedState = state
    let logger = configuration.logger
    var playerConfiguration = configuration.player
    playerConfiguration.baseFrameBudget = decodedFrameByteLimit
    player = LIVAPlayer(
      configuration: playerConfiguration, baseFrames: store, audio: audio, surface: surface,
      logger: configuration.logger, createdAt: created,
      decodeScheduler: configuration.decodeScheduler, changes: changes
    ) { action in
      let actions: [ClientCore.Action]
      switch action {
      case .chunkQueued(let id) where id.index == 0:
        // A new message: it answers the oldest text sent and not yet answered.
        state.withLock { $0.core.messageQueued(id.message) }
        return
      case .speakingStarted(let message):
        actions = state.withLock { $0.core.speakingStarted(message) }
      case .speakingEnded(let message, let interrupted):
        actions = state.withLock { $0.core.speakingEnded(message, interrupted: interrupted) }
      case .evictImages(let message, _):
        actions = state.withLock { $0.core.messageDropped(message) }
      case .startAudio(let chunk, _):
        actions = [.event(.chunkStarted(chunk))]
      case .warning(let warning):
        actions = [.event(.warning(warning))]
      default: return
      }
      Self.report(actions, in: state, logger: logger)
    }
    let (outgoing, outbox) = AsyncStream<(connection: Int?, event: ClientEvent)>.makeStream()
    self.outbox = outbox
    // Warm cache: the idle frames are decoded from disk right away (off this thread).
    try? store.preload(.idleForward, frames: 0..<1)
    let player = player
    displayLink.start { [weak self] now in
      player.tick(now: now)
      self?.clientTick(now: now)
    }
    Task { [weak self] in
      for await (connection, event) in outgoing {
        guard
          let socket = self?.protectedState.withLock({ state in
            connection != nil && state.core.connection == connection ? state.socket : nil
          })
        else { continue }
        do {
          try await socket.emit(event.name, [event.payload])
        } catch {
          self?.logger.warning(
            "emit failed", metadata: ["event": "\(event.name)", "error": "\(error)"])
        }
      }
    }
  }

  /// A client dropped without ``disconnect()`` stops: its display link, its tasks, and its
  /// socket (which would otherwise reconnect and play for ever).
  deinit {
    displayLink.stop()
    outbox.finish()
    let (socket, tasks) = protectedState.withLock { ($0.socket, $0.tasks) }
    for task in tasks { task.cancel() }
    if let socket { Task { await socket.disconnect() } }
  }

  // MARK: - State

  /// The current state.
  public var state: LIVAState { protectedState.withLock { $0.core.state } }

  /// Every state change from now on (the current state first). Each call makes a new stream.
  public var states: AsyncStream<LIVAState> {
    let (stream, continuation) = AsyncStream<LIVAState>.makeStream(
      bufferingPolicy: .bufferingNewest(16))
    let id = UUID()
    let current = protectedState.withLock { state -> LIVAState in
      state.continuations[id] = continuation
      return state.published
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
    protectedState.withLock { $0.core.pendingDownloads }
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
  /// download), and failed downloads whose retry is due are asked for again (see
  /// ``ClientCore/tick(now:)``).
  func clientTick(now: Double) {
    let (actions, connection) = protectedState.withLock { state in
      (state.core.tick(now: now, linkBytes: state.socket?.bytesReceived), state.core.connection)
    }
    perform(actions, connection: connection)
  }

  /// Feeds the core under the lock, then carries out what it decided.
  func step(_ input: (inout ClientCore) -> [ClientCore.Action]) {
    let (actions, connection) = protectedState.withLock { state in
      (input(&state.core), state.core.connection)
    }
    perform(actions, connection: connection)
  }

  /// Carries out the core's actions, in order; `connection` is the one they were decided on
  /// (its socket gets the emits).
  func perform(_ actions: [ClientCore.Action], connection: Int?) {
    guard !actions.isEmpty else { return }
    var reported: [ClientCore.Action] = []
    for action in actions {
      switch action {
      case .emit(let event): outbox.yield((connection, event))
      case .abandonDownload(let name): player.baseFrames.abandonDownload(name)
      case .connectionLost: player.connectionLost()
      case .connectionRestored: player.connectionRestored()
      case .linkDelivered: player.linkDelivered()
      case .reject(let error):
        player.noteRejectedEvent(error)
        reported.append(action)
      case .publish, .event, .log: reported.append(action)
      }
    }
    Self.report(reported, in: protectedState, logger: logger)
  }

  /// Carries out the actions that only tell: the state, the app's events, the log. A state
  /// change is told as the core's state at the time told, once: streams end on the truth
  /// whatever order two threads tell in.
  static func report(_ actions: [ClientCore.Action], in state: Locked<State>, logger: Logger) {
    for action in actions {
      switch action {
      case .publish:
        let changed = state.withLock {
          state -> (LIVAState, [AsyncStream<LIVAState>.Continuation])? in
          let now = state.core.state
          guard now != state.published else { return nil }
          state.published = now
          return (now, Array(state.continuations.values))
        }
        guard let (newState, continuations) = changed else { continue }
        for continuation in continuations { continuation.yield(newState) }
        emit(.stateChanged(newState), in: state)
      case .event(let event): emit(event, in: state)
      case .reject(let error): emit(.rejected(error), in: state)
      case .log(let level, let message, let metadata):
        logger.log(
          level: level, "\(message)", metadata: metadata.mapValues { .string($0) })
      default: break
      }
    }
    state.withLock { $0.changes }.signal()
  }

  static func emit(_ event: LIVAEvent, in state: Locked<State>) {
    let (continuations, changes) = state.withLock {
      (Array($0.eventContinuations.values), $0.changes)
    }
    for continuation in continuations { continuation.yield(event) }
    changes.signal()
  }

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
    let socket =
      configuration.makeTransport?(socketConfiguration, logger)
      ?? SocketIOClient(configuration: socketConfiguration, logger: logger)
    let started = protectedState.withLock { state -> (Int, [ClientCore.Action])? in
      guard state.socket == nil else { return nil }
      state.socket = socket
      return state.core.connect()
    }
    guard let (connection, actions) = started else { return }
    perform(actions, connection: connection)
    // The tasks hold the client only while they handle an element: a client the app drops
    // is released, and its deinit stops the socket. Each input carries its connection's
    // number: the core takes nothing of a socket replaced or dropped.
    let events = Task { [weak self, stream = socket.events] in
      for await event in stream {
        guard let self else { return }
        guard protectedState.withLock({ $0.core.connection == connection }) else { continue }
        handle(event, connection: connection)
        changes.signal()
        // A backend that asked for an acknowledgement (to pace or to retry) gets one once the
        // event is taken in, whatever it held: as python-socketio's own client answers.
        if event.wantsAck { await event.ack([]) }
      }
    }
    let statuses = Task { [weak self, stream = socket.statusUpdates] in
      for await status in stream {
        guard let self else { return }
        let idle = isIdleAvailable
        step { $0.status(status, connection: connection, idleAvailable: idle) }
        changes.signal()
      }
    }
    let current = protectedState.withLock { state -> Bool in
      guard state.core.connection == connection else { return false }
      state.tasks = [events, statuses]
      return true
    }
    if current { await socket.connect() }
    // A disconnect() (or another connect()) that came before the socket started found nothing
    // to stop: stop it now.
    guard protectedState.withLock({ $0.core.connection != connection }) else { return }
    await socket.disconnect()
    events.cancel()
    statuses.cancel()
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
    // The core lets go of the connection at once: what its socket still delivers is not taken.
    let (socket, tasks, actions) = protectedState.withLock { state in
      defer {
        state.socket = nil
        state.tasks = []
      }
      return (state.socket, state.tasks, state.core.disconnect())
    }
    await socket?.disconnect()
    for task in tasks { task.cancel() }
    perform(actions, connection: nil)
  }

  /// Sends a user message; the backend answers with speech. The animations ready to draw are
  /// sent along so the backend only plans with those.
  ///
  /// - Throws: ``LIVAClientError`` `send` when the message cannot be sent.
  public func sendMessage(_ text: String) async throws(LIVAClientError) {
    let ready = player.readyAnimations
    step { $0.sent(text) }
    do {
      if configuration.sendMessagesOverHTTP {
        try await postMessage(text, readyAnimations: ready)
      } else {
        try await send(.userMessage(text, readyAnimations: ready))
      }
    } catch {
      protectedState.withLock { $0.core.sendFailed(text) }
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
