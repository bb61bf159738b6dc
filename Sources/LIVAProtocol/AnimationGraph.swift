/// The base animations available right now, read as a graph: key poses are nodes and
/// animations are edges from the key pose they start at to the key pose they end at.
///
/// Every hand-coded rule of the first SDKs falls out of two questions this graph answers:
/// - ``next(after:toward:)``: what to play when an animation ends (the idle ping-pong
///   `idle_1_s_idle_1_e` ↔ `idle_1_e_idle_1_s` is the loop edge at the idle pose);
/// - ``path(from:to:)``: how to get from the current key pose to a target one
///   (`idle_1_e` → `talking_1_s` is `[idle_1_e_talking_1_s]`), the cheapest path when there is
///   no direct edge, or `nil` when the target cannot be reached (the caller cuts and counts a pop).
///
/// The graph is a value: rebuild it whenever the set of loaded animations changes.
/// All answers are deterministic: ties are broken by frame count, then by name.
public struct AnimationGraph: Sendable, Equatable {
  /// Frame count of each available animation (only counts above zero are kept).
  public let frameCounts: [AnimationName: Int]
  private let outgoing: [KeyPose: [AnimationName]]

  /// Builds the graph from the animations that can be drawn now and their frame counts.
  /// Animations with a frame count of zero or less are left out.
  public init(frameCounts: [AnimationName: Int]) {
    let kept = frameCounts.filter { $0.value > 0 }
    self.frameCounts = kept
    var outgoing: [KeyPose: [AnimationName]] = [:]
    for name in kept.keys { outgoing[name.from, default: []].append(name) }
    for key in outgoing.keys { outgoing[key]?.sort() }
    self.outgoing = outgoing
  }

  /// An empty graph.
  public static let empty = AnimationGraph(frameCounts: [:])

  /// Whether the animation is available.
  public func contains(_ name: AnimationName) -> Bool { frameCounts[name] != nil }

  /// The frame count of an available animation, or nil.
  public func frameCount(of name: AnimationName) -> Int? { frameCounts[name] }

  /// The available animations, sorted by name.
  public var animations: [AnimationName] { frameCounts.keys.sorted() }

  /// The animations that start at a key pose, sorted by name.
  public func animations(from key: KeyPose) -> [AnimationName] { outgoing[key] ?? [] }

  /// The loop animation that starts at `key` and stays within its pose
  /// (e.g. `idle_1_e_idle_1_s` at `idle_1_e`), if available.
  public func loop(at key: KeyPose) -> AnimationName? {
    animations(from: key).first { $0.isLoop }
  }

  /// What to play after `name` ends, to stay at or move toward `pose`.
  ///
  /// When `name` ends in `pose`, this is the loop edge there (the idle ping-pong); otherwise it
  /// is the first step of the cheapest path to any key pose of `pose`. Returns nil when neither
  /// exists (the caller restarts somewhere and counts a pop).
  public func next(after name: AnimationName, toward pose: Pose) -> AnimationName? {
    let end = name.to
    if end.pose == pose { return loop(at: end) }
    return path(from: end, toPose: pose)?.first
  }

  /// The cheapest sequence of animations from one key pose to another: `[]` when they are the
  /// same, nil when `target` cannot be reached. Cost is the number of animations, then the
  /// number of frames.
  public func path(from start: KeyPose, to target: KeyPose) -> [AnimationName]? {
    search(from: start) { $0 == target }
  }

  /// The cheapest sequence of animations from a key pose to either key pose of `pose`.
  public func path(from start: KeyPose, toPose pose: Pose) -> [AnimationName]? {
    search(from: start) { $0.pose == pose }
  }

  /// Dijkstra over key poses with the lexicographic cost (edges, frames). The graph has a few
  /// dozen edges at most, so a linear scan for the cheapest open node is fine.
  private func search(from start: KeyPose, isTarget: (KeyPose) -> Bool) -> [AnimationName]? {
    struct Cost: Comparable {
      var edges: Int
      var frames: Int
      static func < (lhs: Cost, rhs: Cost) -> Bool {
        (lhs.edges, lhs.frames) < (rhs.edges, rhs.frames)
      }
    }
    if isTarget(start) { return [] }
    var best: [KeyPose: (cost: Cost, via: AnimationName?)] = [
      start: (Cost(edges: 0, frames: 0), nil)
    ]
    var done: Set<KeyPose> = []
    while true {
      let open = best.filter { !done.contains($0.key) }
      guard
        let (node, entry) = open.min(by: {
          ($0.value.cost, $0.key) < ($1.value.cost, $1.key)
        })
      else { return nil }
      if isTarget(node) {
        var path: [AnimationName] = []
        var cursor = node
        while let edge = best[cursor]?.via {
          path.append(edge)
          cursor = edge.from
        }
        return path.reversed()
      }
      done.insert(node)
      for edge in animations(from: node) {
        let cost = Cost(
          edges: entry.cost.edges + 1, frames: entry.cost.frames + frameCounts[edge, default: 0])
        if let known = best[edge.to], known.cost <= cost { continue }
        best[edge.to] = (cost, edge)
      }
    }
  }
}
