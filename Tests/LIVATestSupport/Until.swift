import LIVAMedia

/// The one way a test waits for a condition: checks `condition` now and after every change
/// signalled on `feed` (a client's, player's or fake transport's ``ChangeFeed``: state,
/// downloads, events, inputs, decode workers), never by polling. `timeout` of real time is the
/// deadline, so no wait is unbounded: a wait for what never comes answers false then, and the
/// caller fails saying what it waited for (`try #require(await until(client.changes) { … },
/// "…")`; Swift Testing shows the condition's expression beside that message). Not for a
/// clock a test injects: such a test moves its clock itself.
package func until(
  _ feed: ChangeFeed, timeout: Duration = .seconds(30), _ condition: () -> Bool
) async -> Bool {
  await feed.wait(timeout: timeout, until: condition)
}

/// The same wait for state that no feed signals (an object released, a count another side
/// keeps): `condition` is checked now and every `interval` (a feed signalled on that beat),
/// false when `timeout` of real time passes first.
package func until(
  every interval: Duration, timeout: Duration = .seconds(10), _ condition: () -> Bool
) async -> Bool {
  let beat = ChangeFeed()
  let ticker = Task {
    while (try? await Task.sleep(for: interval)) != nil { beat.signal() }
  }
  defer { ticker.cancel() }
  return await until(beat, timeout: timeout, condition)
}
