import Foundation
import LIVAProtocol

/// The store's playback forms: the forms read (at most ``BaseFrameStore/playbackFormLimit``,
/// least recently used dropped first), one decoder reused for all of them (its pictures are
/// most of a decoder's memory: ~6 MB at 1280×768, kept by the allocator even after a decoder
/// is closed, so the store keeps one rather than opening one per animation), and the versions
/// known to have no usable form.
struct PlaybackForms {
  var forms: [Int: PlaybackForm] = [:]
  /// Version ids of ``forms``, least recently used first.
  var order: [Int] = []
  /// The decoder when no thread is using it, and its picture size.
  var decoder: (any VideoFrameDecoder)?
  var decoderSize: (width: Int, height: Int)?
  /// The version and frame the decoder decoded last.
  var position: (version: Int, frame: Int)?
  /// Versions with no form on disk (or a damaged one, deleted): decoded from their images.
  var missing: Set<Int> = []
  /// Versions that cannot have a form (frames of different sizes, odd sizes, transparency).
  var refused: Set<Int> = []
  /// Animations whose form is being made now.
  var making: Set<AnimationName> = []
}

// BaseFrameStore: the playback form (base frames as H.264, made once after a download).
extension BaseFrameStore {
  /// The playback form's file in a version directory.
  static let playbackFormFile = "playback.h264v"
  /// Frames between key frames: a jump into an animation decodes at most this many frames.
  public static let playbackKeyInterval = 10
  /// x264's constant quality for the form (lower is better): measured at 1280×768, 45 dB PSNR
  /// on flat art and 39 dB on a photographic avatar (its noise is not kept).
  public static let playbackQuality = 18
  /// The least fidelity (``PlaybackForm/fidelity(of:to:)``, dB) at which frame 0 and the last
  /// frame of a form just made must decode against their images, or the form is not kept.
  /// The form measures 39–45 dB on avatars; a codec that misbehaves (channels swapped, rows
  /// misread, a predicted frame lost) measures under 20.
  public static let playbackMinimumFidelity = 28.0
  /// Forms kept read (the one playing and the next: a few hundred KB each).
  static let playbackFormLimit = 1

  func playbackFormURL(_ animation: AnimationName, _ directory: String) -> URL {
    self.directory(animation).appendingPathComponent(directory, isDirectory: true)
      .appendingPathComponent(Self.playbackFormFile, isDirectory: false)
  }

  /// Whether `animation`'s complete version has a playback form on disk.
  public func hasPlaybackForm(_ animation: AnimationName) -> Bool {
    guard let directory = state.withLock({ $0.animations[animation]?.current?.directory }) else {
      return false
    }
    return FileManager.default.fileExists(atPath: playbackFormURL(animation, directory).path)
  }

  /// Makes the playback form of `animation`'s complete version unless it has one: decodes
  /// every frame from its image, encodes them as H.264 and writes `playback.h264v` beside
  /// them (its bytes count with the version's). Synchronous and CPU-heavy (~20–40 ms a frame
  /// at 1280×768): call it on a worker; the store does after each download when
  /// `makesPlaybackForms` is set.
  ///
  /// - Returns: whether the version has a form now: false without a video codec, or when its
  ///   frames cannot have one (sizes that differ or are odd, any transparent pixel); those
  ///   play from their images.
  /// - Throws: when the animation is not cached, a frame cannot be read or decoded, the codec
  ///   or the disk fails, or frame 0 or the last frame decodes from the form below
  ///   ``playbackMinimumFidelity`` against its image; the version then plays from its images
  ///   (counted in ``Statistics/playbackFormFailures``).
  @discardableResult
  public func makePlaybackForm(_ animation: AnimationName) throws(LIVAMediaError) -> Bool {
    guard videoCodec != nil else { return false }
    guard let entry = state.withLock({ $0.animations[animation]?.current }) else {
      throw LIVAMediaError(
        .invalidArgument, "\(animation) is not cached", source: animation.rawValue)
    }
    let url = playbackFormURL(animation, entry.directory)
    // Checked when it is read (a damaged one is deleted then, and made again here).
    if FileManager.default.fileExists(atPath: url.path) { return true }
    let start = playback.withLock { forms -> Bool in
      guard !forms.refused.contains(entry.id) else { return false }
      return forms.making.insert(animation).inserted
    }
    guard start else { return false }
    var made = false
    defer {
      playback.withLock { forms in
        forms.making.remove(animation)
        // A version whose form could not be made (a damaged image, a codec failure) is not
        // tried again by this store: each try decodes every frame.
        if !made { forms.refused.insert(entry.id) }
      }
    }
    let form: PlaybackForm
    do throws(LIVAMediaError) {
      guard let encoded = try encodeForm(animation, entry) else { return false }
      form = encoded
    } catch {
      state.withLock { state in
        state.statistics.playbackFormFailures += 1
        state.statistics.lastPlaybackFormError = error
      }
      throw error
    }
    let previous = Self.fileSize(url)
    try Self.writeAtomically(form.bytes, to: url)
    state.withLock { state in
      guard state.animations[animation]?.current?.id == entry.id else { return }
      state.animations[animation]?.current?.bytes += form.bytes.count - previous
      state.statistics.diskBytes += form.bytes.count - previous
    }
    playback.withLock { _ = $0.missing.remove(entry.id) }
    made = true
    return true
  }

