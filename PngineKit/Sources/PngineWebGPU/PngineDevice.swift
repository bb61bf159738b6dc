import CPngineWGPU
import CWGPU
import Dispatch
import Locking
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
/// next, so each animation, reloaded, continues on it (``PngineRenderDriver`` does this by
/// the player's policy).
///
/// Submits run on the device's own thread, waited for up to ``GPULimits/submitTimeout``
/// (``runBounded(timeout:_:)``). A submit that overruns gives the device up: it counts as lost
/// from then on (``isLost``) without another call into wgpu, and what is released later waits
/// on that thread behind the hung work (``afterWork(_:)``), so no caller ever blocks on it.
public final class PngineDevice: @unchecked Sendable {
  // `@unchecked`: the context is only used inside `lock` (or, for a submit, on `worker` while
  // the caller holds `lock` and waits), and the names are immutable.
  let context: OpaquePointer
  let device: WGPUDevice
  let queue: WGPUQueue
  private let lock = Locked(())
  private let worker = DispatchQueue(label: "PngineDevice.submit")
  private let givenUp = Atomic<Bool>(false)
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

  /// Whether the device was lost (pending callbacks delivered first), or given up after a
  /// submit overran its time (``isGivenUp``).
  public var isLost: Bool {
    isGivenUp || withDevice { pg_gpu_refresh_lost(context) != 0 }
  }

  /// Whether a submit on this device overran ``GPULimits/submitTimeout`` and the device was
  /// given up: its thread may still be inside that work, so nothing else calls into wgpu on it.
  public var isGivenUp: Bool { givenUp.load(ordering: .acquiring) }

  /// Destroys the device, as a driver reset or an unplugged GPU would: every animation on it
  /// fails with ``PngineError/Code/deviceLost`` from its next command. For tests of device
  /// loss and recovery.
  public func destroy() {
    guard !isGivenUp else { return }
    withDevice { pg_gpu_destroy_device(context) }
  }

  /// Runs `work` on the device's thread and waits up to `timeout` for its result; nil when it
  /// overran, and the device is then given up (``isGivenUp``). The work keeps this device (and
  /// whatever it captured) alive until it ends, however long after. Called holding the
  /// device's lock, so the work has the device to itself while it is waited for.
  func runBounded<T: Sendable>(timeout: Duration, _ work: @escaping @Sendable () -> T) -> T? {
    let done = DispatchSemaphore(value: 0)
    let result = Slot<T>()
    worker.async { [self] in
      let value = work()
      result.value.withLock { $0 = value }
      done.signal()
      withExtendedLifetime(self) {}
    }
    let (seconds, attoseconds) = timeout.components
    let nanoseconds = max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
    if done.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds))) == .timedOut {
      givenUp.store(true, ordering: .releasing)
      return nil
    }
    return result.value.withLock { $0.take() }
  }

  /// Runs `body` on the device's thread after whatever work it holds (on a device given up,
  /// once the hung submit ends): releases that must not block their caller.
  func afterWork(_ body: @escaping @Sendable () -> Void) {
    worker.async { [self] in
      body()
      withExtendedLifetime(self) {}
    }
  }

  /// Runs `body` holding the device's lock: the one way into wgpu for everything on this
  /// device.
  func withDevice<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure)
    -> Result
  {
    try lock.withLock { _ throws(Failure) in try body() }
  }
}

/// A result handed from the device's thread to the caller waiting for it.
private final class Slot<T: Sendable>: Sendable {
  let value = Locked<T?>(nil)
}

/// Where animations get their ``PngineDevice``: the one device of the provider, opened on first
/// use, kept for the provider's life, and replaced by a new one once it is lost.
///
/// ``shared`` serves the whole process, and is what ``WebGPUBackend``, ``PngineRenderer`` and
/// ``PngineRenderDriver`` use unless given another. A provider of its own gives a group of
/// animations a device nobody else touches (tests of device loss use one).
public final class PngineDeviceProvider: Sendable {
  /// The process-wide provider.
  public static let shared = PngineDeviceProvider()

  private struct State {
    var device: PngineDevice?
    var opened = 0
  }
  private let state = Locked(State())

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
