import LIVAEngine
import LIVAProtocol
import SocketIO
import Testing

@testable import LIVA

/// The client's decisions on the display clock, without a socket or a player: connections and
/// the inputs of replaced ones, the manifest's and downloads' watchdogs, retries, and the texts
/// waiting for their answer.
@Suite("Client core: the client's decisions on virtual time")
struct ClientCoreTests {
  let idle = try! AnimationName(parsing: "idle_1_s_idle_1_e")
  let talk = try! AnimationName(parsing: "talking_1_s_talking_1_e")

  /// A core connected (connection 1, socket id `a`) at display time 0.
  func connected() -> ClientCore {
    var settings = ClientCore.Settings()
    settings.agentID = "7"
    var core = ClientCore(settings: settings)
    _ = core.tick(now: 0)
    _ = core.connect()
    _ = core.status(.connecting, connection: 1, idleAvailable: false)
    _ = core.status(.connected(sid: "a"), connection: 1, idleAvailable: false)
    return core
  }

  /// The emits among `actions`, as event names with the animation asked for.
  func emits(_ actions: [ClientCore.Action]) -> [String] {
    actions.compactMap { action in
      guard case .emit(let event) = action else { return nil }
      if case .string(let name)? = event.payload["animationType"] { return "request \(name)" }
      return event.name
    }
  }

  func manifest(_ names: AnimationName...) -> [AnimationName: BaseAnimationInfo] {
    Dictionary(uniqueKeysWithValues: names.map { ($0, BaseAnimationInfo(frameCount: 2)) })
  }

