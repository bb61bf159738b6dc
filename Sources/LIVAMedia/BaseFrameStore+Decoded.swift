import Foundation
import LIVAProtocol

// BaseFrameStore: decoded frames (the first frame kept as a poster), preloading and prefetching.
extension BaseFrameStore {
  /// Whether frame `index` of `animation` is the one kept decoded on disk: frame 0 of the idle
  /// loop, the first frame of every session. Decoding it (a 1280×768 PNG takes ~15–20 ms on a
  /// small CPU) was most of the time to first frame; reading it raw takes ~1–2 ms.
  static func hasPoster(_ animation: AnimationName, _ index: Int) -> Bool {
    animation == .idleForward && index == 0
  }

  func posterURL(_ animation: AnimationName, _ version: String) -> URL {
    directory(animation).appendingPathComponent(version, isDirectory: true)
      .appendingPathComponent("frame_0000.rgba", isDirectory: false)
  }

  /// The raw layout: "LIVARGBA", width and height (u32 little-endian), then the pixels.
  static let posterMagic = Array("LIVARGBA".utf8)

  /// The kept frame, or nil when there is none or it is damaged (any size but its own). Read
  /// straight into the frame's buffer: one copy from the page cache.
  static func readPoster(_ url: URL) -> RGBAImage? {
    let descriptor = open(url.path, O_RDONLY)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    func readFully(_ pointer: UnsafeMutableRawPointer, _ count: Int) -> Bool {
      var done = 0
      while done < count {
        let n = read(descriptor, pointer + done, count - done)
        if n < 0, errno == EINTR { continue }
        guard n > 0 else { return false }
        done += n
      }
      return true
    }
    var header = [UInt8](repeating: 0, count: 16)
    var status = stat()
    guard header.withUnsafeMutableBytes({ readFully($0.baseAddress!, 16) }),
      Array(header[0..<8]) == posterMagic, fstat(descriptor, &status) == 0
    else { return nil }
    func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(header[at + $1]) << (8 * $1) } }
    let (width, height) = (u32(8), u32(12))
    guard width > 0, height > 0, width <= 1 << 15, height <= 1 << 15,
      Int(status.st_size) == 16 + width * height * 4
    else { return nil }
    var complete = false
    let pixels = [UInt8](unsafeUninitializedCapacity: width * height * 4) { buffer, count in
      complete = readFully(buffer.baseAddress!, buffer.count)
      count = complete ? buffer.count : 0
    }
    guard complete else { return nil }
    return try? RGBAImage(width: width, height: height, pixels: pixels)
  }

  /// Keeps `image` decoded at `url`, atomically, and counts its bytes on disk with its
  /// version's (while that version is still the current one); best effort (a failure leaves
  /// the PNG path).
  func keepPoster(
    _ image: RGBAImage, at url: URL, animation: AnimationName, version id: Int
  ) {
    var bytes = Self.posterMagic
    for value in [image.width, image.height] {
      bytes += (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
    bytes += image.pixels
    let previous = Self.fileSize(url)
    guard (try? Self.writeAtomically(Data(bytes), to: url)) != nil else { return }
    state.withLock { state in
      guard state.animations[animation]?.current?.id == id else { return }
      state.animations[animation]?.current?.bytes += bytes.count - previous
      state.statistics.diskBytes += bytes.count - previous
    }
  }

  /// Frame `index` of `animation` if it is decoded in memory now; never touches the disk and
  /// never decodes, so the render path may call it. A nil is a planned hold: call
  /// ``preload(_:frames:)`` (or ``frame(_:of:)``) from a worker to bring frames in.
  public func decodedFrame(_ index: Int, of animation: AnimationName) -> RGBAImage? {
    guard let id = state.withLock({ $0.animations[animation]?.current?.id }) else { return nil }
    return decoded.image(for: Self.key(animation, id, index))
  }

  /// Frame `index` of `animation` from memory, or, when it is the frame kept raw on disk
  /// (idle frame 0), read now: ~1–2 ms at 1280×768 and no decoding. For a session's first
  /// frame, when nothing is on screen yet to hold instead; never decodes, so any other frame
  /// not in memory is nil as with ``decodedFrame(_:of:)``.
  public func decodedOrKeptFrame(_ index: Int, of animation: AnimationName) -> RGBAImage? {
    if let image = decodedFrame(index, of: animation) { return image }
    guard
      let (id, directory) = state.withLock({ state in
        state.animations[animation]?.current.map { ($0.id, $0.directory) }
      })
    else { return nil }
    return keptFrame(index, of: animation, version: id, in: directory)
  }

  /// Frame `index` read from its raw copy on disk into memory, when it is the kept frame and
  /// the copy is whole; nil otherwise (nothing decoded).
  func keptFrame(
    _ index: Int, of animation: AnimationName, version id: Int, in directory: String
  ) -> RGBAImage? {
    guard Self.hasPoster(animation, index),
      let image = Self.readPoster(posterURL(animation, directory))
    else { return nil }
    decoded.insert(image, for: Self.key(animation, id, index))
    state.withLock { $0.statistics.diskLoads += 1 }
    return image
  }

  /// The key of a version's decoded frame: a frame of a replaced version is never found as
  /// the new one's, even when its decode finishes after the swap.
  static func key(_ animation: AnimationName, _ version: Int, _ index: Int) -> DecodedFrames.Key {
    DecodedFrames.Key(frame: BaseFrameRef(animation: animation, index: index), version: version)
  }

  /// Reads and decodes frames of a cached animation into memory, on the calling thread (a
  /// worker, never the render thread). Frames beyond ``memoryByteLimit`` push out the least
  /// recently used ones, so preload what the next seconds of playback need.
  public func preload(_ animation: AnimationName, frames: Range<Int>? = nil)
    throws(LIVAMediaError)
  {
    guard let count = cachedEntry(animation)?.frameCount else {
      throw LIVAMediaError(
        .invalidArgument, "\(animation) is not cached", source: animation.rawValue)
    }
    let range = (frames ?? 0..<count).clamped(to: 0..<count)
    for index in range { _ = try frame(index, of: animation) }
  }

  /// Brings a window of frames into memory on a worker of `scheduler`, as the store's own
  /// ``BaseFramePrefetcher`` (a player has one of its own): see
  /// ``BaseFramePrefetcher/request(_:)``. Returns at once.
  public func prefetch(_ frames: [BaseFrameRef], scheduler: any DecodeScheduler) {
    request(frames, owner: 0, scheduler: scheduler)
  }

  /// Whether no prefetch is pending or running.
  public var isPrefetchIdle: Bool {
    prefetching.withLock { $0.running.isEmpty && $0.pending.isEmpty }
  }

  /// Whether `owner` has no window pending or being brought in.
  func isPrefetchIdle(owner: Int) -> Bool {
    prefetching.withLock { !$0.running.contains(owner) && $0.pending[owner] == nil }
  }

  /// Sets `owner`'s window and starts its worker unless it is running; `onIdle` runs on the
  /// worker each time it has brought every window asked for in. A window with a `step` no
  /// later than one `owner` asked for before is ignored.
  func request(
    _ frames: [BaseFrameRef], owner: Int, step: Int? = nil, scheduler: any DecodeScheduler,
    onIdle: (@Sendable () -> Void)? = nil
  ) {
    let start = prefetching.withLock { work -> Bool? in
      if let step {
        if let last = work.steps[owner], step <= last { return nil }
        work.steps[owner] = step
      }
      work.pending[owner] = frames
      return work.running.insert(owner).inserted
    }
    guard let start else { return }
    if start {
      scheduler.schedule {
        self.drainPrefetch(owner: owner)
        onIdle?()
      }
    } else if scheduler.runsOnSubmittingThread {
      // The owner's worker runs on another thread and takes this window next: an inline
      // request still returns with its window in memory (a tick drawing right after it must
      // not find its frame missing).
      prefetchStopped.lock()
      while !isPrefetchIdle(owner: owner) { prefetchStopped.wait() }
      prefetchStopped.unlock()
    }
  }

  /// Forgets `owner`'s window: its frames stay only while another window holds them.
  func endWindow(owner: Int) {
    prefetching.withLock { work in
      work.pending[owner] = nil
      work.windows[owner] = nil
      work.steps[owner] = nil
    }
  }

  /// Brings `owner`'s newest window in, until it asks for no other.
  func drainPrefetch(owner: Int) {
    while true {
      let next = prefetching.withLock { work -> (window: [BaseFrameRef], keep: [BaseFrameRef])? in
        guard let window = work.pending.removeValue(forKey: owner) else {
          work.running.remove(owner)
          return nil
        }
        work.windows[owner] = window
        // Every window, and every window asked for and not taken yet, stays.
        return (window, work.windows.values.flatMap { $0 } + work.pending.values.flatMap { $0 })
      }
      guard let (window, keep) = next else {
        prefetchStopped.lock()
        prefetchStopped.broadcast()
        prefetchStopped.unlock()
        return
      }
      // What no window holds any more goes first: memory holds the windows and no more.
      purgeMemory(keeping: keep)
      // Bytes of this window in memory so far, and the size of one frame once known: what
      // would not fit is not decoded (it would push out the window's own, more urgent frames).
      var bytes = 0
      var frameSize = 0
      for wanted in window {
        let (name, index) = (wanted.animation, wanted.index)
        if let image = decodedFrame(index, of: name) {
          bytes += image.byteCount
          frameSize = max(frameSize, image.byteCount)
          continue
        }
        if frameSize > 0, bytes + frameSize > decoded.byteLimit { break }
        if let image = try? frame(index, of: name) {
          bytes += image.byteCount
          frameSize = max(frameSize, image.byteCount)
        }
        // A newer window of the same owner replaces this one: go on with it at once.
        if prefetching.withLock({ $0.pending[owner] != nil }) { break }
      }
      for wanted in window.reversed() { _ = decodedFrame(wanted.index, of: wanted.animation) }
    }
  }

  /// Frame 0 of the idle loop (`idle_1_s_idle_1_e`) when cached: the instant first frame.
  public func idleFirstFrame() -> RGBAImage? {
    try? frame(0, of: .idleForward)
  }

  /// Current statistics.
  public var statistics: Statistics {
    var statistics = state.withLock { $0.statistics }
    statistics.memoryBytes = decoded.bytes
    return statistics
  }

  /// Drops every decoded frame held in memory (memory pressure); the disk is untouched.
  public func purgeMemory() {
    decoded.removeAll()
  }

  /// Drops every decoded frame except `frames` (memory pressure: keep what is on screen and
  /// idle frame 0, or the window ahead); the disk is untouched.
  public func purgeMemory(keeping frames: [BaseFrameRef]) {
    let ids = state.withLock { state in state.animations.compactMapValues { $0.current?.id } }
    decoded.removeAll(
      keeping: Set(
        frames.compactMap { frame in
          ids[frame.animation].map { Self.key(frame.animation, $0, frame.index) }
        }))
  }
}
