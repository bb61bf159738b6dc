import LIVAProtocol

/// One overlay image placed on a base frame (a mouth sprite, usually).
public struct OverlayLayer: Hashable, Sendable {
  /// The image's content key (`overlay_id`): the same key always means the same image.
  public var key: String
  /// Where the image goes on the base frame.
  public var rect: PlacementRect

  /// Creates a layer.
  public init(key: String, rect: PlacementRect) {
    self.key = key
    self.rect = rect
  }
}

/// One frame slot of a chunk: the base frame it must be drawn on, and its overlays.
public struct PlannedFrame: Hashable, Sendable {
  /// The base animation this frame belongs to (per frame: it may change inside a chunk).
  public var animation: AnimationName
  /// `matched_sprite_frame_number`: the base frame index the overlay is drawn on. Used as is
  /// when in range, wrapped (with a warning) when too large. Negative: the slot has no base
  /// frame of its own (a rejected frame object, or a slot of a chunk without a plan): it is
  /// drawn without a mouth, continuing the base animation on screen (see ``isContinuation``).
  public var baseFrame: Int
  /// The overlays drawn on that base frame, bottom first; usually one.
  public var layers: [OverlayLayer]

  /// Creates a frame with any number of layers.
  public init(animation: AnimationName, baseFrame: Int, layers: [OverlayLayer]) {
    self.animation = animation
    self.baseFrame = baseFrame
    self.layers = layers
  }

  /// A slot without a mouth or a base frame of its own: the base animation on screen goes on
  /// for 1/30 s. What a rejected frame object, or a chunk that came without a plan, becomes.
  public static func continuation(animation: AnimationName) -> PlannedFrame {
    PlannedFrame(animation: animation, baseFrame: -1, layers: [])
  }

  /// Whether this slot has no base frame of its own (``continuation(animation:)``).
  public var isContinuation: Bool { baseFrame < 0 }

  /// Creates a frame with one overlay.
  public init(key: String, animation: AnimationName, baseFrame: Int, rect: PlacementRect) {
    self.init(
      animation: animation, baseFrame: baseFrame, layers: [OverlayLayer(key: key, rect: rect)])
  }
}

/// The animation plan of one speech chunk: its overlay frames in playback order, one per
/// frame slot at ``EngineConfiguration/speakingFPS``. Frame `k` belongs at `k / fps` seconds
/// into the chunk's audio.
public struct ChunkPlan: Hashable, Sendable {
  /// `chunk_index`: the chunk's place in its message.
  public var index: Int
  /// The frames, in order.
  public var frames: [PlannedFrame]
  /// The message the chunk belongs to, as its owner numbers messages (one identity from the
  /// wire to the image store; the engine never guesses one from indexes). A chunk of a newer
  /// message than the open one opens it (interrupting the old one), whatever its index; a
  /// chunk of an older message is stale and rejected.
  public var message: MessageID
  /// The backend sent the first frame's image ahead (`first_frame_image`) for an immediate
  /// first frame: with it ready, the chunk waits for
  /// ``EngineConfiguration/startThresholdFrames`` only
  /// ``EngineConfiguration/firstFrameStartTimeout``.
  public var startsOnFirstFrame: Bool

  /// Creates a plan.
  public init(
    index: Int, frames: [PlannedFrame], message: MessageID,
    startsOnFirstFrame: Bool = false
  ) {
    self.index = index
    self.frames = frames
    self.message = message
    self.startsOnFirstFrame = startsOnFirstFrame
  }
}

/// What the engine is doing.
public enum EngineMode: String, Hashable, Sendable, CaseIterable {
  /// No idle animation is available yet: nothing can be drawn.
  case waiting
  /// Looping the idle animations (at ``EngineConfiguration/idleFPS``).
  case idle
  /// Walking the animation graph toward speech or toward a requested animation.
  case transition
  /// Speech: overlay frames drive the base frame.
  case talking
  /// Speech is over; finishing the current base animation to its end pose.
  case finishing
  /// Walking the graph back to the idle pose.
  case returning
  /// Playing a requested animation (e.g. `hi_1_s_hi_1_e`).
  case animation
}

