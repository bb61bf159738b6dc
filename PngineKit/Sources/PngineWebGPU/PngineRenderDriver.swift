import PngineKit

/// A thin driver that carries out ``PnginePlayer``'s actions with a ``PngineRenderer``:
/// `load` makes the renderer, `render` draws and reads back a frame (or, made with a
/// ``SurfaceSource``, draws it into the surface and presents it), `unload` drops it. The
/// player stays the pure state machine; the driver only forwards the clock the caller gives
/// it (`now`, in seconds) and reports each frame's success, so a failing GPU (a lost device)
/// makes the player pause by its policy (``PnginePlayer/Configuration/maximumConsecutiveFailures``).
/// On a surface, a frame the surface had no texture for (``SurfaceFrame/skipped(_:)``) counts
/// as a failed frame too, so a surface that stays lost pauses the player the same way.
///
/// The player's frame number and the executor's own frame counter advance together while
/// playing; a stop starts both over (the animation is reloaded: its executor comes warm from
/// the pool), a seek moves time only. Not `Sendable` (the renderer is
/// confined to its owner).
public final class PngineRenderDriver {
  /// The state machine.
  public private(set) var player: PnginePlayer
  /// The renderer, once loaded.
  public private(set) var renderer: PngineRenderer?
  /// The last frame read back.
  public private(set) var lastImage: RGBAImage?
  /// The last error (load or frame).
  public private(set) var lastError: PngineError?
  /// The most recent actions the player asked for, oldest first: at most
  /// ``actionHistoryLimit`` of them, so a driver that runs for hours holds a few kilobytes.
  public private(set) var actions: [PnginePlayer.Action] = []
  /// How many of the latest actions ``actions`` keeps (256).
  public static let actionHistoryLimit = 256
  /// Frames drawn successfully.
  public private(set) var framesRendered = 0
  /// On a surface: the last frame's outcome (presented or skipped, with the surface status).
  public private(set) var lastSurfaceFrame: SurfaceFrame?
  /// On a surface: frames skipped because the surface had no texture.
  public private(set) var framesSkipped = 0
  /// The pointer the animation sees (`write_pointer_uniform`): set it from touches or clicks.
  /// Each frame that runs uses up its movement and wheel steps; it outlives a reload.
  public var pointer = PointerState()

  /// The frame on screen as an image: the last frame read back (offscreen drivers; a surface
  /// presents without reading back, so it has none).
  public var snapshot: RGBAImage? { lastImage }

  /// ``snapshot`` as a PNG file (RGBA, 8 bits).
  public func snapshotPNG() -> [UInt8]? { lastImage?.pngData() }

  /// Called with every error, as it happens: a load that failed, a frame the executor or the
  /// GPU refused (a lost device, a budget, a trap). On the driver's thread.
  public var onError: ((PngineError) -> Void)?
  /// Called when an animation that does not loop forever reaches its end
  /// (``PnginePlayer/Action/finished``). On the driver's thread.
  public var onFinished: (() -> Void)?

  private let png: [UInt8]
  private var width: UInt32
  private var height: UInt32
  private let surface: SurfaceSource?
  private let transparent: Bool
  private let devices: PngineDeviceProvider

  /// A driver for `png` drawn at `width × height`; nothing loaded until ``load(now:)``.
  /// `devices`: where the GPU device comes from (a load, and a reload after a lost device,
  /// ask it again; by default the device shared by every animation in the process).
  public convenience init(
    png: [UInt8], width: UInt32, height: UInt32,
    configuration: PnginePlayer.Configuration = PnginePlayer.Configuration(),
    devices: PngineDeviceProvider = .shared
  ) {
    self.init(
      png: png, on: nil, width: width, height: height, configuration: configuration,
      devices: devices)
  }

  /// A driver for `png` presented on `surface` at `width × height` (a `CAMetalLayer` on
  /// Apple, an X11 window on Linux); nothing loaded until ``load(now:)``. Its frames are
  /// presented, not read back (``lastImage`` stays `nil`). `transparent`: see
  /// ``PngineRenderer/init(png:surface:width:height:configuration:limits:transparent:devices:)``.
  /// `devices`: as for an offscreen driver.
  public convenience init(
    png: [UInt8], surface: SurfaceSource, width: UInt32, height: UInt32,
    configuration: PnginePlayer.Configuration = PnginePlayer.Configuration(),
    transparent: Bool = false, devices: PngineDeviceProvider = .shared
  ) {
    self.init(
      png: png, on: surface, width: width, height: height, configuration: configuration,
      transparent: transparent, devices: devices)
  }

  private init(
    png: [UInt8], on surface: SurfaceSource?, width: UInt32, height: UInt32,
    configuration: PnginePlayer.Configuration, transparent: Bool = false,
    devices: PngineDeviceProvider
  ) {
    self.devices = devices
    self.png = png
    self.width = width
    self.height = height
    self.surface = surface
    self.transparent = transparent
    player = PnginePlayer(configuration: configuration)
  }

  /// The surface's layer or window changed size: the loaded renderer reconfigures (see
  /// ``PngineRenderer/resize(width:height:)``) and a later load uses the new size.
  /// - Throws: what the resize throws (an offscreen driver: ``PngineError/Code/invalidArgument``).
  public func resize(width: UInt32, height: UInt32) throws(PngineError) {
    guard surface != nil else {
      throw PngineError(
        .invalidArgument, "an offscreen canvas has a fixed size", location: .init(call: "resize"))
    }
    try renderer?.resize(width: width, height: height)
    self.width = width
    self.height = height
  }

