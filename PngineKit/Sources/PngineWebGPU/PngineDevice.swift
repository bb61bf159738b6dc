import CPngineWGPU
import CWGPU
import PngineKit
import Synchronization

/// One WebGPU device (instance, adapter, device, queue), shared by every animation that draws
/// with it: a gallery of ten animations opens one device, not ten.
///
/// Get one from a ``PngineDeviceProvider`` (``PngineDeviceProvider/shared`` unless told
/// otherwise); each ``WebGPUBackend`` keeps its own resources, its own command checks and its
/// own GPU memory budget (``GPULimits``), and only the device is common. The device's work is
/// serialized: every backend call that talks to wgpu holds the device's lock, so error scopes
/// (a stack per device) always belong to the call that pushed them, and animations on several
/// threads never interleave inside one another's scopes.
///
/// When the device is lost (a driver reset, a GPU that went away), every animation on it fails
/// with ``PngineError/Code/deviceLost``; the provider then opens a new device for whoever asks
/// next, so each animation, reloaded, continues on it (``PngineHeadlessDriver`` does this by
/// the player's policy).
public final class PngineDevice: @unchecked Sendable {
  // `@unchecked`: the context is only used inside `lock`, and the names are immutable.
  let context: OpaquePointer
  let device: WGPUDevice
  let queue: WGPUQueue
  private let lock = Mutex(())
  /// The adapter, e.g. `llvmpipe (LLVM 15.0.7, 256 bits) (Vulkan)`.
  public let adapterName: String

  /// Opens the default adapter (low power) and a device on a new instance: a device of its
  /// own, for code that wants one outside any provider.
  /// - Throws: ``PngineError/Code/gpuUnavailable`` without an adapter or device.
  public init() throws(PngineError) {
    var message = [CChar](repeating: 0, count: 1024)
    guard let made = pg_gpu_create(&message, message.count) else {
      throw PngineError(.gpuUnavailable, text(message))
    }
    context = made
    device = pg_gpu_device(made)
    queue = pg_gpu_queue(made)
    pg_gpu_adapter_name(made, &message, message.count)
    adapterName = text(message)
  }

  deinit { pg_gpu_free(context) }

  /// Whether the device was lost (pending callbacks delivered first).
  public var isLost: Bool { withDevice { pg_gpu_refresh_lost(context) != 0 } }

  /// Destroys the device, as a driver reset or an unplugged GPU would: every animation on it
  /// fails with ``PngineError/Code/deviceLost`` from its next command. For tests of device
  /// loss and recovery.
  public func destroy() { withDevice { pg_gpu_destroy_device(context) } }

  /// Runs `body` holding the device's lock: the one way into wgpu for everything on this
  /// device.
  func withDevice<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure)
    -> Result
  {
    try lock.withLock { _ throws(Failure) in try body() }
  }
}

/// Where animations get their ``PngineDevice``: the one device of the provider, opened on first
/// use, kept for the provider's life, and replaced by a new one once it is lost.
///
/// ``shared`` serves the whole process, and is what ``WebGPUBackend``, ``PngineRenderer`` and
/// ``PngineHeadlessDriver`` use unless given another. A provider of its own gives a group of
/// animations a device nobody else touches (tests of device loss use one).
public final class PngineDeviceProvider: Sendable {
  /// The process-wide provider.
  public static let shared = PngineDeviceProvider()

  private struct State {
    var device: PngineDevice?
    var opened = 0
  }
  private let state = Mutex(State())

  /// A provider with no device yet.
  public init() {}

  /// The provider's device: the open one, or a new one when there is none yet or it was lost
  /// (animations still holding the lost one keep it until they let go).
  /// - Throws: ``PngineError/Code/gpuUnavailable`` without an adapter or device.
  public func device() throws(PngineError) -> PngineDevice {
    // Opening under the lock: two animations asking at once get the same new device.
    let result: Result<PngineDevice, PngineError> = state.withLock { s in
      if let open = s.device, !open.isLost { return .success(open) }
      s.device = nil
      do throws(PngineError) {
        let made = try PngineDevice()
        s.device = made
        s.opened += 1
        return .success(made)
      } catch {
        return .failure(error)
      }
    }
    return try result.get()
  }

  /// How many devices this provider has opened: 1 while the first lives, one more per loss
  /// recovered from.
  public var devicesOpened: Int { state.withLock { $0.opened } }
}
