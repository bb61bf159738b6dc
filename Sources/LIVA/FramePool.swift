/// A few pixel buffers reused round-robin for the frames handed to a ``RenderSurface``, one
/// more than the surface's ``RenderSurface/retainedFrames``; none for a surface that holds no
/// frame (it is handed the compositor's own buffer: ``passesThrough``).
///
/// **Ownership rule.** A ``RenderedFrame``'s `pixels` stay valid and unchanged for as long as
/// the surface holds the frame (Swift arrays are copy-on-write: the pool never writes into a
/// buffer someone else still holds). A surface that is done with a frame should drop it: the
/// pool then refills that buffer in place, without allocating. Holding more than
/// ``slots`` − 1 frames makes each new frame allocate, which ``allocations`` counts.
struct FramePool {
  /// How many buffers rotate (3 for a surface retaining 2 frames: one on screen, one being
  /// handed over, one being filled); 0 when the surface retains none.
  let slots: Int
  private var buffers: [[UInt8]]
  private var next = 0
  /// Buffers allocated since creation (the first fill of each slot included).
  private(set) var allocations = 0

  /// A pool for a surface that may hold `retainedFrames` frames when the next comes.
  init(retainedFrames: Int = 2) {
    slots = retainedFrames <= 0 ? 0 : retainedFrames + 1
    buffers = Array(repeating: [], count: slots)
  }

  /// Whether the surface gets the compositor's own buffer (it holds no frame): no copy, no
  /// spare buffer. Should it hold one after all, the compositor's next write copies first.
  var passesThrough: Bool { slots == 0 }

  /// Lets go of the pool's buffers (memory pressure): those no frame holds are freed; the
  /// next frames allocate again.
  mutating func releaseBuffers() {
    buffers = Array(repeating: [], count: slots)
  }

  /// A buffer holding a copy of `source`, from the next slot.
  mutating func take(copying source: UnsafeBufferPointer<UInt8>) -> [UInt8] {
    let slot = next
    next = (next + 1) % slots
    if buffers[slot].count != source.count {
      buffers[slot] = [UInt8](repeating: 0, count: source.count)
      allocations += 1
    }
    let before = buffers[slot].withUnsafeBufferPointer { $0.baseAddress }
    buffers[slot].withUnsafeMutableBufferPointer { destination in
      guard let target = destination.baseAddress, let from = source.baseAddress else { return }
      target.update(from: from, count: source.count)
    }
    // Still held by a surface: the write above made a copy (copy-on-write).
    if buffers[slot].withUnsafeBufferPointer({ $0.baseAddress }) != before { allocations += 1 }
    return buffers[slot]
  }
}
