import Foundation

/// The problems one decode noted, in order, the first `capacity` of them kept and the rest
/// counted. Used by one decode on one thread only.
final class IssueLog {
  let capacity: Int
  var kept: [LIVAProtocolError] = []
  /// The problems past `capacity`: how many, and the last one.
  var leftOut = 0
  var lastLeftOut: LIVAProtocolError?

  init(capacity: Int) { self.capacity = max(0, capacity) }

  func append(_ problem: LIVAProtocolError) {
    if kept.count < capacity {
      kept.append(problem)
    } else {
      leftOut += 1
      lastLeftOut = problem
    }
  }

  /// The kept problems, then one that counts those left out (with the last one's code, scope
  /// and field), so that a flood of bad elements costs a bounded number of log lines and app
  /// events.
  var issues: [LIVAProtocolError] {
    guard leftOut > 0, var summary = lastLeftOut else { return kept }
    summary.message =
      "\(leftOut) more problems in this event, not listed; the last: \(summary.message)"
    return kept + [summary]
  }
}

/// Reads the fields of one incoming event, turning every problem into a
/// ``LIVAProtocolError`` that names the event and the field path.
///
/// Paths are built only when an error is thrown (`parent` plus `key`), so the happy path
/// allocates no path strings.
struct EventReader {
  let event: String
  let limits: LIVAEventLimits
  /// Elements read where frames belong, and elements of the containers around them
  /// (sections, plan entries); each is checked against `maximumFramesPerEvent`.
  var framesRead = 0
  var containersRead = 0
  /// Names already parsed in this event: a batch repeats a few names many times.
  var animationNames: [String: AnimationName] = [:]
  /// Problems that cost less than the event (a field's value, a frame, an entry), in order.
  /// A reference, so that the tolerant readers below need no `mutating` (their closures read
  /// the reader while a problem is noted).
  let log: IssueLog
  var issues: [LIVAProtocolError] { log.issues }

  init(event: String, limits: LIVAEventLimits) {
    self.event = event
    self.limits = limits
    self.log = IssueLog(capacity: limits.maximumIssuesPerEvent)
  }

  /// Counts one element where a frame belongs, whatever its type: past the limit the event is
  /// hostile and is rejected whole.
  mutating func countFrame(at path: String) throws(LIVAProtocolError) {
    framesRead += 1
    guard framesRead <= limits.maximumFramesPerEvent else {
      throw error(
        .tooLarge, "more than \(limits.maximumFramesPerEvent) frames in one event", at: path)
    }
  }

  /// Counts one element of a container of frames (a section, a plan entry), whatever its type.
  mutating func countContainer(at path: String) throws(LIVAProtocolError) {
    containersRead += 1
    guard containersRead <= limits.maximumFramesPerEvent else {
      throw error(
        .tooLarge, "more than \(limits.maximumFramesPerEvent) sections in one event", at: path)
    }
  }

  static func join(_ parent: String, _ key: String) -> String {
    parent.isEmpty ? key : "\(parent).\(key)"
  }

  func error(_ code: LIVAProtocolError.Code, _ message: String, at path: String)
    -> LIVAProtocolError
  {
    LIVAProtocolError(code, message, event: event, fieldPath: path.isEmpty ? nil : path)
  }

  func wrongType(_ value: WireValue, expected: String, at path: String) -> LIVAProtocolError {
    error(.wrongType, "expected \(expected), found \(value.typeName)", at: path)
  }

  // MARK: Tolerance

  /// Notes a problem that costs `scope` (less than the event) and lets decoding go on.
  func note(_ problem: LIVAProtocolError, costing scope: LIVAProtocolError.Scope) {
    var problem = problem
    problem.scope = scope
    log.append(problem)
  }

  /// Reads a value that playback can do without: a problem drops the value (nil) and is noted
  /// as a field issue. `null` and booleans mean absent (docs/Protocol.md, "Field types": in a
  /// tolerant field `null` and booleans count as absent).
  func lenient<T>(
    _ member: WireValue?, _ read: (WireValue) throws(LIVAProtocolError) -> T
  ) -> T? {
    guard let member else { return nil }
    switch member {
    case .null, .bool: return nil
    default: break
    }
    do {
      return try read(member)
    } catch {
      note(error, costing: .field)
      return nil
    }
  }