  @Test(
    "connecting asks for the manifest; one that never comes is asked for again every 10 s, three asks in all"
  )
  func manifestAskedAgain() {
    var core = ClientCore()
    _ = core.connect()
    let actions = core.status(.connected(sid: "a"), connection: 1, idleAvailable: false)
    #expect(emits(actions) == ["request_base_animations_manifest"])
    #expect(actions.contains(.publish(.connected)))
    #expect(core.pendingDownloads == 1)
    // Connected before the first tick: timed from it.
    #expect(emits(core.tick(now: 0)).isEmpty)
    #expect(emits(core.tick(now: 9.9)).isEmpty)
    #expect(emits(core.tick(now: 10)) == ["request_base_animations_manifest"])
    #expect(emits(core.tick(now: 20)) == ["request_base_animations_manifest"])
    let givenUp = core.tick(now: 30)
    #expect(emits(givenUp).isEmpty)
    #expect(
      givenUp.contains(
        .event(.error(LIVAClientError(.timeout, "the manifest did not come after 3 asks")))))
    #expect(!core.awaitingManifest && core.pendingDownloads == 0)
    #expect(core.tick(now: 100).isEmpty)
  }

  @Test(
    "the manifest asks for what the cache lacks; a download whose events stop fails after 15 s and is asked for again after the policy's wait"
  )
  func downloadStallsAndRetries() {
    var core = connected()
    let asked = core.manifestReceived(
      manifest(idle, talk), missing: [idle, talk], connection: 1, idleAvailable: false)
    #expect(emits(asked) == ["request \(idle)", "request \(talk)"])
    #expect(core.pendingDownloads == 2)
    #expect(core.downloadBegins(idle, connection: 1).accepted)
    for second in 1...15 {
      let taken = core.downloadActive(idle, connection: 1)  // a frame a second
      #expect(taken)
      let actions = core.tick(now: Double(second))
      if second < 15 {
        #expect(actions.isEmpty, "at \(second)")
      } else {
        #expect(actions.contains(.abandonDownload(talk)))
        #expect(!actions.contains(.abandonDownload(idle)))
      }
    }
    // Waiting 1 s (the policy's first wait), still pending, then asked for again.
    #expect(core.pendingDownloads == 2 && !core.isDownloading(talk))
    #expect(emits(core.tick(now: 15.9)).isEmpty)
    #expect(emits(core.tick(now: 16)) == ["request \(talk)"])
    #expect(core.isDownloading(talk))
    // Finished: nothing more is pending for it.
    #expect(core.downloadEnds(idle, connection: 1) == "")
    _ = core.downloadFinished(idle, error: nil, idleAvailable: true)
    #expect(core.state == .ready)
    #expect(core.pendingDownloads == 1)
  }

  @Test(
    "a link delivering bytes is reported to the player once a tick it moved, and keeps a download whose next event is on its way, up to 60 s"
  )
  func slowLink() {
    var core = connected()
    _ = core.manifestReceived(manifest(talk), missing: [talk], connection: 1, idleAvailable: false)
    #expect(core.downloadBegins(talk, connection: 1).accepted)
    // Bytes move every 0.1 s, and no event of the download comes (one large event on the way).
    var bytes = 0
    var reported = 0
    var abandoned: Double?
    for tenth in 1...700 {
      let now = Double(tenth) / 10
      bytes += 2000
      let actions = core.tick(now: now, linkBytes: bytes)
      reported += actions.filter { $0 == .linkDelivered }.count
      if abandoned == nil, actions.contains(.abandonDownload(talk)) { abandoned = now }
    }
    #expect(reported == 700)
    #expect(abandoned == 60)
    // The same count again is no delivery; a new transport's count (lower) is none either,
    // its rise is.
    #expect(!core.tick(now: 70.1, linkBytes: bytes).contains(.linkDelivered))
    #expect(!core.tick(now: 70.2, linkBytes: 10).contains(.linkDelivered))
    #expect(core.tick(now: 70.3, linkBytes: 20).contains(.linkDelivered))
  }

  @Test("a failed download is retried three times, then given up until the next connection")
  func retriesGiveUp() {
    var core = connected()
    _ = core.manifestReceived(manifest(talk), missing: [talk], connection: 1, idleAvailable: true)
    var asks = 1
    var now = 0.0
    for _ in 0..<10 {
      if core.isDownloading(talk) {
        _ = core.downloadEnds(talk, connection: 1)
        _ = core.downloadFinished(talk, error: "incomplete", idleAvailable: true)
      }
      now += 10
      asks += emits(core.tick(now: now)).count
    }
    #expect(asks == 4)
    #expect(core.pendingDownloads == 0)
  }

  @Test("inputs of a replaced connection change nothing: its status, manifest, download events")
  func replacedConnection() {
    var core = connected()
    let (second, _) = core.connect()
    #expect(second == 2)
    #expect(
      core.status(.disconnected(.transportClose), connection: 1, idleAvailable: false).isEmpty)
    #expect(
      core.manifestReceived(manifest(talk), missing: [talk], connection: 1, idleAvailable: false)
        .isEmpty)
    #expect(core.downloads.isEmpty)
    let (accepted, refused) = core.downloadBegins(talk, connection: 1)
    #expect(!accepted)
    #expect(refused.contains { if case .reject = $0 { true } else { false } })
    // The new one's manifest asks.
    _ = core.status(.connected(sid: "b"), connection: 2, idleAvailable: false)
    #expect(
      emits(
        core.manifestReceived(manifest(talk), missing: [talk], connection: 2, idleAvailable: false))
        == ["request \(talk)"])
    #expect(core.downloadEnds(talk, connection: 1) == nil)
    #expect(core.isDownloading(talk))
  }

  @Test("what was not asked for is not taken: a download's start, its frames, its end")
  func unrequested() {
    var core = connected()
    _ = core.manifestReceived(manifest(idle), missing: [], connection: 1, idleAvailable: true)
    #expect(!core.downloadBegins(talk, connection: 1).accepted)
    let taken = core.downloadActive(talk, connection: 1)
    #expect(!taken)
    // An end of no download is not finished (it used to fail, and then be retried: the
    // client asked for an animation nobody requested).
    #expect(core.downloadEnds(talk, connection: 1) == nil)
    #expect(core.downloads.isEmpty && core.pendingDownloads == 0)
  }

  @Test("a lost connection abandons what was staged and ends every wait; the next asks afresh")
  func lostConnection() {
    var core = connected()
    _ = core.manifestReceived(
      manifest(idle, talk), missing: [idle, talk], connection: 1, idleAvailable: false)
    _ = core.downloadEnds(talk, connection: 1)
    _ = core.downloadFinished(talk, error: "bad frame", idleAvailable: false)  // waits a retry
    let lost = core.status(.disconnected(.pingTimeout), connection: 1, idleAvailable: false)
    #expect(lost.contains(.connectionLost))
    #expect(lost.contains(.abandonDownload(idle)))
    #expect(!lost.contains(.abandonDownload(talk)))  // nothing staged any more
    #expect(core.pendingDownloads == 0)
    #expect(emits(core.tick(now: 100)).isEmpty)  // the retry went with the connection
    let again = core.status(.connected(sid: "b"), connection: 1, idleAvailable: false)
    #expect(again.contains(.connectionRestored))
    #expect(emits(again) == ["request_base_animations_manifest"])
    #expect(!core.isFromLostConnection(sid: "b") && core.isFromLostConnection(sid: "a"))
  }

  @Test(
    "texts wait for their answer: paired in order, given up on timeout, past 16, and on disconnect")
  func answers() {
    var core = connected()
    #expect(core.sent("hi").isEmpty)
    #expect(core.sent("how are you").isEmpty)
    let first = MessageID(1)
    core.messageQueued(first)
    #expect(core.speakingStarted(first).contains(.event(.speakingStarted(first, text: "hi"))))
    #expect(core.state == .speaking)
    #expect(
      core.speakingEnded(first, interrupted: false).contains(
        .event(.speakingEnded(first, text: "hi", interrupted: false))))
    // The second never gets speech: given up 30 s after it was sent.
    #expect(!core.tick(now: 29.9).contains(.event(.messageUnanswered(text: "how are you"))))
    #expect(core.tick(now: 30).contains(.event(.messageUnanswered(text: "how are you"))))
    for index in 0..<17 { _ = core.sent("t\(index)") }
    #expect(core.answers.waiting.count == 16)
    let gone = core.disconnect()
    #expect(
      gone.filter { if case .event(.messageUnanswered) = $0 { true } else { false } }.count == 16)
    #expect(gone.contains(.publish(.idle)))
    #expect(core.connection == nil)
    // The dropped connection's statuses count no more.
    #expect(core.status(.connected(sid: "z"), connection: 1, idleAvailable: true).isEmpty)
  }

  @Test("a message interrupted before its first frame ends its text")
  func droppedMessage() {
    var core = connected()
    _ = core.sent("hi")
    let message = MessageID(3)
    core.messageQueued(message)
    #expect(
      core.messageDropped(message) == [
        .event(.speakingEnded(message, text: "hi", interrupted: true))
      ])
    #expect(core.messageDropped(message).isEmpty)
  }

  // Found by ClientCoreFaultTests (a generated session of faults): events and statuses travel on
  // two streams, so a manifest can be read after the status that says the link dropped. It
  // asked for downloads then: emits buffered for the next connection, whose frames were then
  // refused as unrequested (the new connection's status ends what was in flight).
  @Test("a manifest read after the link dropped asks for nothing; the next connection asks")
  func manifestAfterDrop() {
    var core = connected()
    _ = core.status(.disconnected(.pingTimeout), connection: 1, idleAvailable: false)
    let late = core.manifestReceived(
      manifest(idle, talk), missing: [idle, talk], connection: 1, idleAvailable: false)
    #expect(emits(late).isEmpty)
    #expect(core.downloads.isEmpty && core.pendingDownloads == 0)
    #expect(!core.manifest.isEmpty)  // kept: what the player may draw
    let again = core.status(.connected(sid: "b"), connection: 1, idleAvailable: false)
    #expect(emits(again) == ["request_base_animations_manifest"])
  }
}