/// A frame to draw: a base frame and the overlays on it.
public struct DrawnFrame: Hashable, Sendable {
  /// The base animation.
  public var animation: AnimationName
  /// The base frame index within ``animation``.
  public var index: Int
  /// The overlays to draw on it, bottom first (empty outside speech).
  public var overlays: [OverlayLayer]
  /// The chunk the overlays come from, while speaking.
  public var chunk: ChunkID?
  /// The position of the overlay frame within its chunk, while speaking.
  public var overlayIndex: Int?
  /// The engine mode that produced the frame.
  public var mode: EngineMode

  /// Creates a frame description.
  public init(
    animation: AnimationName, index: Int, overlays: [OverlayLayer] = [], chunk: ChunkID? = nil,
    overlayIndex: Int? = nil, mode: EngineMode
  ) {
    self.animation = animation
    self.index = index
    self.overlays = overlays
    self.chunk = chunk
    self.overlayIndex = overlayIndex
    self.mode = mode
  }
}

/// Why a tick does not draw a new frame; the previous frame stays on screen.
public enum HoldReason: Hashable, Sendable, CustomStringConvertible {
  /// No new frame slot has come yet (ticks faster than the frame rate): not a quality event.
  case notDue
  /// The engine is paused.
  case paused
  /// No base animation is available to draw.
  case noBaseAnimation
  /// The next overlay frame's image is not decoded yet.
  case overlayNotReady(key: String)
  /// The last frame of a chunk is held while the next chunk is not ready or not announced.
  case waitingForNextChunk

  /// The reason without its payload, for counting.
  public var kind: Kind {
    switch self {
    case .notDue: .notDue
    case .paused: .paused
    case .noBaseAnimation: .noBaseAnimation
    case .overlayNotReady: .overlayNotReady
    case .waitingForNextChunk: .waitingForNextChunk
    }
  }

  /// Hold reasons without payloads.
  public enum Kind: String, Hashable, Sendable, CaseIterable, Codable {
    /// See ``HoldReason/notDue``.
    case notDue
    /// See ``HoldReason/paused``.
    case paused
    /// See ``HoldReason/noBaseAnimation``.
    case noBaseAnimation
    /// See ``HoldReason/overlayNotReady(key:)``.
    case overlayNotReady
    /// See ``HoldReason/waitingForNextChunk``.
    case waitingForNextChunk
  }

  /// The kind's name, with the key for `overlayNotReady`.
  public var description: String {
    switch self {
    case .overlayNotReady(let key): "overlayNotReady(\(key))"
    default: kind.rawValue
    }
  }
}

/// The picture decision of one tick.
public enum FramePlan: Hashable, Sendable {
  /// Draw this frame.
  case draw(DrawnFrame)
  /// Keep the previous frame on screen.
  case hold(HoldReason)

  /// The frame to draw, if any.
  public var frame: DrawnFrame? {
    if case .draw(let frame) = self { return frame }
    return nil
  }
}

/// Where the playing chunk's audio is, as reported by the owner's audio output.
public struct AudioClock: Hashable, Sendable {
  /// The chunk whose audio is playing.
  public var chunk: ChunkID
  /// Seconds of that chunk's audio played so far.
  public var position: Double

  /// Creates a reading.
  public init(chunk: ChunkID, position: Double) {
    self.chunk = chunk
    self.position = position
  }
}

/// Something the owner must do, or may want to know, as a result of an engine input.
public enum EngineAction: Hashable, Sendable {
  /// Start this chunk's audio now, `offset` seconds into it (0 unless its first overlay
  /// frames were skipped). Comes on the tick that draws the chunk's first overlay frame.
  case startAudio(ChunkID, offset: Double)
  /// Stop this chunk's audio at once (interrupt).
  case stopAudio(ChunkID)
  /// Pause the playing audio (engine paused).
  case pauseAudio(ChunkID)
  /// Resume the paused audio.
  case resumeAudio(ChunkID)
  /// The message was interrupted: drop its images. `keys` are the overlay keys of its
  /// dropped chunks; content keys can be shared with other messages, so an owner that tracks
  /// which messages use an image should evict by `message` instead.
  case evictImages(MessageID, keys: [String])
  /// A chunk plan was accepted.
  case chunkQueued(ChunkID)
  /// The message's first overlay frame was drawn.
  case speakingStarted(MessageID)
  /// The message is over: played to its end, or interrupted.
  case speakingEnded(MessageID, interrupted: Bool)
  /// The chunk was left after its last frame, with its accounting.
  case chunkFinished(ChunkReport)
  /// The engine changed mode.
  case modeChanged(EngineMode)
  /// Something in the input was wrong or degraded playback; playback goes on.
  case warning(EngineWarning)
}

