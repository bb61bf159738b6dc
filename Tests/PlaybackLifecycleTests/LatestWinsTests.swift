import PlaybackLifecycle
import Testing

@Suite("LatestWins")
struct LatestWinsTests {
  @Test("a slow taker gets the newest value once; the ones in between are counted, not queued")
  func slowTaker() {
    var mailbox = LatestWins<Int>()
    let schedules = [mailbox.post(1), mailbox.post(2), mailbox.post(3)]
    #expect(schedules == [true, false, false])  // one delivery scheduled, not three
    let first = mailbox.take()
    #expect(first == 3)
    #expect(mailbox.replaced == 2)
    let second = mailbox.take()
    #expect(second == nil)  // nothing left: no backlog
    let again = mailbox.post(4)
    #expect(again)  // taken: the next value schedules again
    let third = mailbox.take()
    #expect(third == 4)
    #expect(mailbox.replaced == 2)
  }

  @Test(
    "producer and taker in any interleaving: deliveries never exceed posts, the last value always arrives"
  )
  func interleavings() {
    // Every sequence of 10 steps (post or run a scheduled delivery).
    for pattern in 0..<(1 << 10) {
      var mailbox = LatestWins<Int>()
      var pendingDeliveries = 0
      var delivered: [Int] = []
      var posted = 0
      for step in 0..<10 {
        if pattern & (1 << step) != 0 {
          posted += 1
          if mailbox.post(posted) { pendingDeliveries += 1 }
        } else if pendingDeliveries > 0 {
          pendingDeliveries -= 1
          if let value = mailbox.take() { delivered.append(value) }
        }
        #expect(pendingDeliveries <= 1, "pattern \(pattern)")
      }
      while pendingDeliveries > 0 {
        pendingDeliveries -= 1
        if let value = mailbox.take() { delivered.append(value) }
      }
      #expect(delivered == delivered.sorted() && Set(delivered).count == delivered.count)
      #expect(delivered.last == (posted > 0 ? posted : nil), "pattern \(pattern)")
      #expect(delivered.count + mailbox.replaced == posted, "pattern \(pattern)")
    }
  }
}
