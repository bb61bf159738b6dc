import Foundation

/// The seed of this test run for generated (property) tests: `LIVA_TEST_SEED` when it is set, to
/// replay a failing run, else a fresh random one, so that every run tries new cases. Printed
/// once, when first used, so that any run can be replayed.
public enum RunSeed {
  /// This run's seed.
  public static let value: UInt64 = {
    if let text = ProcessInfo.processInfo.environment["LIVA_TEST_SEED"] {
      guard let seed = UInt64(text) else {
        fatalError("LIVA_TEST_SEED must be a whole number, not \(text)")
      }
      print("LIVA_TEST_SEED=\(seed) (from the environment)")
      return seed
    }
    let seed = UInt64.random(in: 1...999_999_999)
    print("LIVA_TEST_SEED=\(seed) (this run's seed; set LIVA_TEST_SEED=\(seed) to replay it)")
    return seed
  }()

  /// `count` seeds for one generator, derived from this run's seed.
  public static func seeds(_ count: Int) -> [UInt64] {
    (0..<UInt64(count)).map { value &* 1000 &+ $0 }
  }
}
