import Locking
import NIOCore

/// The events a ``SocketIOClient`` received and the application has not taken yet, bounded in
/// bytes: once they hold ``SocketIOClientConfiguration/maximumQueuedEventBytes``, the client
/// stops reading the socket until the application takes some (the server's writes then wait in
/// TCP's flow control, not in this process's memory). Iterate it from one task.
public struct SocketIOEvents: AsyncSequence, Sendable {
  /// Each element is one event.
  public typealias Element = SocketIOEvent

  let queue: SocketIOEventQueue

  /// The iterator: each `next()` takes the oldest event, waiting for one; nil once the client
  /// is gone or the iterating task is cancelled.
  public struct AsyncIterator: AsyncIteratorProtocol {
    let queue: SocketIOEventQueue

    /// The oldest event not taken yet, waiting for one.
    public mutating func next() async -> SocketIOEvent? { await queue.take() }
  }

  /// An iterator over the events.
  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: queue) }
}

/// The queue under ``SocketIOEvents``: the client puts (never waiting: one packet's events go
/// in whole) and then waits for room before it reads the next packet; the application takes.
final class SocketIOEventQueue: Sendable {
  private struct State {
    var items = CircularBuffer<(event: SocketIOEvent, bytes: Int)>()
    var bytes = 0
    var finished = false
    var taker: CheckedContinuation<SocketIOEvent?, Never>?
    var roomWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
    var nextWaiter = 0

    mutating func pop() -> SocketIOEvent? {
      guard let (event, size) = items.popFirst() else { return nil }
      bytes -= size
      return event
    }
  }

  /// Bytes of events held before the reader waits for room.
  let budget: Int
  private let state = Locked(State())

  init(budget: Int) { self.budget = max(1, budget) }

  /// Bytes of the events held (as they came on the wire).
  var bytes: Int { state.withLock { $0.bytes } }

  /// Whether the queue holds less than its budget: the reader may go on.
  var hasRoom: Bool { state.withLock { $0.bytes < budget || $0.finished } }

  /// Adds an event of `bytes` wire bytes (dropped once the queue is finished).
  func put(_ event: SocketIOEvent, bytes: Int) {
    let taker = state.withLock { state -> CheckedContinuation<SocketIOEvent?, Never>? in
      guard !state.finished else { return nil }
      if let taker = state.taker {
        state.taker = nil
        return taker
      }
      state.items.append((event, bytes))
      state.bytes += bytes
      return nil
    }
    taker?.resume(returning: event)
  }

  /// Takes the oldest event, waiting for one; nil once finished or cancelled.
  func take() async -> SocketIOEvent? {
    let (event, room) = state.withLock { state in
      let event = state.pop()
      return (event, event != nil ? wakeable(&state) : [])
    }
    for waiter in room { waiter.resume() }
    if let event { return event }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let answer = state.withLock { state -> SocketIOEvent?? in
          if let event = state.pop() { return .some(event) }
          if state.finished || Task.isCancelled { return .some(nil) }
          state.taker = continuation
          return .none
        }
        if let answer { continuation.resume(returning: answer) }
      }
    } onCancel: {
      state.withLock { state in
        defer { state.taker = nil }
        return state.taker
      }?.resume(returning: nil)
    }
  }

  /// Waits until the queue has room (or is finished, or the waiting task is cancelled).
  func waitForRoom() async {
    let id = state.withLock { state in
      defer { state.nextWaiter += 1 }
      return state.nextWaiter
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state -> Bool in
          if state.bytes < budget || state.finished || Task.isCancelled { return true }
          state.roomWaiters[id] = continuation
          return false
        }
        if ready { continuation.resume() }
      }
    } onCancel: {
      state.withLock { $0.roomWaiters.removeValue(forKey: id) }?.resume()
    }
  }

  /// Ends the queue: the taker gets nil once the events held are taken, later events are
  /// dropped, and nothing waits for room any more.
  func finish() {
    let (taker, waiters) = state.withLock { state in
      state.finished = true
      let taker = state.items.isEmpty ? state.taker : nil
      if taker != nil { state.taker = nil }
      let waiters = Array(state.roomWaiters.values)
      state.roomWaiters = [:]
      return (taker, waiters)
    }
    taker?.resume(returning: nil)
    for waiter in waiters { waiter.resume() }
  }

  /// The waiters for room to wake, once the bytes are under the budget.
  private func wakeable(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
    guard state.bytes < budget, !state.roomWaiters.isEmpty else { return [] }
    defer { state.roomWaiters = [:] }
    return Array(state.roomWaiters.values)
  }
}

extension SocketIOEvents {
  /// Feeds a ``SocketIOEvents`` from outside a ``SocketIOClient``: another transport with the
  /// same consumer (a relay, or a test double that plays a server).
  public struct Continuation: Sendable {
    let queue: SocketIOEventQueue

    /// Adds `event`, counted as `bytes` against the budget. Never waits; dropped once
    /// finished.
    public func yield(_ event: SocketIOEvent, bytes: Int = 0) { queue.put(event, bytes: bytes) }

    /// Whether the events held are under the budget (a producer that can wait should, while
    /// not).
    public var hasRoom: Bool { queue.hasRoom }

    /// Ends the sequence once the events held are taken.
    public func finish() { queue.finish() }
  }

  /// A sequence of events and what feeds it, its consumer's backlog bounded at `budget` bytes
  /// (see ``Continuation/hasRoom``).
  public static func makeStream(budget: Int = 32 << 20) -> (
    events: SocketIOEvents, continuation: Continuation
  ) {
    let queue = SocketIOEventQueue(budget: budget)
    return (SocketIOEvents(queue: queue), Continuation(queue: queue))
  }
}
