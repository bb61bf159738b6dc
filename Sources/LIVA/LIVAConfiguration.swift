import Foundation
import LIVAMedia
import LIVAProtocol
import Logging
import NIOSSL
import SocketIO

/// How a ``LIVAClient`` connects and plays. A value with defaults; only the server and the
/// ids are required.
public struct LIVAConfiguration: Sendable {
  /// The backend, e.g. `https://api.example.com` or `http://127.0.0.1:5000`.
  public var serverURL: String
  /// `user_id` of the handshake.
  public var userID: String
  /// `agent_id` of the handshake: which avatar.
  public var agentID: String
  /// `instance_id` of the handshake, `"default"` unless the app runs several.
  public var instanceID: String = "default"
  /// The canvas size asked of the server (`userResolution`). The output frames follow the
  /// avatar's own frames (any aspect), unless ``player`` sets a size and content mode.
  public var resolution: Int = 512
  /// Where base animations are cached on disk: each server, agent and resolution in a
  /// directory of its own under it (``cacheDirectory``). Several clients, in one process or
  /// several, may share one root.
  public var cacheRoot: URL
  /// The server's identity in the cache key; nil (the default): ``serverURL``. Set it when one
  /// backend is reached at changing addresses (a loopback server on a new port each launch,
  /// several gateways of one deployment), so that its avatar is downloaded once. Never give
  /// two backends whose avatars differ the same identity: one would draw the other's frames.
  public var cacheServerIdentity: String?
  /// This avatar's cache directory under ``cacheRoot``, keyed by the server
  /// (``cacheServerIdentity``, else ``serverURL``), ``agentID`` and ``resolution`` (see
  /// ``LIVAMedia/BaseFrameStore/cacheDirectory(in:server:agentID:resolution:)``).
  public var cacheDirectory: URL {
    BaseFrameStore.cacheDirectory(
      in: cacheRoot, server: cacheServerIdentity ?? serverURL, agentID: agentID,
      resolution: resolution)
  }
  /// Bytes of base-animation files kept on disk.
  public var cacheByteLimit: Int = 512 << 20
  /// The memory budget of decoded base frames, in bytes: base frames stay encoded on disk and
  /// a window ahead of what the engine will draw is decoded into this much memory (default
  /// 32 MiB: 8 frames of 1280×768, 32 of 512×512; measured at 1280×768 on 2 CPU cores, that
  /// keeps decoding ahead of playback). Playing from the playback form (``playbackForms``), its
  /// decoder's pictures count in it: the window is two frames shorter
  /// (``LIVAMedia/BaseFrameStore/reservedFrames``). The idle loop's first frame is always in.
  /// Raise it where decoding is slow or storage is remote; lower it for small avatars.
  public var decodedFrameByteLimit: Int = 32 << 20
  /// Whether downloaded base animations get a playback form: their frames encoded once as
  /// H.264 (x264 quality 18, a key frame every 10 frames) beside the images, on a background
  /// queue after each download, and decoded from it while playing: at 1280×768 a frame costs
  /// a fraction of a millisecond instead of a PNG's 10–20 ms of inflate. The images stay the
  /// reference (a damaged form is deleted and the frames decode from them). Takes effect where
  /// the platform has a codec for it (``LIVAMedia/BaseFrameStore/systemVideoCodec``: on Linux,
  /// a build that found the small FFmpeg of `scripts/setup-video.sh`; none on Apple platforms
  /// yet); false decodes every frame from its image, losslessly.
  public var playbackForms = true
  /// Where image decodes run (overlays and the base-frame window). Nil: worker threads.
  /// Tests on a virtual display clock pass ``LIVAMedia/InlineDecodeScheduler`` so that decoding
  /// keeps up with virtual time.
  public var decodeScheduler: (any DecodeScheduler)?
  /// The playback pipeline's options (engine timing, ingest limits, feathering).
  public var player = LIVAPlayer.Configuration()
  /// Send messages with HTTP `POST {server}/messages` (as the first iOS app did) instead of the
  /// socket's `user_message`.
  public var sendMessagesOverHTTP = false
  /// Reconnection schedule of the socket.
  public var reconnection = ReconnectionPolicy()
  /// When a failed base-animation download is asked for again (the cached version keeps
  /// playing meanwhile): by default 3 retries, after 1, 2 and 4 s.
  public var downloadRetry = DownloadRetryPolicy()
  /// Seconds a text sent with ``LIVAClient/sendMessage(_:)`` waits for its speech; then it is
  /// given up (``LIVAEvent/messageUnanswered(text:)``) and later speech is no longer matched
  /// to it. At most 16 texts wait; a newer one gives up the oldest. Default 30 s.
  public var answerTimeout: Double = 30
  /// The auth payload sent with the namespace CONNECT packet (`40{...}`), e.g.
  /// `["token": "…"]`; none by default.
  public var auth: WireValue?
  /// TLS for an `https`/`wss` server URL; nil (the default): the platform's trust roots. Set it
  /// for a backend whose certificate a private authority signed, or to pin one. It applies to
  /// the Socket.IO connection; messages sent over HTTP (``sendMessagesOverHTTP``) go through
  /// `URLSession`, which trusts what the platform trusts.
  public var tlsConfiguration: TLSConfiguration?
  /// The instant time to first frame is measured from (e.g. the process's start); the
  /// client's creation when nil.
  public var startInstant: ContinuousClock.Instant?
  /// Where the client logs (by default nowhere). The library never bootstraps logging.
  public var logger = Logger(label: "liva", factory: { _ in SwiftLogNoOpLogHandler() })
  /// Makes the connection of each ``LIVAClient/connect()`` from its Socket.IO configuration
  /// (server, query, reconnection, auth, TLS). Nil (the default): a ``SocketIOClient``. Give
  /// another ``LIVATransport`` to relay the protocol some other way, or to play a backend in a
  /// test.
  public var makeTransport: (@Sendable (SocketIOClientConfiguration, Logger) -> any LIVATransport)?

  /// Creates a configuration.
  public init(serverURL: String, userID: String, agentID: String, cacheRoot: URL) {
    self.serverURL = serverURL
    self.userID = userID
    self.agentID = agentID
    self.cacheRoot = cacheRoot
  }
}
