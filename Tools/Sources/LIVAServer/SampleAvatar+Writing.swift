import Dispatch
import Foundation
import LIVAMedia
import LIVAProtocol
import Locking

// SampleAvatar: writing a pack's files, drawn on all cores.
extension SampleAvatar {
  /// Writes the pack into `directory` (created if needed; existing files are overwritten),
  /// manifest last, and returns it. Frames are drawn on all cores. `progress` is called with
  /// (frames done, frames in all) from worker threads.
  @discardableResult
  public func write(
    to directory: URL, codec: some ImageCodec = SystemImageCodec(),
    progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil
  ) throws(LIVAServerError) -> AvatarPack {
    let manifest = manifest()
    let jobs = specs.flatMap { spec in (0..<spec.frames).map { (spec, $0) } }
    let state = WriteState()
    let pack = try AvatarPack(root: directory, manifest: manifest)
    DispatchQueue.concurrentPerform(iterations: jobs.count) { index in
      guard !state.failed else { return }
      let (spec, frame) = jobs[index]
      do {
        try writeFrame(spec, frame, into: directory, codec: codec)
        let done = state.finishOne()
        progress?(done, jobs.count)
      } catch {
        state.fail(error)
      }
    }
    if let error = state.error { throw error }
    try Self.write(
      manifest.jsonData(), to: directory.appendingPathComponent(AvatarPack.manifestFilename))
    return pack
  }

  func writeFrame(_ spec: Spec, _ frame: Int, into directory: URL, codec: some ImageCodec)
    throws(LIVAServerError)
  {
    let pose = pose(spec, frame)
    let base = renderer.frame(pose)
    try Self.write(
      Self.encode(base, .png, codec),
      to: directory.appendingPathComponent(AvatarPack.baseFramePath(spec.name, frame: frame)))
    guard spec.speech else { return }
    let rect = renderer.mouthRect(pose)
    for viseme in Viseme.allCases {
      let sprite = renderer.sprite(pose, mouth: .viseme(viseme, smile: pose.smile), rect: rect)
      try Self.write(
        Self.encode(sprite, .webp, codec),
        to: directory.appendingPathComponent(
          AvatarPack.overlayPath(spec.name, frame: frame, viseme: viseme)))
    }
  }

  static func encode(_ image: RGBAImage, _ format: ImageFormat, _ codec: some ImageCodec)
    throws(LIVAServerError) -> Data
  {
    do {
      return try codec.encode(image, as: format)
    } catch {
      throw LIVAServerError(.imageFailure, "cannot encode \(format.rawValue): \(error)")
    }
  }

  static func write(_ data: Data, to url: URL) throws(LIVAServerError) {
    do {
      try FileManager.default.createDirectory(
        at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try data.write(to: url, options: .atomic)
    } catch {
      throw LIVAServerError(
        .ioFailure, "cannot write: \(error.localizedDescription)", location: url.path)
    }
  }
}

/// Progress and the first error of a parallel write.
private final class WriteState: Sendable {
  private let state = Locked<(done: Int, firstError: LIVAServerError?)>((0, nil))

  var failed: Bool { state.withLock { $0.firstError != nil } }
  var error: LIVAServerError? { state.withLock { $0.firstError } }

  func finishOne() -> Int {
    state.withLock {
      $0.done += 1
      return $0.done
    }
  }

  func fail(_ error: any Error) {
    let converted =
      error as? LIVAServerError ?? LIVAServerError(.ioFailure, "\(error)")
    state.withLock { if $0.firstError == nil { $0.firstError = converted } }
  }
}
