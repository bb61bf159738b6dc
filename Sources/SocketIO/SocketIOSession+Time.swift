// SocketIOSession: deadlines, a paused reader, and how a transport ends.
extension SocketIOSession {
  /// The time is `now`: a transport past its deadline ends (`pingTimeout`), acknowledgements
  /// past theirs fail (`ackTimeout`).
  public mutating func tick(now: Duration) -> [Action] {
    var actions: [Action] = []
    for (id, awaited) in ackDeadlines.sorted(by: { $0.key < $1.key }) where now >= awaited.deadline
    {
      ackDeadlines[id] = nil
      actions.append(
        .failAck(id, SocketIOError(.ackTimeout, "no acknowledgement for \"\(awaited.name)\"")))
    }
    if let current = transport, current.outcome == nil, current.pausedSince == nil,
      now >= current.effectiveDeadline
    {
      actions += end(.pingTimeout)
    }
    return actions
  }

  /// The owner stopped reading the transport at `now` (`paused`: its application has not
  /// taken the events received, and their bytes reached the budget), or reads again. While
  /// paused no deadline ends the transport: what is unread says nothing of the link. On
  /// reading again, the ping in flight and the heartbeat are due as much later as the pause
  /// lasted (the time left to them when reading stopped, counted from `now`).
  public mutating func readingPaused(_ paused: Bool, now: Duration) {
    guard let current = transport else { return }
    if paused {
      if current.pausedSince == nil { transport?.pausedSince = now }
      return
    }
    guard let since = current.pausedSince else { return }
    let paused = max(.zero, now - since)
    transport?.pausedSince = nil
    transport?.probeDeadline = current.probeDeadline.map { $0 + paused }
    transport?.deadline = current.deadline + paused
    transport?.connectDeadline = current.connectDeadline + paused
  }

  mutating func extendDeadline(_ now: Duration) {
    guard let handshake = transport?.handshake else { return }
    transport?.deadline =
      now + Self.heartbeat(handshake.pingInterval) + Self.heartbeat(handshake.pingTimeout)
  }

  /// A heartbeat value of the handshake, in milliseconds, clamped to 0…``maximumHeartbeat``.
  static func heartbeat(_ milliseconds: Int) -> Duration {
    let limit = Int(maximumHeartbeat.components.seconds) * 1000
    return .milliseconds(min(max(0, milliseconds), limit))
  }

  mutating func end(_ reason: SocketIODisconnectReason) -> [Action] {
    transport?.outcome = reason
    return [.endTransport(reason)]
  }
}
