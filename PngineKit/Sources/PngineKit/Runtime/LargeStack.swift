#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Runs work on a thread of its own whose stack is sized for it, and waits for it.
///
/// The shader compiler inside wgpu-native (naga) recurses over a shader's structure: its
/// parser over brackets and template lists, its lowerer over expression trees, its validator
/// and SPIR-V writer over nested blocks. ``ShaderSource`` bounds each of those (see
/// ``GPULimits``), and their worst case at the bounds was measured to need a few hundred KiB
/// of stack. The thread calling the backend may have far less (512 KiB is common for an Apple
/// secondary thread, a Swift concurrency thread has 512 KiB to 1 MiB), so shader modules and
/// pipelines are made here, on ``GPULimits/shaderCompilerStackBytes``, whatever thread asked
/// (reserved address space: only the pages used are committed).
package enum LargeStack {
  /// Runs `body` on a new thread with a stack of `bytes` and returns its result once the
  /// thread ended; nil when no thread could be started (the system is out of threads or
  /// memory), so the caller can refuse the work rather than run it on a small stack.
  package static func run<T>(stackBytes bytes: Int, _ body: () -> T) -> T? {
    withoutActuallyEscaping(body) { body in
      var result: T?
      let job = Job { result = body() }
      let context = Unmanaged.passRetained(job)
      var attributes = pthread_attr_t()
      guard pthread_attr_init(&attributes) == 0 else {
        context.release()
        return nil
      }
      defer { pthread_attr_destroy(&attributes) }
      guard pthread_attr_setstacksize(&attributes, bytes) == 0 else {
        context.release()
        return nil
      }
      #if canImport(Darwin)
        var thread: pthread_t?
      #else
        var thread = pthread_t()
      #endif
      let started = pthread_create(
        &thread, &attributes,
        { raw in
          #if canImport(Darwin)
            let job = Unmanaged<Job>.fromOpaque(raw).takeRetainedValue()
          #else
            let job = Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue()
          #endif
          job.work()
          return nil
        }, context.toOpaque())
      guard started == 0 else {
        context.release()
        return nil
      }
      #if canImport(Darwin)
        if let thread { pthread_join(thread, nil) }
      #else
        pthread_join(thread, nil)
      #endif
      return result
    }
  }

  /// The work a thread runs. The caller waits for the thread before it returns, so the
  /// non-escaping work outlives it.
  private final class Job: @unchecked Sendable {
    let work: () -> Void
    init(_ work: @escaping () -> Void) { self.work = work }
  }
}