  /// The form of `entry`'s frames, checked against them; nil when they cannot have one.
  private func encodeForm(_ animation: AnimationName, _ entry: Version)
    throws(LIVAMediaError) -> PlaybackForm?
  {
    guard let videoCodec else { return nil }
    var encoder: (any VideoFrameEncoder)?
    var size: (width: Int, height: Int)?
    var last: RGBAImage?
    for index in 0..<entry.frameCount {
      let image = try frameImage(animation, entry, index)
      if size == nil { size = (image.width, image.height) }
      guard image.width == size?.width, image.height == size?.height,
        image.width % 2 == 0, image.height % 2 == 0, Self.isOpaque(image)
      else { return nil }
      if encoder == nil {
        encoder = try videoCodec.makeEncoder(
          width: image.width, height: image.height, keyInterval: Self.playbackKeyInterval,
          crf: Self.playbackQuality)
      }
      try encoder?.push(image)
      if index == entry.frameCount - 1 { last = image }
    }
    guard let size, let last, let packets = try encoder?.finish() else { return nil }
    encoder = nil  // its buffers go before the check decodes
    let form = try PlaybackForm(
      width: size.width, height: size.height, keyInterval: Self.playbackKeyInterval,
      packets: packets)
    // Frame 0 (a key frame) and the last (after the most predicted frames) decoded back.
    let decoder = try videoCodec.makeDecoder(width: form.width, height: form.height)
    var decoded: Int?
    for index in Set([0, form.frameCount - 1]).sorted() {
      let picture = try form.decode(index, after: &decoded, with: decoder)
      let image = index == 0 ? try frameImage(animation, entry, 0) : last
      let fidelity = picture.map { PlaybackForm.fidelity(of: $0, to: image) } ?? 0
      guard fidelity >= Self.playbackMinimumFidelity else {
        throw LIVAMediaError(
          .corruptData,
          "playback form: frame \(index) decodes at \(fidelity) dB against its image (at least \(Self.playbackMinimumFidelity))",
          source: animation.rawValue)
      }
    }
    return form
  }

  /// Frame `index` of `entry` decoded from its image.
  private func frameImage(_ animation: AnimationName, _ entry: Version, _ index: Int)
    throws(LIVAMediaError) -> RGBAImage
  {
    let frameURL = frameURL(animation, entry.directory, index)
    guard let data = try? Data(contentsOf: frameURL) else {
      throw LIVAMediaError(.ioFailure, "cannot read frame \(index)", source: frameURL.path)
    }
    return try codec.decode(data)
  }

  /// Makes the playback form of every complete animation without one, in
  /// ``priorityOrder``; failures are skipped (those animations play from their images).
  /// Returns the animations that have a form now.
  @discardableResult
  public func makePlaybackForms() -> [AnimationName] {
    let names = state.withLock { state in
      state.animations.compactMap { $0.value.current == nil ? nil : $0.key }
    }
    let ordered =
      Self.priorityOrder.filter(names.contains)
      + names.filter { !Self.priorityOrder.contains($0) }.sorted { $0.rawValue < $1.rawValue }
    return ordered.filter { (try? makePlaybackForm($0)) == true }
  }

  /// Makes forms on the store's own background queue (after a download, and for what an
  /// earlier session left without one).
  func makePlaybackFormsInBackground() {
    guard makesPlaybackForms, videoCodec != nil else { return }
    formQueue.async { [weak self] in
      // The images decoded and the encoder's buffers go back to the system afterwards.
      if self?.makePlaybackForms().isEmpty == false { Self.returnFreedMemory() }
    }
  }

