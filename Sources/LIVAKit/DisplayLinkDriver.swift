#if canImport(UIKit) && canImport(QuartzCore)
  import Foundation
  import LIVA
  import LIVAPlatform
  import Locking
  import QuartzCore

  /// A ``LIVA/DisplayLink`` over `CADisplayLink`, ticking on a thread of its own (compositing
  /// never runs on the main thread). Ticks carry `targetTimestamp`: the time the frame will be
  /// on screen, on the `CACurrentMediaTime` clock the audio output maps its samples to.
  ///
  /// The link holds its target strongly, so it targets a small proxy that holds the driver
  /// weakly: dropping the driver stops the link.
  public final class DisplayLinkDriver: DisplayLink, @unchecked Sendable {
    // @unchecked: `link`, `thread` and `onTick` are touched under `lock` only, or on the
    // link's own thread after `start` set them.
    private let lock = Locked()
    private var link: CADisplayLink?
    private var thread: Thread?
    private var onTick: (@Sendable (Double) -> Void)?
    /// The frame rates to ask the display for (see ``LIVAPlatform/FramePacing``).
    public let range: FrameRateRange

    /// A driver asking the display for `range` (default: LIVA's 30 fps speech, 60 Hz ticks).
    public init(
      range: FrameRateRange = FramePacing.preferredRange(contentRate: 30, displayMaximum: 60)
    ) {
      self.range = range
    }

    /// Starts the link on a new thread's run loop.
    public func start(_ onTick: @escaping @Sendable (Double) -> Void) {
      stop()
      let proxy = Proxy(self)
      let link = CADisplayLink(target: proxy, selector: #selector(Proxy.tick(_:)))
      link.preferredFrameRateRange = CAFrameRateRange(
        minimum: Float(range.minimum), maximum: Float(range.maximum),
        preferred: Float(range.preferred))
      // The link is only touched by that thread from here on (and by `stop`, which
      // invalidates it: documented as safe from any thread).
      nonisolated(unsafe) let threadLink = link
      let thread = Thread {
        threadLink.add(to: .current, forMode: .common)
        // `run(mode:before:)` returns after each source it handled (a tick, or `stop`'s wake-up
        // call below), so a cancelled thread ends; `run(until:)` would never return here. It
        // returns false at once when the run loop has no source left (the link invalidated by
        // its proxy or by deinit): the thread ends then too, instead of spinning.
        while !Thread.current.isCancelled,
          RunLoop.current.run(mode: .default, before: .distantFuture)
        {}
      }
      thread.name = "LIVA display link"
      thread.qualityOfService = .userInteractive
      lock.withLock {
        self.onTick = onTick
        self.link = link
        self.thread = thread
      }
      thread.start()
    }

    /// Stops the link; no tick starts after this returns.
    public func stop() {
      let (link, thread) = lock.withLock { () -> (CADisplayLink?, Thread?) in
        defer {
          self.link = nil
          self.thread = nil
          self.onTick = nil
        }
        return (self.link, self.thread)
      }
      // Cancelled first, so the loop ends as soon as its run loop returns; then the link goes
      // and a no-op performed on the thread wakes it (invalidating alone does not).
      thread?.cancel()
      link?.invalidate()
      if let thread {
        Waker.shared.perform(
          #selector(Waker.wake), on: thread, with: nil, waitUntilDone: false)
      }
    }

    fileprivate func tick(_ link: CADisplayLink) {
      let handler = lock.withLock { onTick }
      handler?(link.targetTimestamp)
    }

    deinit { stop() }

    /// Wakes the link's thread from its run loop (a selector performed on it is a source).
    private final class Waker: NSObject, @unchecked Sendable {
      // @unchecked: no state.
      static let shared = Waker()
      @objc func wake() {}
    }

    /// The link's target: holds the driver weakly.
    private final class Proxy: NSObject {
      weak var driver: DisplayLinkDriver?
      init(_ driver: DisplayLinkDriver) { self.driver = driver }
      @objc func tick(_ link: CADisplayLink) {
        guard let driver else {
          // The driver went without stop(): its thread ends with the link.
          Thread.current.cancel()
          return link.invalidate()
        }
        driver.tick(link)
      }
    }
  }
#endif
