import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Where a PNGine PNG comes from.
public enum PngineSource: Sendable, Hashable {
  /// The whole file, in memory.
  case data(Data)
  /// A file on disk (a bundle resource is one: see ``bundle(_:in:)``).
  case file(URL)
  /// An `http`/`https` URL, fetched with `URLSession`.
  case remote(URL)

  /// The PNG resource `name` (with or without its `.png`) of `bundle`; nil when it has none.
  public static func bundle(_ name: String, in bundle: Bundle = .main) -> PngineSource? {
    let base = name.hasSuffix(".png") ? String(name.dropLast(4)) : name
    return bundle.url(forResource: base, withExtension: "png").map(PngineSource.file)
  }
}

/// Where loading a PNG is, as an app shows it. Every PNGine file *is* a picture: its own image
/// (the PNG's pixels, decoded apart from the payload) is the placeholder while the animation
/// gets ready and the fallback when it cannot run.
public enum PngineLoadState: Sendable, Equatable {
  /// Nothing asked yet.
  case idle
  /// Fetching the file.
  case fetching
  /// The file is here; the animation is being prepared. `still`: the PNG's own picture, when
  /// ``PngineLoadPolicy/showsStillWhileLoading`` (nil when it cannot be decoded).
  case preparing(still: RGBAImage?)
  /// Playing.
  case ready
  /// It cannot play: `error` says why; `fallback` is the PNG's own picture, when
  /// ``PngineLoadPolicy/fallsBackToStill`` and the file has one to show.
  case failed(PngineError, fallback: RGBAImage?)
}

/// How a load shows the PNG's own picture.
public struct PngineLoadPolicy: Sendable, Hashable {
  /// Whether the picture shows while the animation is prepared (default true).
  public var showsStillWhileLoading = true
  /// Whether the picture shows when the animation cannot run (default true).
  public var fallsBackToStill = true
  /// The largest file accepted, in bytes (default 64 MiB, the payload's own cap).
  public var maximumBytes = 64 << 20

  /// The defaults: the picture as placeholder and as fallback, files up to 64 MiB.
  public init() {}
}

/// The decisions of loading a PNG, as a pure state machine (time-free: each input is what
/// happened): fetched or not, prepared or not, cancelled. Its owner fetches
/// (``PngineLoader/fetch(_:session:maximumBytes:)``), prepares the animation (a driver's
/// `load`) and reports back; ``state`` is what to show.
public struct PngineLoading: Sendable {
  /// What to show now.
  public private(set) var state = PngineLoadState.idle
  /// The settings.
  public var policy: PngineLoadPolicy
  /// The PNG's bytes, once fetched.
  public private(set) var png: [UInt8]?
  private var still: RGBAImage?
  private var stillDecoded = false

  /// A load with `policy`, nothing asked yet.
  public init(policy: PngineLoadPolicy = PngineLoadPolicy()) {
    self.policy = policy
  }

  /// Fetching began (again: a new load replaces the old one).
  public mutating func began() {
    state = .fetching
    png = nil
    still = nil
    stillDecoded = false
  }

  /// The file arrived: the animation is prepared next; its own picture shows meanwhile.
  public mutating func fetched(_ bytes: [UInt8]) {
    guard state == .fetching else { return }
    png = bytes
    state = .preparing(still: policy.showsStillWhileLoading ? stillImage() : nil)
  }

  /// The file could not be fetched (no picture to fall back to).
  public mutating func fetchFailed(_ error: PngineError) {
    guard state == .fetching else { return }
    state = .failed(error, fallback: nil)
  }

  /// The animation is ready and playing.
  public mutating func prepared() {
    guard case .preparing = state else { return }
    state = .ready
  }

  /// The animation could not be prepared, or stopped for good (a lost device that did not come
  /// back, a budget, a trap): its own picture shows instead.
  public mutating func failed(_ error: PngineError) {
    switch state {
    case .preparing, .ready:
      state = .failed(error, fallback: policy.fallsBackToStill ? stillImage() : nil)
    case .idle, .fetching, .failed:
      break
    }
  }

  /// The load was cancelled (the view went away): back to idle.
  public mutating func cancelled() {
    state = .idle
  }

  /// The PNG's own pixels, decoded once (nil when they cannot be: an interlaced or 16-bit PNG).
  private mutating func stillImage() -> RGBAImage? {
    if !stillDecoded, let png {
      stillDecoded = true
      still = try? RGBAImage(png: png)
    }
    return still
  }
}

/// Fetches a PNG from a ``PngineSource``.
public enum PngineLoader {
  /// The bytes of `source`, at most `maximumBytes`. Cancellable: a cancelled task throws
  /// `CancellationError` (not a ``PngineError``). A remote source must answer 2xx.
  /// - Throws: ``PngineError`` with ``PngineError/Code/limitExceeded`` for a larger file and
  ///   ``PngineError/Code/invalidArgument`` for one that cannot be read or fetched.
  public static func fetch(
    _ source: PngineSource, session: URLSession = .shared, maximumBytes: Int = 64 << 20
  ) async throws -> [UInt8] {
    let bytes: [UInt8]
    switch source {
    case .data(let data):
      bytes = [UInt8](data)
    case .file(let url):
      let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
      if let size = attributes?[.size] as? Int, size > maximumBytes {
        throw tooLarge(size, maximumBytes)
      }
      guard let data = FileManager.default.contents(atPath: url.path) else {
        throw PngineError(
          .invalidArgument, "cannot read \(url.path)", location: .init(call: "load"))
      }
      bytes = [UInt8](data)
    case .remote(let url):
      let data: Data
      let response: URLResponse
      do {
        (data, response) = try await session.data(from: url)
      } catch {
        try Task.checkCancellation()
        throw PngineError(
          .invalidArgument, "cannot fetch \(url.absoluteString): \(error.localizedDescription)",
          location: .init(call: "load"))
      }
      if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
        throw PngineError(
          .invalidArgument, "\(url.absoluteString) answered \(http.statusCode)",
          location: .init(call: "load"))
      }
      bytes = [UInt8](data)
    }
    try Task.checkCancellation()
    guard bytes.count <= maximumBytes else { throw tooLarge(bytes.count, maximumBytes) }
    return bytes
  }

  private static func tooLarge(_ size: Int, _ limit: Int) -> PngineError {
    PngineError(
      .limitExceeded, "the file has \(size) bytes, more than \(limit)",
      location: .init(call: "load"))
  }
}
