// SocketIOSession: emits, their acknowledgements, and the liveness probes that confirm them.
extension SocketIOSession {
  /// Emits `frames` (an event packet): sent now when connected, else kept for the next
  /// connection. Refused (``Action/refuseEmit(_:)``, nothing kept) when larger than the
  /// server's `maxPayload`, past ``Settings/maximumBufferedEmits`` waiting, or past
  /// ``Settings/maximumOutboundBytes`` held: an emit accepted is never dropped later.
  ///
  /// With `now`, a WebSocket ping follows the emit (unless one is in flight) and its pong is
  /// due within ``Settings/livenessTimeout``; without it (tests of ordering only), none.
  public mutating func emit(_ frames: [EngineIOFrame], now: Duration? = nil) -> [Action] {
    emit(frames, ackID: nil, now: now)
  }

  mutating func emit(_ frames: [EngineIOFrame], ackID: Int?, now: Duration?) -> [Action] {
    if let refusal = oversize(frames) { return [.refuseEmit(refusal)] }
    let bytes = frames.reduce(0) { $0 + $1.byteCount }
    if outboundBytes + bytes > settings.maximumOutboundBytes {
      return [
        .refuseEmit(
          SocketIOError(
            .outboundFull,
            "an emit of \(bytes) bytes would hold \(outboundBytes + bytes) bytes unsent or "
              + "unconfirmed, past the limit of \(settings.maximumOutboundBytes)"))
      ]
    }
    if let transport, transport.namespaceConnected, transport.outcome == nil {
      return write(frames, ackID: ackID, now: now)
    }
    guard buffered.count < settings.maximumBufferedEmits else {
      return [
        .refuseEmit(
          SocketIOError(
            .outboundFull,
            "\(buffered.count) emits already wait for a connection (the limit)"))
      ]
    }
    buffered.append(frames)
    return []
  }

  /// Bytes of emits held: waiting for a connection, and written but not confirmed.
  public var outboundBytes: Int {
    let waiting = buffered.reduce(0) { $0 + $1.reduce(0) { $0 + $1.byteCount } }
    let unconfirmed = (transport?.unconfirmed ?? []).reduce(0) {
      $0 + $1.frames.reduce(0) { $0 + $1.byteCount }
    }
    return waiting + unconfirmed
  }

  /// Emits event `name` asking for an acknowledgement within `timeout` of `now`: its id and
  /// what to do. ``tick(now:)`` fails it once the deadline passes.
  public mutating func emitWithAck(
    _ name: String, _ arguments: [JSONValue], timeout: Duration, now: Duration
  ) -> (id: Int, actions: [Action]) {
    let id = nextAckID
    nextAckID = nextAckID == Int(Int32.max) ? 0 : nextAckID + 1
    ackDeadlines[id] = (name, now + timeout)
    let packet = SocketIOPacket.event(name, arguments, namespace: settings.namespace, ackID: id)
    return (id, emit(packet.frames, ackID: id, now: now))
  }

  /// Why an emit cannot be sent: one of its messages is larger than the server's last
  /// announced `maxPayload` (a server closes the connection on such a message).
  func oversize(_ frames: [EngineIOFrame]) -> SocketIOError? {
    guard let limit = serverMaximumPayload, let largest = frames.map(\.byteCount).max(),
      largest > limit
    else { return nil }
    return SocketIOError(
      .payloadTooLarge,
      "an emit of \(largest) bytes exceeds the server's maxPayload of \(limit) bytes")
  }

  /// Writes an emit on the connected transport and keeps it until a pong confirms it.
  mutating func write(_ frames: [EngineIOFrame], ackID: Int? = nil, now: Duration?)
    -> [Action]
  {
    guard transport != nil else { return [] }
    transport?.unconfirmed.append((frames, ackID))
    var actions: [Action] = [.send(frames)]
    if let now, transport?.probeDeadline == nil {
      actions += startProbe(now: now)
    }
    return actions
  }

  /// Bytes of the current transport were read at `now`, whether or not they completed a
  /// packet: the link is delivering, so the ping in flight has its whole
  /// ``Settings/livenessTimeout`` from here. A large event on a slow link is seconds of reads
  /// and one packet, and the pong queued behind it comes only after; without this, a link
  /// carrying 20 KB/s would be declared dead under any event longer than the timeout's worth
  /// of bytes. It confirms no emit (only the pong or an acknowledgement does), and a dead link
  /// reads nothing, so it is still found a timeout after its last byte.
  public mutating func bytesArrived(now: Duration) {
    guard transport?.outcome == nil else { return }
    sawTraffic(now)
  }

  /// A packet was read at `now`: the link carries data, so the ping in flight has its whole
  /// timeout from here (its pong may be queued behind megabytes of the server's events). This
  /// confirms no emit: only the pong or an acknowledgement does. A dead link reads nothing and
  /// is still found a timeout after its last packet.
  mutating func sawTraffic(_ now: Duration?) {
    guard let now, let deadline = transport?.probeDeadline else { return }
    transport?.probeDeadline = max(deadline, now + settings.livenessTimeout)
  }

  mutating func startProbe(now: Duration) -> [Action] {
    guard let current = transport, !current.unconfirmed.isEmpty else { return [] }
    let id = current.probeID &+ 1
    transport?.probeID = id
    transport?.probed = current.unconfirmed.count
    transport?.probeDeadline = now + settings.livenessTimeout
    return [.probe(id)]
  }

  /// The server answered a WebSocket ping at `now`, echoing probe number `id` (nil: not a
  /// number of ours). The pong of the newest ping confirms the emits written before it and a
  /// ping follows any written since; any other pong confirms nothing (the ping it answers may
  /// predate emits written into a link that died since).
  public mutating func receivePong(_ id: UInt32?, now: Duration) -> [Action] {
    guard let current = transport, current.outcome == nil, current.probeDeadline != nil,
      id == current.probeID
    else {
      return []
    }
    transport?.unconfirmed.removeFirst(min(current.probed, current.unconfirmed.count))
    transport?.probed = 0
    transport?.probeDeadline = nil
    return startProbe(now: now)
  }

  /// The server acknowledged emit `ackID`: it read it and everything written before it.
  mutating func confirm(through ackID: Int) {
    guard let current = transport,
      let index = current.unconfirmed.firstIndex(where: { $0.ackID == ackID })
    else { return }
    transport?.unconfirmed.removeFirst(index + 1)
    transport?.probed = max(0, current.probed - (index + 1))
    if transport?.unconfirmed.isEmpty == true { transport?.probeDeadline = nil }
  }

  /// The number of the ping whose pong is awaited, if one is.
  public var probeInFlight: UInt32? {
    transport?.probeDeadline == nil ? nil : transport?.probeID
  }

  /// Emits written on this transport and not yet confirmed by a pong or an acknowledgement.
  public var unconfirmedEmits: Int { transport?.unconfirmed.count ?? 0 }

  /// The frames acknowledging a server event of transport `transport`; none when that
  /// transport is gone (an answer on another connection would name an id the server forgot).
  public func acknowledge(_ id: Int, _ arguments: [JSONValue], transport: Int) -> [Action] {
    guard let current = self.transport, current.id == transport, current.outcome == nil else {
      return []
    }
    return [.send(SocketIOPacket.ack(id, arguments, namespace: settings.namespace).frames)]
  }
}