  /// Changes the player's settings (speed, frame rate, background behaviour…); they take
  /// effect on the next tick.
  public func configure(_ change: (inout PnginePlayer.Configuration) -> Void) {
    change(&player.configuration)
  }

  /// Loads (and with autoplay, plays).
  public func load(now: Double) { perform(player.load(now: now), now: now) }
  /// A display tick.
  public func tick(now: Double) { perform(player.tick(now: now), now: now) }
  /// Plays.
  public func play(now: Double) { perform(player.play(now: now), now: now) }
  /// The system's Reduce Motion setting changed (``PnginePlayer/reduceMotionChanged(_:now:)``).
  public func reduceMotionChanged(_ on: Bool, now: Double) {
    perform(player.reduceMotionChanged(on, now: now), now: now)
  }
  /// Low Power mode changed (``PnginePlayer/lowPowerChanged(_:now:)``).
  public func lowPowerChanged(_ on: Bool, now: Double) {
    perform(player.lowPowerChanged(on, now: now), now: now)
  }
  /// Stops: back to time 0 (``PnginePlayer/stop(now:)``).
  public func stop(now: Double) { perform(player.stop(now: now), now: now) }
  /// Jumps to animation time `time` (``PnginePlayer/seek(to:now:)``).
  public func seek(to time: Double, now: Double) {
    perform(player.seek(to: time, now: now), now: now)
  }
  /// Jumps to `progress` (0 to 1) of the duration (``PnginePlayer/seek(toProgress:now:)``).
  public func seek(toProgress progress: Double, now: Double) {
    perform(player.seek(toProgress: progress, now: now), now: now)
  }
  /// Pauses.
  public func pause(now: Double) { perform(player.pause(now: now), now: now) }
  /// The app went to the background.
  public func enterBackground(now: Double) { perform(player.enterBackground(now: now), now: now) }
  /// The app came back.
  public func enterForeground(now: Double) { perform(player.enterForeground(now: now), now: now) }
  /// Unloads.
  public func unload(now: Double) { perform(player.unload(now: now), now: now) }
  /// The system is short of memory.
  public func memoryWarning(now: Double) { perform(player.memoryWarning(now: now), now: now) }

  /// What ``PnginePlayer/Action/purge(_:)`` frees: the executor pool's idle executors.
  /// Replaceable for tests and for apps with a pool of their own.
  public var purgeExecutors: () -> Void = { PngineExecutorPool.shared.purge() }

  private func makeRenderer() throws(PngineError) -> PngineRenderer {
    if let surface {
      return try PngineRenderer(
        png: png, surface: surface, width: width, height: height,
        limits: player.configuration.gpuLimits, transparent: transparent, devices: devices)
    }
    return try PngineRenderer(
      png: png, width: width, height: height, limits: player.configuration.gpuLimits,
      devices: devices)
  }

  private func perform(_ list: [PnginePlayer.Action], now: Double) {
    for action in list {
      if actions.count == Self.actionHistoryLimit { actions.removeFirst() }
      actions.append(action)
      switch action {
      case .load, .reload:
        do {
          renderer = nil  // a reload: the old executor goes back to the pool first
          renderer = try makeRenderer()
          if action == .load { perform(player.loaded(now: now), now: now) }
        } catch {
          lastError = error
          onError?(error)
          perform(player.loadFailed(error.description, now: now), now: now)
        }
      case .render(let time, _):
        do throws(PngineError) {
          guard let renderer else {
            throw PngineError(
              .notInitialized, "no renderer is loaded", location: .init(call: "frame"))
          }
          if surface != nil {
            let frame = try renderer.present(time: Float(time), pointer: pointer)
            lastSurfaceFrame = frame
            if case .skipped(let status) = frame {
              framesSkipped += 1
              perform(
                player.frameFinished(
                  succeeded: false, error: "the surface had no texture (\(status)): frame skipped",
                  now: now), now: now)
              continue
            }
          } else {
            lastImage = try renderer.render(time: Float(time), pointer: pointer)
          }
          pointer.frameConsumed()  // the frame ran: its movement and wheel steps are used
          framesRendered += 1
          perform(player.frameFinished(succeeded: true, now: now), now: now)
        } catch {
          lastError = error
          onError?(error)
          if error.code == .gpuTimeout {
            // The frame's work overran: the same frame would again, so no reload.
            perform(player.frameTimedOut(error: error.description, now: now), now: now)
            continue
          }
          if error.code == .deviceLost {
            // A new device, the animation made again on it (the player decides how often).
            perform(player.deviceLost(error: error.description, now: now), now: now)
            continue
          }
          perform(
            player.frameFinished(succeeded: false, error: error.description, now: now), now: now)
        }
      case .unload:
        renderer = nil
      case .purge:
        // Both levels: the idle executors go (a later load instantiates again); the loaded
        // animation and its GPU resources stay, so nothing visible changes.
        purgeExecutors()
      case .finished:
        onFinished?()
      case .autoPaused:
        break
      }
    }
  }
}
