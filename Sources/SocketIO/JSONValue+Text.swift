@_exported import JSONWire

extension JSONValue {
  /// Parses JSON text (no binary placeholders are interpreted).
  ///
  /// - Throws: ``SocketIOError`` with code `malformedJSON` when the text is not one valid
  ///   JSON value or nests deeper than `maximumNestingDepth`.
  public init(parsing text: String, maximumNestingDepth: Int = 64) throws(SocketIOError) {
    self = try withUTF8Bytes(of: text) { (bytes) throws(SocketIOError) -> JSONValue in
      try JSONReader.parseDocument(bytes[...], maximumDepth: maximumNestingDepth, baseOffset: 0)
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
