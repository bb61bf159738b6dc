import LIVAProtocol
import Testing

@Suite("Animation names")
struct AnimationNameTests {
  static let valid: [(String, String, String)] = [
    ("idle_1_s_idle_1_e", "idle_1_s", "idle_1_e"),
    ("idle_1_e_talking_1_s", "idle_1_e", "talking_1_s"),
    ("talking_2_e_talking_1_s", "talking_2_e", "talking_1_s"),
    ("hi_1_s_hi_1_e", "hi_1_s", "hi_1_e"),
    ("head_nod_12_s_idle_1_e", "head_nod_12_s", "idle_1_e"),
    ("s_1_s_e_2_e", "s_1_s", "e_2_e"),
    ("talking2_9999_e_idle_1_s", "talking2_9999_e", "idle_1_s"),
  ]

  @Test("valid names parse into their key poses", arguments: valid)
  func parsesValid(name: String, from: String, to: String) throws {
    let parsed = try AnimationName(parsing: name)
    #expect(parsed.from.description == from)
    #expect(parsed.to.description == to)
    #expect(parsed.rawValue == name)
    #expect(AnimationName(from: parsed.from, to: parsed.to) == parsed)
  }

  static let invalid: [String] = [
    "", "idle", "idle_1", "idle_1_s", "idle_1_s_idle_1", "idle_1_x_idle_1_e", "idle_s_idle_1_e",
    "Idle_1_s_idle_1_e", "idle_1_s__idle_1_e", "_idle_1_s_idle_1_e", "idle_1_s_idle_1_e_",
    "idle_1_s_idle_1_e_talking_1_s", "../idle_1_s_idle_1_e", "idle_1_s/idle_1_e",
    "idle_1_s_idle_1_e.png", "idle_12345_s_idle_1_e", "idle_-1_s_idle_1_e", "1dle_1_s_idle_1_e",
    "idle_1_s_idle_1_e\0", "idle_1_s_idlé_1_e", "idle 1_s_idle_1_e",
    String(repeating: "a", count: 200) + "_1_s_idle_1_e",
  ]

  @Test("malformed names are a typed error", arguments: invalid)
  func rejectsInvalid(name: String) {
    #expect(throws: LIVAProtocolError.self) { try AnimationName(parsing: name) }
    do {
      _ = try AnimationName(parsing: name)
    } catch {
      #expect(error.code == .invalidAnimationName)
    }
  }

  @Test("loops stay within one pose")
  func loops() throws {
    #expect(try AnimationName(parsing: "idle_1_e_idle_1_s").isLoop)
    #expect(try !AnimationName(parsing: "idle_1_e_talking_1_s").isLoop)
    #expect(AnimationName.idleForward.rawValue == "idle_1_s_idle_1_e")
    #expect(AnimationName.idleBack.rawValue == "idle_1_e_idle_1_s")
  }
}