  static func isOpaque(_ image: RGBAImage) -> Bool {
    image.pixels.withUnsafeBufferPointer { pixels in
      var all: UInt8 = 0xFF
      var index = 3
      while index < pixels.count {
        all &= pixels[index]
        index += 4
      }
      return all == 0xFF
    }
  }

  /// Frame `index` decoded from the version's playback form; nil when it has none or the
  /// form is damaged (then deleted, and the frame comes from its image).
  func playbackFrame(_ index: Int, of animation: AnimationName, version entry: Version)
    -> RGBAImage?
  {
    guard let videoCodec else { return nil }
    // The form, and the decoder with where it is, taken out while this thread decodes.
    let taken = playback.withLock {
      forms -> (known: Bool, form: PlaybackForm?, decoder: (any VideoFrameDecoder)?, last: Int?)
      in
      if forms.missing.contains(entry.id) || forms.refused.contains(entry.id) {
        return (true, nil, nil, nil)
      }
      let form = forms.forms[entry.id]
      let decoder = forms.decoder
      forms.decoder = nil
      let last = forms.position?.version == entry.id ? forms.position?.frame : nil
      return (false, form, decoder, last)
    }
    if taken.known { return nil }
    let url = playbackFormURL(animation, entry.directory)
    var form = taken.form
    var decoder = taken.decoder
    var last = taken.last
    do throws(LIVAMediaError) {
      if form == nil {
        guard let data = try? Data(contentsOf: url) else {
          playback.withLock { forms in
            forms.missing.insert(entry.id)
            if forms.decoder == nil { forms.decoder = decoder }
          }
          return nil
        }
        let read = try PlaybackForm(parsing: data)
        guard read.frameCount == entry.frameCount else {
          throw LIVAMediaError(.corruptData, "playback form: \(read.frameCount) frames")
        }
        form = read
      }
      guard let form else { return nil }
      // A decoder of another picture size cannot be reused.
      if let size = playback.withLock({ $0.decoderSize }), size != (form.width, form.height) {
        decoder = nil
      }
      if decoder == nil {
        decoder = try videoCodec.makeDecoder(width: form.width, height: form.height)
        last = nil
      }
      guard let decoder else { return nil }
      let image = try form.decode(index, after: &last, with: decoder) {
        // Room first: the frame this decode pushes out leaves its buffer for it.
        decoded.makeRoom(for: form.width * form.height * 4)
        return spareBuffers.withLock { $0.popLast() }
      }
      playback.withLock { forms in
        forms.forms[entry.id] = form
        forms.order.removeAll { $0 == entry.id }
        forms.order.append(entry.id)
        while forms.order.count > Self.playbackFormLimit {
          forms.forms[forms.order.removeFirst()] = nil
        }
        // Put back unless another thread's decoder went back first (this one is then closed).
        if forms.decoder == nil {
          forms.decoder = decoder
          forms.decoderSize = (form.width, form.height)
          forms.position = last.map { (entry.id, $0) }
        }
      }
      state.withLock { $0.statistics.playbackFrames += 1 }
      return image
    } catch {
      // The decoder may be mid-stream in a damaged one: it is dropped.
      playback.withLock { forms in
        if forms.decoder == nil { forms.position = nil }
      }
      formFailed(url, version: entry.id, error)
      return nil
    }
  }

  /// A damaged form: deleted (its bytes uncounted), the version played from its images.
  func formFailed(_ url: URL, version id: Int, _ error: LIVAMediaError) {
    let bytes = Self.fileSize(url)
    try? FileManager.default.removeItem(at: url)
    playback.withLock { _ = $0.missing.insert(id) }
    state.withLock { state in
      state.statistics.playbackFormFailures += 1
      state.statistics.lastPlaybackFormError = error
      for (name, entry) in state.animations where entry.current?.id == id {
        state.animations[name]?.current?.bytes -= bytes
        state.statistics.diskBytes -= bytes
      }
    }
  }

  /// Forgets a replaced or removed version's form.
  func forgetPlayback(version id: Int) {
    playback.withLock { forms in
      forms.forms[id] = nil
      forms.order.removeAll { $0 == id }
      if forms.position?.version == id { forms.position = nil }
      forms.missing.remove(id)
      forms.refused.remove(id)
    }
  }
}
