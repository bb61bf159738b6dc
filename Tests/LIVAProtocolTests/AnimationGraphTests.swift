import LIVAProtocol
import Testing

/// The production set of docs/Protocol.md, with small frame counts.
let productionSet: [String: Int] = [
  "idle_1_s_idle_1_e": 30, "idle_1_e_idle_1_s": 30,
  "idle_1_e_talking_1_s": 8, "talking_1_s_talking_1_e": 40, "talking_1_e_idle_1_s": 8,
  "talking_1_e_talking_1_s": 40,
  "idle_1_e_talking_2_s": 8, "talking_2_s_talking_2_e": 40, "talking_2_e_idle_1_s": 8,
  "talking_2_e_talking_2_s": 40,
  "talking_1_e_talking_2_s": 6, "talking_2_e_talking_1_s": 6,
  "idle_1_e_hi_1_s": 5, "hi_1_s_hi_1_e": 20, "hi_1_e_idle_1_s": 5,
]

func graph(_ counts: [String: Int]) throws -> AnimationGraph {
  var parsed: [AnimationName: Int] = [:]
  for (name, count) in counts { parsed[try AnimationName(parsing: name)] = count }
  return AnimationGraph(frameCounts: parsed)
}

func name(_ text: String) -> AnimationName {
  try! AnimationName(parsing: text)
}

func keyPose(_ text: String) -> KeyPose {
  let parts = text.split(separator: "_")
  return KeyPose(
    Pose(state: parts.dropLast(2).joined(separator: "_"), number: Int(parts[parts.count - 2])!),
    parts.last == "s" ? .start : .end)
}

@Suite("Animation graph")
struct AnimationGraphTests {
  @Test("the idle ping-pong falls out of the loop edges")
  func idlePingPong() throws {
    let g = try graph(productionSet)
    #expect(g.next(after: name("idle_1_s_idle_1_e"), toward: .idle) == name("idle_1_e_idle_1_s"))
    #expect(g.next(after: name("idle_1_e_idle_1_s"), toward: .idle) == name("idle_1_s_idle_1_e"))
  }

  @Test("after a transition comes the loop of the pose it arrived at, or the way home")
  func nextAfterTransition() throws {
    let g = try graph(productionSet)
    let talking = Pose(state: "talking", number: 1)
    #expect(
      g.next(after: name("idle_1_e_talking_1_s"), toward: talking)
        == name("talking_1_s_talking_1_e"))
    #expect(
      g.next(after: name("talking_1_s_talking_1_e"), toward: talking)
        == name("talking_1_e_talking_1_s"))
    #expect(
      g.next(after: name("talking_1_s_talking_1_e"), toward: .idle) == name("talking_1_e_idle_1_s"))
    #expect(g.next(after: name("hi_1_s_hi_1_e"), toward: .idle) == name("hi_1_e_idle_1_s"))
  }

  static let pathCases: [(String, String, [String]?)] = [
    ("idle_1_e", "talking_1_s", ["idle_1_e_talking_1_s"]),
    ("talking_1_e", "idle_1_s", ["talking_1_e_idle_1_s"]),
    ("talking_1_e", "talking_2_s", ["talking_1_e_talking_2_s"]),
    ("idle_1_s", "talking_1_s", ["idle_1_s_idle_1_e", "idle_1_e_talking_1_s"]),
    ("idle_1_e", "idle_1_e", []),
    ("hi_1_e", "talking_2_s", ["hi_1_e_idle_1_s", "idle_1_s_idle_1_e", "idle_1_e_talking_2_s"]),
    ("idle_1_e", "wave_1_s", nil),
  ]

  @Test("paths between key poses", arguments: pathCases)
  func paths(from: String, to: String, expected: [String]?) throws {
    let g = try graph(productionSet)
    #expect(g.path(from: keyPose(from), to: keyPose(to))?.map(\.rawValue) == expected)
  }

  @Test("the shortest path is taken when there is no direct edge")
  func shortestWithoutDirectEdge() throws {
    var counts = productionSet
    counts["talking_1_e_talking_2_s"] = nil
    let g = try graph(counts)
    // Two routes of two edges: via idle (8 + 8 frames) or via talking_1_s? Only via idle exists.
    #expect(
      g.path(from: keyPose("talking_1_e"), to: keyPose("talking_2_s"))?.map(\.rawValue)
        == ["talking_1_e_idle_1_s", "idle_1_s_idle_1_e", "idle_1_e_talking_2_s"])
    // With a cheap shortcut added, fewer edges win.
    counts["talking_1_e_idle_1_e"] = 50
    let shortcut = try graph(counts)
    #expect(
      shortcut.path(from: keyPose("talking_1_e"), to: keyPose("talking_2_s"))?.map(\.rawValue)
        == ["talking_1_e_idle_1_e", "idle_1_e_talking_2_s"])
  }

  @Test("among paths of equal length, fewer frames win")
  func fewerFramesWin() throws {
    let g = try graph([
      "a_1_s_b_1_s": 10, "b_1_s_c_1_s": 10, "a_1_s_d_1_s": 3, "d_1_s_c_1_s": 3,
    ])
    #expect(
      g.path(from: keyPose("a_1_s"), to: keyPose("c_1_s"))?.map(\.rawValue) == [
        "a_1_s_d_1_s", "d_1_s_c_1_s",
      ])
  }

  @Test("a path to a pose reaches its nearest key pose")
  func pathToPose() throws {
    let g = try graph(productionSet)
    #expect(
      g.path(from: keyPose("talking_1_e"), toPose: .idle)?.map(\.rawValue) == [
        "talking_1_e_idle_1_s"
      ])
    #expect(g.path(from: keyPose("idle_1_s"), toPose: .idle) == [])
  }

  @Test("animations without frames are not in the graph")
  func zeroFramesExcluded() throws {
    let g = try graph(["idle_1_s_idle_1_e": 0, "idle_1_e_idle_1_s": 5])
    #expect(!g.contains(name("idle_1_s_idle_1_e")))
    #expect(g.next(after: name("idle_1_e_idle_1_s"), toward: .idle) == nil)
    #expect(g.animations == [name("idle_1_e_idle_1_s")])
  }
}
