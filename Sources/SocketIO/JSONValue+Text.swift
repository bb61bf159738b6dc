@_exported import JSONWire

extension JSONValue {
  /// Parses JSON text (no binary placeholders are interpreted).
  ///
  /// - Throws: ``SocketIOError`` with code `malformedJSON` when the text is not one valid
  ///   JSON value or nests deeper than `maximumNestingDepth`.
  public init(parsing text: String, maximumNestingDepth: Int = 64) throws(SocketIOError) {
    self = try withUTF8Bytes(of: text) { (bytes) throws(SocketIOError) -> JSONValue in
      try JSONReader.socketIODocument(bytes[...], maximumDepth: maximumNestingDepth, baseOffset: 0)
    }
  }

  /// Serializes the value as compact JSON with sorted keys. Binary values are written as
  /// Socket.IO placeholders numbered from 0 in document order; use
  /// ``SocketIOPacket/encode()`` to get the attachments as well.
  public var jsonText: String {
    var writer = JSONWriter()
    writer.write(self)
    return String(decoding: writer.bytes, as: UTF8.self)
  }
}

/// Runs `body` on the UTF-8 bytes of `text` (made contiguous if needed), keeping the typed
/// error that `String.withUTF8` would erase.
func withUTF8Bytes<R>(
  of text: String, _ body: (UnsafeBufferPointer<UInt8>) throws(SocketIOError) -> R
) throws(SocketIOError) -> R {
  var text = text
  let result = text.withUTF8 { bytes in
    Result { () throws(SocketIOError) -> R in try body(bytes) }
  }
  return try result.get()
}

extension JSONReader {
  /// ``JSONReader/parseDocument(_:maximumDepth:baseOffset:maximumValues:)`` with its error as
  /// Socket.IO's (`malformedJSON`, or `payloadTooLarge` past `maximumValues`; same message and
  /// offset).
  static func socketIODocument(
    _ slice: Slice<UnsafeBufferPointer<UInt8>>, maximumDepth: Int, baseOffset: Int,
    maximumValues: Int = .max
  ) throws(SocketIOError) -> JSONValue {
    do {
      return try parseDocument(
        slice, maximumDepth: maximumDepth, baseOffset: baseOffset, maximumValues: maximumValues)
    } catch {
      throw SocketIOError(
        error.exceedsLimit ? .payloadTooLarge : .malformedJSON, error.message,
        offset: error.offset)
    }
  }
}