  /// An informational integer: a whole number (`7` or `7.0`) or its decimal text (`"7"`).
  func informationalInt(_ member: WireValue?, _ key: String, in parent: String)
    -> Int?
  {
    lenient(member) { (value) throws(LIVAProtocolError) -> Int in
      if case .string = value {
        // Decimal text only, as everywhere a number is read tolerantly: "0x10" is not 16.
        guard let number = value.numberOrDecimalText else {
          throw wrongType(value, expected: "an integer", at: Self.join(parent, key))
        }
        return try int(.number(number), max: limits.maximumIndex, at: Self.join(parent, key))
      }
      return try int(value, max: limits.maximumIndex, at: Self.join(parent, key))
    }
  }

  /// An informational string: a string, or a number taken as its decimal text.
  func informationalString(_ member: WireValue?, _ key: String, in parent: String)
    -> String?
  {
    lenient(member) { (value) throws(LIVAProtocolError) -> String in
      try text(value, at: Self.join(parent, key))
    }
  }

  // MARK: Containers

  func object(_ value: WireValue, at path: String) throws(LIVAProtocolError) -> [String: WireValue]
  {
    guard case .object(let members) = value else {
      throw wrongType(value, expected: "an object", at: path)
    }
    return members
  }

  /// The value of a required member; `null` counts as missing.
  func required(_ object: [String: WireValue], _ key: String, in parent: String)
    throws(LIVAProtocolError) -> WireValue
  {
    try required(object[key], key, in: parent)
  }

  /// A required member's value, already looked up as `member`; `null` counts as missing.
  func required(_ member: WireValue?, _ key: String, in parent: String)
    throws(LIVAProtocolError) -> WireValue
  {
    guard let member, member != .null else {
      throw error(.missingField, "required field \"\(key)\" is missing", at: Self.join(parent, key))
    }
    return member
  }

  /// The value of an optional member; `null` counts as absent.
  func optional(_ object: [String: WireValue], _ key: String) -> WireValue? {
    guard let value = object[key], value != .null else { return nil }
    return value
  }

  func array(_ value: WireValue, at path: @autoclosure () -> String) throws(LIVAProtocolError)
    -> [WireValue]
  {
    guard case .array(let elements) = value else {
      throw wrongType(value, expected: "an array", at: path())
    }
    return elements
  }

  // MARK: Scalars

  func int(_ value: WireValue, max: Int, at path: @autoclosure () -> String)
    throws(LIVAProtocolError) -> Int
  {
    guard let number = value.numberOrDecimalText else {
      throw wrongType(value, expected: "an integer", at: path())
    }
    guard number.rounded(.towardZero) == number, number.magnitude < 9e15 else {
      throw error(.wrongType, "expected an integer, found \(number)", at: path())
    }
    guard number >= 0 else {
      throw error(.outOfRange, "negative value \(Int(number))", at: path())
    }
    guard number <= Double(max) else {
      throw error(.outOfRange, "value \(Int(number)) exceeds the limit \(max)", at: path())
    }
    return Int(number)
  }

  func requiredIndex(_ object: [String: WireValue], _ key: String, in parent: String)
    throws(LIVAProtocolError) -> Int
  {
    try int(required(object, key, in: parent), max: limits.maximumIndex, at: Self.join(parent, key))
  }

  func optionalIndex(_ object: [String: WireValue], _ key: String, in parent: String)
    throws(LIVAProtocolError) -> Int?
  {
    try optionalIndex(object[key], key, in: parent)
  }

  /// An optional index member, already looked up as `member`; `null` counts as absent.
  func optionalIndex(_ member: WireValue?, _ key: String, in parent: String)
    throws(LIVAProtocolError) -> Int?
  {
    guard let member, member != .null else { return nil }
    return try int(member, max: limits.maximumIndex, at: Self.join(parent, key))
  }

  func requiredCount(_ object: [String: WireValue], _ key: String, in parent: String)
    throws(LIVAProtocolError) -> Int
  {
    try int(required(object, key, in: parent), max: limits.maximumCount, at: Self.join(parent, key))
  }

  func optionalCount(_ object: [String: WireValue], _ key: String, in parent: String)
    throws(LIVAProtocolError) -> Int?
  {
    guard let value = optional(object, key) else { return nil }
    return try int(value, max: limits.maximumCount, at: Self.join(parent, key))
  }

