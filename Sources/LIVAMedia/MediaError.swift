/// The one error type of the media domain: undecodable or oversized images, a missing codec
/// library, garbage audio, refused cache writes.
///
/// Follows the house rule for errors: an extensible ``Code``, a human message, and the
/// location of the offending input (what it was, and a byte offset into it when known).
public struct LIVAMediaError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What went wrong, as an extensible set of static values (new codes are not a breaking change).
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// The stable identifier of the code, e.g. `"corruptData"`.
    public let rawValue: String

    /// Creates a code from its identifier.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The bytes are not in any format this codec knows (bad magic number).
    public static let unsupportedFormat = Code("unsupportedFormat")
    /// The bytes claim a known format but are damaged.
    public static let corruptData = Code("corruptData")
    /// The bytes end before the data they announce.
    public static let truncatedData = Code("truncatedData")
    /// The image has more pixels than the configured limit, or impossible dimensions.
    public static let imageTooLarge = Code("imageTooLarge")
    /// The native library a codec needs is not installed (e.g. `libwebp.so.7`).
    public static let libraryUnavailable = Code("libraryUnavailable")
    /// The codec cannot do this on this platform (e.g. JPEG encoding).
    public static let unsupportedOperation = Code("unsupportedOperation")
    /// Pixel buffers or rectangles whose sizes do not add up.
    public static let invalidArgument = Code("invalidArgument")
    /// No MPEG audio frame could be found where one was expected.
    public static let notMP3 = Code("notMP3")
    /// A name that would not be a safe single path component in the cache.
    public static let invalidName = Code("invalidName")
    /// A file-system operation of a disk cache failed.
    public static let ioFailure = Code("ioFailure")
    /// A value was refused because a configured bound would be exceeded.
    public static let limitExceeded = Code("limitExceeded")
    /// The work was dropped because the message it belonged to was interrupted.
    public static let cancelled = Code("cancelled")

    /// The identifier.
    public var description: String { rawValue }
  }

  /// What went wrong.
  public var code: Code
  /// A human-readable explanation.
  public var message: String
  /// What the offending input was, when known (e.g. `"png"`, `"webp"`, `"mp3"`, a file path).
  public var source: String?
  /// The byte offset into the input where the problem was found, when known.
  public var offset: Int?

  /// Creates an error.
  public init(_ code: Code, _ message: String, source: String? = nil, offset: Int? = nil) {
    self.code = code
    self.message = message
    self.source = source
    self.offset = offset
  }

  /// `code: message (source at offset)`.
  public var description: String {
    var text = "\(code): \(message)"
    switch (source, offset) {
    case (let source?, let offset?): text += " (\(source) at byte \(offset))"
    case (let source?, nil): text += " (\(source))"
    case (nil, let offset?): text += " (at byte \(offset))"
    case (nil, nil): break
    }
    return text
  }
}
