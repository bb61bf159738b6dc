import CLIVAHeap

/// The C heap, measured, for tests that bound what hostile input may make the code hold.
public enum Heap {
  /// Whether the C library says what its heap holds (glibc 2.33 or newer: `mallinfo2`). Where
  /// it does, ``allocatedBytes()`` and the growth of ``growth(attempts:budget:_:)`` are never
  /// nil, and a test bounding memory must require the figure instead of skipping its bound;
  /// elsewhere (Darwin, musl, older glibc) they are always nil.
  public static let measures = liva_heap_measures() != 0

  /// Bytes the C heap holds now, over every arena (glibc's `mallinfo2`: in-use arena bytes
  /// plus separately mapped chunks); nil where the C library does not say.
  public static func allocatedBytes() -> Int? {
    let bytes = liva_heap_allocated_bytes()
    return bytes < 0 ? nil : Int(bytes)
  }

  /// Runs `body` up to `attempts` times and returns its last result with the least growth of
  /// the heap seen while a result was still held (nil growth where the C library does not say).
  /// Other tests allocate at the same time, and their noise only ever adds: the least of a few
  /// runs is the body's own. With a `budget`, the runs stop at the first that grew less than
  /// it: one quiet run proves the bound, and a noisy neighbour only costs another run.
  public static func growth<R>(
    attempts: Int = 3, budget: Int? = nil, _ body: () throws -> R
  ) rethrows -> (R, bytes: Int?) {
    var least: Int?
    var known = true
    var result: R?
    for _ in 0..<max(1, attempts) {
      result = nil  // the previous run's result is not counted in this one
      let before = allocatedBytes()
      let held = try body()
      let after = allocatedBytes()
      result = held
      guard let before, let after else {
        known = false
        continue
      }
      least = min(least ?? .max, max(0, after - before))
      if let budget, let least, least < budget { break }
    }
    return (result!, known ? least : nil)
  }
}
