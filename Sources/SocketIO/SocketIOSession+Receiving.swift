// SocketIOSession: Engine.IO and Socket.IO packets from the server.
extension SocketIOSession {
  /// One Engine.IO control packet at `now`.
  public mutating func receive(_ packet: EngineIOPacket, now: Duration) -> [Action] {
    guard transport != nil, transport?.outcome == nil else { return [] }
    sawTraffic(now)
    switch packet {
    case .open(let handshake):
      transport?.handshake = handshake
      serverMaximumPayload = handshake.maxPayload > 0 ? handshake.maxPayload : nil
      extendDeadline(now)
      var connect = SocketIOPacket.connect(namespace: settings.namespace)
      connect.payload = settings.auth
      return [.send(connect.frames)]
    case .ping(let payload):
      extendDeadline(now)
      pingsAnswered += 1
      // Servers ping with nothing or "probe"; a large payload is not echoed (a server, or a
      // man in the middle, could otherwise make every ping cost its size again in writes).
      let echoed = payload.utf8.count <= Self.maximumEchoedPingBytes ? payload : ""
      return [.send([EngineIOPacket.pong(echoed).frame])]
    case .close:
      return end(.transportClose)
    case .message, .binaryMessage, .pong, .upgrade, .noop:
      return []
    }
  }

  /// One Socket.IO packet.
  ///
  /// With `now`, the emits flushed on a CONNECT are followed by a WebSocket ping, as
  /// ``emit(_:now:)`` does.
  public mutating func receive(_ packet: SocketIOPacket, bytes: Int = 0, now: Duration? = nil)
    -> [Action]
  {
    guard let current = transport, current.outcome == nil else { return [] }
    sawTraffic(now)
    guard packet.namespace == settings.namespace else { return [] }
    switch packet.kind {
    case .connect:
      let sid = packet.payload?["sid"]?.stringValue ?? ""
      transport?.namespaceConnected = true
      transport?.sid = sid
      transport?.early = []
      transport?.earlyBytes = 0
      // Events that came before the CONNECT are the new connection's: delivered after it.
      let early = current.early.map { event -> Action in
        var event = event
        event.sid = sid
        return .deliver(event)
      }
      let waiting = buffered
      buffered = []
      var flushed: [Action] = []
      for frames in waiting {
        if let refusal = oversize(frames) {
          flushed.append(.refuseEmit(refusal))
        } else {
          flushed += write(frames, now: now)
        }
      }
      return [.status(.connected(sid: sid))] + early + flushed
    case .connectError:
      return end(.connectRefused(packet.connectErrorMessage ?? "refused"))
    case .disconnect:
      return end(.serverDisconnect)
    case .event:
      guard let name = packet.eventName else { return [] }
      let event = Delivery(
        name: name, arguments: packet.arguments, namespace: packet.namespace, sid: current.sid,
        ackID: packet.ackID, transport: current.id, byteCount: bytes)
      if current.namespaceConnected { return [.deliver(event)] }
      guard current.early.count < settings.maximumBufferedEmits,
        current.earlyBytes + bytes <= settings.maximumEarlyEventBytes
      else {
        earlyDropped += 1
        return [.dropEarly(name)]
      }
      transport?.early.append(event)
      transport?.earlyBytes += bytes
      return []
    case .ack:
      guard let id = packet.ackID, ackDeadlines.removeValue(forKey: id) != nil else { return [] }
      confirm(through: id)
      return [.completeAck(id, packet.arguments)]
    }
  }
}
