import LIVATestSupport
import Testing

@testable import PngineKit

/// The generator of hostile executors (``ExecutorFuzzer``): its modules are faithful when
/// they mean to be, each misbehaviour ends as its typed error, and a slice of generated inputs
/// runs through the executor and the checks every backend makes with nothing but typed errors.
@Suite("Generated hostile executors")
struct ExecutorFuzzerTests {
  /// The recorded scenes of the fixtures that run.
  static let scenes: [ExecutorFuzzer.Scene] = Fixtures.positive.compactMap {
    try? ExecutorFuzzer.Scene.record(png: Fixtures.png($0))
  }

  /// `scene` with every blob pointer zeroed (they differ between the fixture and the copy).
  static func normalized(_ scene: ExecutorFuzzer.Scene) -> ExecutorFuzzer.Scene {
    func zero(_ ops: [ExecutorFuzzer.Op]) -> [ExecutorFuzzer.Op] {
      ops.map { op in
        var op = op
        if let field = op.blobField {
          op.bytes.replaceSubrange(field..<(field + 4), with: [0, 0, 0, 0])
        }
        return op
      }
    }
    return ExecutorFuzzer.Scene(
      initOps: zero(scene.initOps), frameOps: zero(scene.frameOps), layout: scene.layout)
  }

  @Test("a generated executor that behaves writes its scene back exactly, in both layouts")
  func faithful() throws {
    try #require(Self.scenes.count == Fixtures.positive.count, "every fixture records")
    #expect(Set(Self.scenes.map(\.layout)) == [.current, .legacy])
    for scene in Self.scenes {
      let copy = Self.normalized(
        try ExecutorFuzzer.Scene.record(png: ExecutorFuzzer.png(scene)))
      let original = Self.normalized(scene)
      #expect(copy.layout == original.layout)
      for (name, a, b) in [
        ("init", copy.initOps, original.initOps), ("frame", copy.frameOps, original.frameOps),
      ] {
        #expect(a.count == b.count, "\(name): \(a.count) commands for \(b.count)")
        for (index, (x, y)) in zip(a, b).enumerated() where x != y {
          #expect(
            x.bytes == y.bytes && x.blob == y.blob && x.blobField == y.blobField,
            "\(name) \(index): first blob difference at \(zip(x.blob ?? [], y.blob ?? []).enumerated().first { $1.0 != $1.1 }.map { "\($0.offset): \($0.element)" } ?? "none"), \(x.bytes) (blob \(x.blob?.count ?? -1) at \(x.blobField ?? -1)) for \(y.bytes) (blob \(y.blob?.count ?? -1) at \(y.blobField ?? -1))"
          )
        }
      }
      #expect(scene.initOps.contains { $0.blob != nil }, "the scene has blobs to carry")
    }
  }

  @Test(
    "each misbehaviour of a generated executor ends as its typed error",
    arguments: ExecutorFuzzer.Behaviour.allCases.filter { $0 != .plain })
  func behaviours(_ behaviour: ExecutorFuzzer.Behaviour) throws {
    let scene = try #require(Self.scenes.first { $0.layout == .current })
    let png = ExecutorFuzzer.png(scene, behaviour: behaviour)
    let animation = PngineAnimation()
    var error: PngineError?
    do throws(PngineError) {
      _ = try animation.load(png: png)
      _ = try animation.frame(time: 0.5, width: 64, height: 64)
    } catch let thrown {
      error = thrown
    }
    let expected: Set<PngineError.Code> =
      switch behaviour {
      case .frameLoops, .initLoops: [.outOfFuel]
      case .frameTraps, .frameRecurses: [.trap]
      case .frameStatus: [.executorStatus]
      case .lengthLies, .lengthShort, .pointerPastMemory:
        [.invalidCommandBuffer, .pointerOutOfBounds]
      case .frameGrows, .plain: []
      }
    if behaviour == .frameGrows {
      // Growing is allowed up to the cap; the frame then writes its scene.
      #expect(error == nil)
    } else {
      #expect(error.map { expected.contains($0.code) } == true, "\(String(describing: error))")
      #expect((error?.message.utf8.count ?? 0) <= 2048 + 64, "the message is bounded")
    }
  }

  @Test("generated inputs are the same for the same seed and index, different across indexes")
  func deterministic() {
    let a = ExecutorFuzzer(seed: 42, scenes: Self.scenes)
    let b = ExecutorFuzzer(seed: 42, scenes: Self.scenes)
    #expect(a.input(7).png == b.input(7).png)
    #expect(a.input(7).png != a.input(8).png)
  }

  /// The CI slice: generated inputs through the executor, the command decoder and the checks
  /// a backend makes (``RecordingBackend``). The long run renders on the GPU
  /// (`scripts/fuzz-pngine`, `pngine fuzz-gpu --executors`).
  @Test("a slice of generated hostile executors: each one renders or is a typed error")
  func slice() throws {
    let fuzzer = ExecutorFuzzer(seed: RunSeed.value, scenes: Self.scenes)
    var outcomes: [String: Int] = [:]
    for index in 0..<300 {
      let (png, summary) = fuzzer.input(index)
      let outcome: String
      do throws(PngineError) {
        let animation = PngineAnimation()
        let report = try animation.load(png: png)
        let backend = RecordingBackend()
        try backend.execute(report.initOutput, inputs: FrameInputs(time: 0, width: 64, height: 64))
        for k in 0..<2 {
          let t = Float(k) * 0.5
          try backend.execute(
            try animation.frame(time: t, width: 64, height: 64),
            inputs: FrameInputs(time: t, width: 64, height: 64))
        }
        outcome = "ok"
      } catch {
        outcome = "\(error.code)"
        #expect(error.message.utf8.count <= 4096, "input \(index) (\(summary)): message bounded")
      }
      outcomes[outcome, default: 0] += 1
    }
    print("generated executors, seed \(RunSeed.value): \(outcomes.sorted { $0.key < $1.key })")
    // A generator whose inputs all fail to load (or all pass) tests nothing.
    #expect(outcomes["ok", default: 0] >= 20, "\(outcomes)")
    #expect(outcomes.keys.count >= 5, "\(outcomes)")
  }
}
