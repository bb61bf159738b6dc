import Foundation
import LIVAProtocol
import LIVATestSupport
import SocketIO
import Testing

/// The python-socketio peer (scripts/interop/socketio_peer.py) run from the project's
/// virtualenv (scripts/setup-python.sh), through LIVATestSupport's ``PythonProcess``. When the
/// venv or the peer is missing, the tests fail with a message saying so: interoperability is
/// never skipped.
final class PythonPeer: Sendable {
  let process: PythonProcess

  /// Starts the peer with `arguments` (after the script path).
  init(_ arguments: [String]) throws {
    do {
      process = try PythonProcess(script: "socketio_peer.py", arguments)
    } catch let failure as PythonProcess.Failure {
      throw SocketIOError(.connectionFailed, failure.description)
    }
  }

  /// The lines printed so far.
  var lines: [String] { process.lines }

  /// Whether the process has exited.
  var hasExited: Bool { process.hasExited }

  /// Waits, at most `seconds`, until the peer has exited and its output was read; returns
  /// whether it did.
  func waitForExit(seconds: Double) async -> Bool { await process.waitForExit(seconds: seconds) }

  /// The exit status (valid once exited).
  var exitStatus: Int32 { process.exitStatus }

  /// Starts the python-socketio server and returns it with its port.
  static func startServer(pingInterval: Double = 25, pingTimeout: Double = 20) async throws
    -> (PythonPeer, Int)
  {
    let peer = try PythonPeer([
      "server", "--ping-interval", "\(pingInterval)", "--ping-timeout", "\(pingTimeout)",
    ])
    guard let line = await peer.process.waitForLine(startingWith: "PORT "), let port = Int(line)
    else {
      peer.stop()
      throw SocketIOError(
        .connectionFailed, "the python-socketio server did not start: \(peer.lines.suffix(20))")
    }
    return (peer, port)
  }

  /// Stops the process (SIGKILL: it holds no state worth a graceful exit). Does not block.
  func stop() { process.stop() }
}

/// The fake WebP bytes of the peer's `image_bytes(index, size)`.
func peerImageBytes(_ index: Int, size: Int = 64) -> [UInt8] {
  let header = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBP".utf8)
  return header + (0..<(size - header.count)).map { UInt8((index * 7 + $0) % 256) }
}
