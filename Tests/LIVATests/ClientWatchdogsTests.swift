import LIVAProtocol
import Testing

@testable import LIVA

@Suite("Client watchdogs: the manifest and downloads")
struct ClientWatchdogsTests {
  let idle = try! AnimationName(parsing: "idle_1_s_idle_1_e")
  let talk = try! AnimationName(parsing: "talking_1_s_talking_1_e")

  @Test(
    "a manifest that never comes is asked for again every 10 s, three asks in all, then given up"
  )
  func manifestAskedAgain() {
    var dogs = ClientWatchdogs()
    dogs.connected(at: 0)
    #expect(dogs.tick(now: 9.9).isEmpty)
    #expect(dogs.tick(now: 10) == [.askManifest(attempt: 2)])
    #expect(dogs.tick(now: 19.9).isEmpty)
    #expect(dogs.tick(now: 20) == [.askManifest(attempt: 3)])
    #expect(dogs.tick(now: 30) == [.manifestGivenUp(asks: 3)])
    #expect(!dogs.awaitingManifest)
    #expect(dogs.tick(now: 100).isEmpty)
    // The next connection asks again.
    dogs.connected(at: 200)
    #expect(dogs.tick(now: 210) == [.askManifest(attempt: 2)])
  }

  @Test("a manifest that comes ends its wait")
  func manifestReceived() {
    var dogs = ClientWatchdogs()
    dogs.connected(at: 0)
    dogs.manifestReceived()
    #expect(dogs.tick(now: 60).isEmpty)
  }

  @Test("a connection before the first tick is timed from the first tick")
  func connectedBeforeTicks() {
    var dogs = ClientWatchdogs()
    dogs.connected(at: nil)
    #expect(dogs.tick(now: 50).isEmpty)
    #expect(dogs.tick(now: 60) == [.askManifest(attempt: 2)])
  }

  @Test("a download whose events stop fails 15 s after its last one; one that keeps going does not")
  func downloadStalls() {
    var dogs = ClientWatchdogs()
    dogs.connected(at: 0)
    dogs.manifestReceived()
    dogs.downloadActive(idle, at: 1)
    dogs.downloadActive(talk, at: 1)
    for second in 2...30 {
      dogs.downloadActive(idle, at: Double(second))  // a frame a second
      let actions = dogs.tick(now: Double(second))
      #expect(actions == (second == 16 ? [.downloadStalled(talk)] : []), "at \(second)")
    }
    dogs.downloadEnded(idle)
    #expect(dogs.tick(now: 100).isEmpty)
  }

  @Test("a lost connection ends every wait; the next starts afresh")
  func disconnected() {
    var dogs = ClientWatchdogs()
    dogs.connected(at: 0)
    dogs.downloadActive(idle, at: 0)
    dogs.disconnected()
    #expect(dogs.tick(now: 100).isEmpty)
    dogs.connected(at: 100)
    dogs.manifestReceived()
    #expect(dogs.tick(now: 200).isEmpty)
  }
}