/// How a finished chunk's overlay frames fared: `drawn + skipped + late == frames`.
public struct ChunkReport: Hashable, Sendable {
  /// The chunk.
  public var id: ChunkID
  /// Overlay frames in the chunk's plan.
  public var frames: Int
  /// Frames drawn (each exactly once).
  public var drawn = 0
  /// Frames skipped: not ready after the hold cap, invalid, or on a missing animation.
  public var skipped = 0
  /// Frames not drawn because their time had passed.
  public var late = 0

  /// Creates an empty report for a chunk of `frames` frames.
  public init(id: ChunkID, frames: Int) {
    self.id = id
    self.frames = frames
  }
}

/// A problem the engine noticed and worked around. Never fatal.
public struct EngineWarning: Hashable, Sendable, CustomStringConvertible {
  /// What kind of problem, as an extensible set of static values.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// The stable identifier.
    public let rawValue: String
    /// Creates a code.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// `matched_sprite_frame_number` beyond the animation's frame count: wrapped.
    public static let frameIndexWrapped = Code("frameIndexWrapped")
    /// A negative `matched_sprite_frame_number`: the frame is skipped.
    public static let negativeFrameIndex = Code("negativeFrameIndex")
    /// A frame's base animation is not available: the frame is skipped.
    public static let missingAnimation = Code("missingAnimation")
    /// A chunk was rejected (empty, duplicate, or from a finished message).
    public static let chunkRejected = Code("chunkRejected")
    /// A chunk index was missing at a boundary; playback went on with the next one.
    public static let chunkGap = Code("chunkGap")
    /// No acceptable path through the graph: the engine cut directly (a counted pop).
    public static let cut = Code("cut")
    /// A requested animation is not available, or too many requests were pending.
    public static let requestDropped = Code("requestDropped")
    /// A frame was drawn without its mouth: its image failed, was rejected, or never came.
    public static let mouthLost = Code("mouthLost")

    /// The identifier.
    public var description: String { rawValue }
  }

  /// What kind of problem.
  public var code: Code
  /// A human explanation.
  public var message: String
  /// The chunk concerned, if any.
  public var chunk: ChunkID?
  /// The overlay frame concerned, within ``chunk``.
  public var frame: Int?

  /// Creates a warning.
  public init(_ code: Code, _ message: String, chunk: ChunkID? = nil, frame: Int? = nil) {
    self.code = code
    self.message = message
    self.chunk = chunk
    self.frame = frame
  }

  /// `code: message [chunk#frame]`.
  public var description: String {
    var text = "\(code): \(message)"
    if let chunk { text += " [\(chunk)\(frame.map { "#\($0)" } ?? "")]" }
    return text
  }
}

/// The result of one tick: the picture decision and the actions for the owner, in order.
public struct TickResult: Hashable, Sendable {
  /// Draw or hold.
  public var plan: FramePlan
  /// Actions to carry out (start audio first, if any, on the tick that draws the frame).
  public var actions: [EngineAction]
}

/// A human-oriented description of the frame on screen, for the debug step mode.
public struct FrameDescription: Hashable, Sendable, CustomStringConvertible {
  /// The engine mode.
  public var mode: EngineMode
  /// The frame on screen, if any.
  public var frame: DrawnFrame?
  /// The last hold reason, if the last tick held.
  public var holdReason: HoldReason?

  /// One line: mode, base animation and index, overlay keys, chunk and frame, reason.
  public var description: String {
    var text = "mode=\(mode.rawValue)"
    if let frame {
      text += " base=\(frame.animation)#\(frame.index)"
      if let chunk = frame.chunk, let index = frame.overlayIndex {
        text += " chunk=\(chunk) frame=\(index)"
      }
      if !frame.overlays.isEmpty { text += " overlays=\(frame.overlays.map(\.key))" }
    } else {
      text += " base=none"
    }
    if let holdReason { text += " hold=\(holdReason)" }
    return text
  }
}
