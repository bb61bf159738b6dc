import NIOCore
import NIOWebSocket
import Testing

@testable import SocketIO

@Suite("WebSocket message assembly")
struct MessageAssemblerTests {

  @Test("whole frames are messages; fragments are joined in order, keeping the first opcode")
  func joins() throws {
    var assembler = WebSocketMessageAssembler(maximumBytes: 100)
    let whole = try #require(
      try assembler.append(.text, ByteBuffer(string: "42[\"a\"]"), fin: true))
    #expect(whole.0 && String(buffer: whole.1) == "42[\"a\"]")
    #expect(try assembler.append(.binary, ByteBuffer(string: "ab"), fin: false) == nil)
    #expect(try assembler.append(.continuation, ByteBuffer(string: "cd"), fin: false) == nil)
    let joined = try #require(
      try assembler.append(.continuation, ByteBuffer(string: "ef"), fin: true))
    #expect(!joined.0 && String(buffer: joined.1) == "abcdef")
    // Ready for the next message.
    let next = try #require(try assembler.append(.text, ByteBuffer(string: "3"), fin: true))
    #expect(next.0 && String(buffer: next.1) == "3")
  }

  @Test("out-of-order and oversized frames are errors")
  func rejects() throws {
    var assembler = WebSocketMessageAssembler(maximumBytes: 4)
    #expect(throws: SocketIOError.self) {
      try assembler.append(.continuation, ByteBuffer(string: "x"), fin: true)
    }
    #expect(throws: SocketIOError.self) {
      try assembler.append(.text, ByteBuffer(string: "12345"), fin: true)
    }
    #expect(try assembler.append(.text, ByteBuffer(string: "12"), fin: false) == nil)
    #expect(throws: SocketIOError.self) {
      try assembler.append(.binary, ByteBuffer(string: "x"), fin: true)
    }
    var small = WebSocketMessageAssembler(maximumBytes: 4)
    #expect(try small.append(.text, ByteBuffer(string: "123"), fin: false) == nil)
    #expect(throws: SocketIOError.self) {
      try small.append(.continuation, ByteBuffer(string: "45"), fin: true)
    }
  }
}
