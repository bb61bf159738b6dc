import Foundation
@_exported import JSONWire

/// An event payload as it comes off the wire: JSON that may hold binary data.
///
/// The same type as the Socket.IO layer's `JSONValue` (module `JSONWire`, which depends on
/// Foundation only): an event is decoded from the tree the packet parser built, with no copy,
/// and any other transport (a URLSession WebSocket, a test) can build it directly.
public typealias WireValue = JSONValue
