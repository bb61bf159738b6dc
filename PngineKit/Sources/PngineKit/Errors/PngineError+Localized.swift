import Foundation

/// What an app shows: `localizedDescription` is a sentence with the error's own message, its
/// code and where it was found, led by what it means to the user (a damaged file, an animation that
/// cannot run or stopped, a GPU that refused it or is gone); `failureReason` is the code's
/// name, `recoverySuggestion` what can be done. English only.
extension PngineError: LocalizedError {
  /// What went wrong, for the user, with the code for whoever debugs it:
  /// `The PNG is damaged: … (crcMismatch; chunk IDAT, offset 33).`
  public var errorDescription: String? {
    let at = location.description
    return "\(category.lead): \(message) (\(code)" + (at.isEmpty ? "" : "; \(at)") + ")."
  }

  /// The code's name, e.g. `crcMismatch`.
  public var failureReason: String? { code.description }

  /// What can be done about it.
  public var recoverySuggestion: String? { category.suggestion }

  private enum Category {
    case damaged, cannotRun, stopped, gpuRejected, gpuUnavailable, notLoaded, other

    var lead: String {
      switch self {
      case .damaged: "The PNG is damaged"
      case .cannotRun: "The animation cannot run"
      case .stopped: "The animation stopped"
      case .gpuRejected: "The GPU rejected the animation"
      case .gpuUnavailable: "The GPU is not available"
      case .notLoaded: "The animation is not loaded"
      case .other: "The animation failed"
      }
    }

    var suggestion: String {
      switch self {
      case .damaged: "Export the PNG again from PNGine; a file changed on the way cannot be played."
      case .cannotRun: "Export the PNG with a current PNGine, which embeds the executor it needs."
      case .stopped:
        "Load the animation again; if it stops again, the file asks for more than its budgets allow."
      case .gpuRejected:
        "The file asks the GPU for something it does not support; try it on another device."
      case .gpuUnavailable:
        "Try again once the app is in the foreground; the GPU may have been reset."
      case .notLoaded: "Load the animation before playing it."
      case .other: "Load the animation again."
      }
    }
  }

  private var category: Category {
    switch code {
    case .invalidPNG, .crcMismatch, .noPayload, .inflateFailed, .invalidHeader, .invalidTable,
      .bytecodeInvalid, .limitExceeded:
      .damaged
    case .executorMissing, .executorInvalid, .importNotAllowed, .memoryLimit:
      .cannotRun
    case .outOfFuel, .trap, .pointerOutOfBounds, .executorStatus, .budgetExceeded,
      .executorStopped, .invalidCommandBuffer, .commandValidation, .outOfMemory,
      .resourceNotFound, .invalidArgument, .invalidDescriptor, .gpuTimeout:
      .stopped
    case .gpuValidation, .shaderCompile, .pipelineCreate, .renderFailed, .computeFailed,
      .textureUnavailable:
      .gpuRejected
    case .deviceLost, .gpuUnavailable, .contextFailed, .surfaceFailed:
      .gpuUnavailable
    case .notInitialized, .alreadyInitialized:
      .notLoaded
    default:
      .other
    }
  }
}
