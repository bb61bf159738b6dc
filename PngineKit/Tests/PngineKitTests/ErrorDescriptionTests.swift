import Foundation
import Testing

@testable import PngineKit

@Suite("PngineError for apps")
struct ErrorDescriptionTests {
  @Test("localizedDescription says what went wrong and where, not a generic sentence")
  func localized() {
    let error: any Error = PngineError(
      .crcMismatch, "the chunk's CRC does not match its bytes",
      location: .init(chunk: "IDAT", byteOffset: 33))
    #expect(
      error.localizedDescription
        == "The PNG is damaged: the chunk's CRC does not match its bytes (crcMismatch; chunk IDAT, offset 33)."
    )
    let localized = error as? any LocalizedError
    #expect(localized?.failureReason == "crcMismatch")
    #expect(localized?.recoverySuggestion?.isEmpty == false)
  }

  @Test("every code falls in a category with its own lead and a recovery suggestion")
  func categories() {
    let leads: [(PngineError.Code, String)] = [
      (.invalidPNG, "The PNG is damaged"),
      (.executorMissing, "The animation cannot run"),
      (.outOfFuel, "The animation stopped"),
      (.gpuValidation, "The GPU rejected the animation"),
      (.deviceLost, "The GPU is not available"),
      (.notInitialized, "The animation is not loaded"),
    ]
    for (code, lead) in leads {
      let error = PngineError(code, "detail")
      #expect(error.errorDescription == "\(lead): detail (\(code)).", "\(code)")
      #expect(error.recoverySuggestion?.isEmpty == false, "\(code)")
    }
  }
}