  func number(_ value: WireValue, at path: @autoclosure () -> String) throws(LIVAProtocolError)
    -> Double
  {
    guard let number = value.numberOrDecimalText else {
      throw wrongType(value, expected: "a number", at: path())
    }
    guard number.isFinite else { throw error(.outOfRange, "non-finite number", at: path()) }
    return number
  }

  func string(_ value: WireValue, at path: @autoclosure () -> String) throws(LIVAProtocolError)
    -> String
  {
    guard case .string(let text) = value else {
      throw wrongType(value, expected: "a string", at: path())
    }
    guard text.utf8.count <= limits.maximumStringLength else {
      throw error(
        .tooLarge, "string longer than \(limits.maximumStringLength) bytes", at: path())
    }
    // Bytes below 0x80 in UTF-8 are ASCII characters, so a byte scan finds every control one.
    guard !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
      throw error(.malformedValue, "string contains control characters", at: path())
    }
    return text
  }

  func optionalString(_ object: [String: WireValue], _ key: String, in parent: String)
    throws(LIVAProtocolError) -> String?
  {
    try optionalString(object[key], key, in: parent)
  }

  /// An optional string member, already looked up as `member`; `null` counts as absent.
  func optionalString(_ member: WireValue?, _ key: String, in parent: String)
    throws(LIVAProtocolError) -> String?
  {
    guard let member, member != .null else { return nil }
    return try string(member, at: Self.join(parent, key))
  }

  func animationName(_ value: WireValue, at path: @autoclosure () -> String)
    throws(LIVAProtocolError) -> AnimationName
  {
    guard case .string(let text) = value else {
      throw wrongType(value, expected: "an animation name string", at: path())
    }
    do {
      return try AnimationName(parsing: text)
    } catch {
      throw self.error(error.code, error.message, at: path())
    }
  }

  func requiredAnimationName(_ object: [String: WireValue], _ key: String, in parent: String)
    throws(LIVAProtocolError) -> AnimationName
  {
    try animationName(required(object, key, in: parent), at: Self.join(parent, key))
  }

  /// Text, or a number taken as its decimal text (an encoder that wrote `12` for `"12"`).
  func text(_ value: WireValue, at path: @autoclosure () -> String) throws(LIVAProtocolError)
    -> String
  {
    if let text = value.decimalText { return text }
    return try string(value, at: path())
  }

  /// A sprite-sheet file name: a single safe path component (a number is its decimal text).
  func fileName(_ value: WireValue, at path: @autoclosure () -> String) throws(LIVAProtocolError)
    -> String
  {
    let text = try text(value, at: path())
    guard !text.isEmpty, text != ".", text != "..",
      !text.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") })
    else {
      throw error(.malformedValue, "\"\(text.prefix(40))\" is not a file name", at: path())
    }
    return text
  }

  // MARK: Points and rectangles

  func coordinate(_ value: WireValue, nonNegative: Bool, at path: @autoclosure () -> String)
    throws(LIVAProtocolError) -> Double
  {
    let number = try number(value, at: path())
    guard number.magnitude <= limits.maximumCoordinate, !nonNegative || number >= 0 else {
      throw error(.outOfRange, "coordinate \(number) out of range", at: path())
    }
    return number
  }

  func point(_ value: WireValue, at path: String) throws(LIVAProtocolError) -> SIMD2<Double> {
    let elements = try array(value, at: path)
    guard elements.count == 2 else {
      throw error(.malformedValue, "expected [x, y], found \(elements.count) numbers", at: path)
    }
    return SIMD2(
      try coordinate(elements[0], nonNegative: false, at: "\(path)[0]"),
      try coordinate(elements[1], nonNegative: false, at: "\(path)[1]"))
  }

  func rect(_ value: WireValue, at path: String) throws(LIVAProtocolError) -> PlacementRect {
    let elements = try array(value, at: path)
    guard elements.count == 4 else {
      throw error(
        .malformedValue, "expected [x, y, w, h], found \(elements.count) numbers", at: path)
    }
    return PlacementRect(
      x: try coordinate(elements[0], nonNegative: false, at: "\(path)[0]"),
      y: try coordinate(elements[1], nonNegative: false, at: "\(path)[1]"),
      width: try coordinate(elements[2], nonNegative: true, at: "\(path)[2]"),
      height: try coordinate(elements[3], nonNegative: true, at: "\(path)[3]"))
  }

  // MARK: Binary data

  /// Bytes given as a binary attachment, a base64 string, or a `data:` URL with base64
  /// content. Returns the bytes and the media type of a data URL.
  func bytes(_ value: WireValue, maximumBytes: Int, at path: @autoclosure () -> String)
    throws(LIVAProtocolError) -> (Data, mime: String?)
  {
    switch value {
    case .binary(let data):
      guard data.count <= maximumBytes else {
        throw error(.tooLarge, "\(data.count) bytes exceed the limit \(maximumBytes)", at: path())
      }
      return (data, nil)
    case .string(let text):
      let utf8 = text.utf8
      var payload = utf8[...]
      var mime: String?
      if utf8.starts(with: "data:".utf8) {
        guard let comma = utf8.firstIndex(of: UInt8(ascii: ",")) else {
          throw error(.malformedValue, "data URL without ','", at: path())
        }
        let header = String(
          decoding: utf8[utf8.index(utf8.startIndex, offsetBy: 5)..<comma], as: UTF8.self)
        var parameters = header.split(separator: ";", omittingEmptySubsequences: false)
        guard parameters.last == "base64" else {
          throw error(.malformedValue, "data URL is not base64-encoded", at: path())
        }
        parameters.removeLast()
        if let type = parameters.first, !type.isEmpty {
          guard type.utf8.count <= 100 else {
            throw error(.malformedValue, "data URL media type too long", at: path())
          }
          mime = String(type)
        }
        payload = utf8[utf8.index(after: comma)...]
      }
      guard payload.count / 4 * 3 <= maximumBytes + 2 else {
        throw error(
          .tooLarge, "about \(payload.count / 4 * 3) bytes exceed the limit \(maximumBytes)",
          at: path())
      }
      guard let data = Base64.decode(payload) else {
        throw error(.malformedValue, "invalid base64", at: path())
      }
      guard data.count <= maximumBytes else {
        throw error(.tooLarge, "\(data.count) bytes exceed the limit \(maximumBytes)", at: path())
      }
      return (data, mime)
    default:
      throw wrongType(value, expected: "binary data or a base64 string", at: path())
    }
  }

  func image(_ object: [String: WireValue], key: String, mimeKey: String?, in parent: String)
    throws(LIVAProtocolError) -> EncodedImage
  {
    try image(
      object[key], key: key, mime: mimeKey.flatMap { object[$0] }, mimeKey ?? "", in: parent)
  }

  /// An image from its members, already looked up: the bytes (`data`, required) and a declared
  /// media type (`mime`, optional), which wins over a data URL's.
  func image(
    _ data: WireValue?, key: String, mime: WireValue?, _ mimeKey: String, in parent: String
  ) throws(LIVAProtocolError) -> EncodedImage {
    let (bytes, urlMIME) = try bytes(
      required(data, key, in: parent), maximumBytes: limits.maximumImageBytes,
      at: Self.join(parent, key))
    // Informational: the bytes say what they are, so a media type that is no text is noted
    // and ignored, never the image's loss.
    let declared = lenient(mime) { (value) throws(LIVAProtocolError) -> String in
      try string(value, at: Self.join(parent, mimeKey))
    }
    return EncodedImage(data: bytes, mimeType: declared ?? urlMIME)
  }
}

extension WireValue {
  /// A number, or decimal text that is one (`"7"`, `"-2.5"`, `"1e3"`; not `"0x1"`, `"inf"` or
  /// `" 7"`): what a tolerant reader takes where a number is expected.
  var numberOrDecimalText: Double? {
    switch self {
    case .number(let number): return number
    case .string(let text):
      guard let first = text.utf8.first, text.utf8.count <= 32,
        first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
        text.utf8.allSatisfy({ "0123456789.-+eE".utf8.contains($0) })
      else { return nil }
      return Double(text)
    default: return nil
    }
  }

  /// A finite number as decimal text (`7`, not `7.0`, for whole numbers); nil otherwise.
  var decimalText: String? {
    guard case .number(let number) = self, number.isFinite else { return nil }
    return number.rounded() == number && number.magnitude < 1e15
      ? String(Int64(number)) : String(number)
  }
}
