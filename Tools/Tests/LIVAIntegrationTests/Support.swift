import LIVAMedia

/// Waits until `condition` holds, checking it now and after every change signalled on `feed`
/// (the client's ``ChangeFeed``), never by polling; false when `timeout` of real time passes.
func until(
  _ feed: ChangeFeed, timeout: Duration = .seconds(30), _ condition: () -> Bool
) async -> Bool {
  await feed.wait(timeout: timeout, until: condition)
}
