#if canImport(AVFoundation) && canImport(QuartzCore)
  import AVFoundation
  import Foundation
  import LIVA
  import LIVAEngine
  import LIVAMedia
  import LIVAPlatform
  import LIVAProtocol
  import Locking
  import QuartzCore

  /// A ``LIVA/AudioOutput`` on AVAudioEngine: each chunk's MP3 is decoded to PCM and scheduled
  /// on one `AVAudioPlayerNode` at the sample time ``LIVAPlatform/AudioTimeline`` decides, and
  /// positions are what is heard, output latency included. Every decision is the timeline's;
  /// this class only carries its actions out.
  public final class AudioEngineOutput: AudioOutput, @unchecked Sendable {
    // @unchecked: `timeline`, `buffers`, `engine`, `player` and `observer` are touched under
    // `lock` only (`perform` takes a snapshot of the engine and node); the AVAudioEngine objects
    // are documented as usable from any thread.
    private var engine = AVAudioEngine()
    private var player = AVAudioPlayerNode()
    private var observer: (any NSObjectProtocol)?
    private let lock = Locked()
    private var timeline: AudioTimeline
    private var buffers: [ChunkID: AVAudioPCMBuffer] = [:]
    private let format: AVAudioFormat
    private let decoding = DispatchQueue(label: "liva.audio.decode", qos: .userInitiated)
    /// How long a chunk may be: its PCM is sized from its MP3 headers before decoding, and a
    /// longer chunk is not decoded (no sound; the mouth goes on).
    private let budget: PCMBudget

    /// Attaches a player node to a new engine and starts it; `outputLatency` is the route's
    /// (``AudioSessionSetup/outputLatency`` on iOS).
    ///
    /// - Parameter budget: the longest chunk decoded (60 s by default).
    public init(outputLatency: Double, sampleRate: Double = 44_100, budget: PCMBudget = PCMBudget())
      throws
    {
      self.budget = budget
      guard let format = AVAudioFormat(standardFormatWithSampleRate: sampleRate, channels: 1)
      else { throw CocoaError(.featureUnsupported) }
      self.format = format
      engine.attach(player)
      engine.connect(player, to: engine.mainMixerNode, format: format)
      try engine.start()
      player.play()
      timeline = AudioTimeline(
        sampleRate: sampleRate, outputLatency: outputLatency, displayTime: CACurrentMediaTime())
      observer = observeConfigurationChanges(of: engine)
    }

    deinit {
      if let observer { NotificationCenter.default.removeObserver(observer) }
    }

    /// A route or sample-rate change stops the engine (`AVAudioEngineConfigurationChange`): it is
    /// restarted and the chunk goes on from where it was heard, as after an interruption.
    private func observeConfigurationChanges(of engine: AVAudioEngine) -> any NSObjectProtocol {
      NotificationCenter.default.addObserver(
        forName: .AVAudioEngineConfigurationChange, object: engine, queue: nil
      ) { [weak self] _ in
        // Not on the notification's own queue: the engine must not be released (nor restarted)
        // inside its handler.
        DispatchQueue.global(qos: .userInitiated).async { [weak self] in
          self?.restartAfterConfigurationChange(at: CACurrentMediaTime())
        }
      }
    }

    private func restartAfterConfigurationChange(at now: Double) {
      self.perform(
        self.lock.withLock { () -> [AudioTimeline.Action] in
          // Interrupted or let go: the engine restarts when that ends.
          guard !self.timeline.interrupted else { return [] }
          return self.timeline.interruptionBegan(at: now)
            + self.timeline.interruptionEnded(at: now, sampleTime: 0)
        })
    }

    /// The media services were reset (`AVAudioSession.mediaServicesWereResetNotification`):
    /// every audio object is gone. A new engine and node are built and started, and the chunk
    /// goes on from where it was heard. (The session's category is the app's to set again:
    /// ``LifecycleObserver`` does.)
    public func mediaServicesWereReset(at time: Double) {
      let actions = lock.withLock { () -> [AudioTimeline.Action] in
        _ = timeline.interruptionBegan(at: time)
        if let observer { NotificationCenter.default.removeObserver(observer) }
        let engine = AVAudioEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: format)
        self.engine = engine
        self.player = player
        observer = observeConfigurationChanges(of: engine)
        return timeline.interruptionEnded(at: time, sampleTime: 0)
      }
      perform(actions)
    }

    /// The audio session is about to be let go (``LIVAPlatform/LifecyclePolicy``'s
    /// `deactivateAudioSession`): the engine stops; the position heard is kept.
    public func sessionWillDeactivate(at time: Double) {
      let engine = lock.withLock { () -> AVAudioEngine in
        _ = timeline.interruptionBegan(at: time)
        return self.engine
      }
      engine.stop()
    }

    /// The audio session is active again: the engine restarts, and a chunk started meanwhile
    /// plays from where it is heard (the mouth waited at its offset).
    public func sessionDidActivate(at time: Double) {
      perform(lock.withLock { timeline.interruptionEnded(at: time, sampleTime: 0) })
    }

    /// Schedules a chunk's audio as the timeline says. Audio not prepared yet is decoded on a
    /// background queue, never on the caller's (the display link's) thread: meanwhile the
    /// timeline holds the position at `offset`, so the mouth waits for the sound.
    public func start(_ chunk: ChunkID, audio: Data, offset: Double, at time: Double) {
      let actions = lock.withLock { () -> [AudioTimeline.Action]? in
        guard let buffer = buffers[chunk] else {
          timeline.startPending(chunk, offset: offset, at: time)
          return nil
        }
        return startLocked(chunk, buffer: buffer, offset: offset, at: time)
      }
      guard let actions else {
        decoding.async { [weak self] in
          guard let self else { return }
          let buffer = Self.decode(audio, to: self.format, budget: self.budget)
          let actions = self.lock.withLock { () -> [AudioTimeline.Action] in
            // Stopped, or another chunk started, while it was decoded: nothing to do.
            guard self.timeline.pendingStart == chunk else { return [] }
            guard let buffer else {
              self.timeline.abandonPending(chunk)  // undecodable: no sound, the mouth goes on
              return []
            }
            self.buffers[chunk] = buffer
            return self.startLocked(chunk, buffer: buffer, offset: offset, at: CACurrentMediaTime())
          }
          self.perform(actions)
        }
        return
      }
      perform(actions)
    }

    /// `lock` held.
    private func startLocked(
      _ chunk: ChunkID, buffer: AVAudioPCMBuffer, offset: Double, at time: Double
    ) -> [AudioTimeline.Action] {
      refreshAnchor()
      let actions = timeline.start(
        chunk, totalFrames: Int64(buffer.frameLength), offset: offset, at: time)
      keepTimelineBuffers()
      return actions
    }

    /// Only the chunks on the timeline or handed over to it keep their PCM.
    private func keepTimelineBuffers() {
      let kept = Set(timeline.segments.map(\.chunk) + timeline.handedOver)
      buffers = buffers.filter { kept.contains($0.key) }
    }

    /// Decodes the next chunk's audio as soon as it is there (on the caller's thread: the
    /// player's event delivery, not the display link) and hands it to the timeline, which
    /// schedules it at the exact sample where the chunk before it ends.
    public func prepare(_ chunk: ChunkID, audio: Data, at time: Double) {
      guard let buffer = Self.decode(audio, to: format, budget: budget) else { return }
      let actions = lock.withLock { () -> [AudioTimeline.Action] in
        buffers[chunk] = buffer
        refreshAnchor()
        let actions = timeline.enqueue(chunk, totalFrames: Int64(buffer.frameLength), at: time)
        keepTimelineBuffers()
        return actions
      }
      perform(actions)
    }

    /// Stops the chunk and drops what is scheduled.
    public func stop(_ chunk: ChunkID, at time: Double) {
      perform(lock.withLock { timeline.stop(chunk, at: time) })
    }

    /// Pauses the player node.
    public func pause(at time: Double) {
      perform(lock.withLock { timeline.pause(at: time) })
    }

    /// Plays the player node again.
    public func resume(at time: Double) {
      perform(lock.withLock { timeline.resume(at: time) })
    }

    /// Where the chunk being heard is at display time `time`.
    public func position(at time: Double) -> AudioClock? {
      lock.withLock {
        refreshAnchor()
        return timeline.position(at: time)
      }
    }

    /// A new route: its output latency.
    public func setOutputLatency(_ latency: Double) {
      lock.withLock { timeline.outputLatency = latency }
    }

    /// The system interrupted the audio (``LIVAPlatform/LifecyclePolicy`` passes it on).
    public func interruptionBegan(at time: Double) {
      perform(lock.withLock { timeline.interruptionBegan(at: time) })
    }

    /// The interruption ended: the engine starts again and the chunk goes on from where it
    /// was heard.
    public func interruptionEnded(at time: Double) {
      perform(lock.withLock { timeline.interruptionEnded(at: time, sampleTime: 0) })
    }

    /// Ties the timeline to the player's clock: `lastRenderTime` gives host and sample time.
    private func refreshAnchor() {
      guard let nodeTime = player.lastRenderTime, nodeTime.isHostTimeValid,
        let playerTime = player.playerTime(forNodeTime: nodeTime)
      else { return }
      timeline.anchor(
        displayTime: AVAudioTime.seconds(forHostTime: nodeTime.hostTime),
        sampleTime: Double(playerTime.sampleTime))
    }

    private func perform(_ actions: [AudioTimeline.Action]) {
      guard !actions.isEmpty else { return }
      let (engine, player) = lock.withLock { (self.engine, self.player) }
      for action in actions {
        switch action {
        case .schedule(let chunk, let at, let skip, let frames):
          guard let source = lock.withLock({ buffers[chunk] }),
            let part = Self.slice(source, skip: skip, frames: frames)
          else { continue }
          let when = AVAudioTime(sampleTime: at, atRate: format.sampleRate)
          player.scheduleBuffer(part, at: when, options: [])
        case .stopPlayer:
          player.stop()
        case .pausePlayer:
          player.pause()
        case .playPlayer:
          // `play()` on a node whose engine is not running raises an Objective-C exception.
          if engine.isRunning { player.play() }
        case .restartEngine:
          player.stop()
          do {
            try engine.start()
            player.play()
          } catch {
            // No sound until the next activation or configuration change restarts it.
          }
        }
      }
    }

    /// The MP3 decoded to PCM in `format` (through a temporary file: AVAudioFile reads files),
    /// its buffers sized by `budget` from the MP3's own frame headers, never from what the file
    /// claims; nil when it is no MP3, longer than the budget, or undecodable.
    private static func decode(_ mp3: Data, to format: AVAudioFormat, budget: PCMBudget)
      -> AVAudioPCMBuffer?
    {
      guard let timing = try? MP3Timing(parsing: mp3),
        let sourceFrames = try? budget.frames(for: timing, at: Double(timing.sampleRate)),
        let outputFrames = try? budget.frames(for: timing, at: format.sampleRate)
      else { return nil }
      let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("liva-\(UUID().uuidString).mp3")
      defer { try? FileManager.default.removeItem(at: url) }
      guard (try? mp3.write(to: url)) != nil,
        let file = try? AVAudioFile(forReading: url),
        let capacity = AVAudioFrameCount(exactly: max(0, min(file.length, Int64(sourceFrames)))),
        let decoded = AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: capacity),
        (try? file.read(into: decoded, frameCount: capacity)) != nil
      else { return nil }
      if decoded.format == format { return decoded }
      guard let converter = AVAudioConverter(from: decoded.format, to: format),
        let convertedCapacity = AVAudioFrameCount(exactly: outputFrames + 1024),
        let converted = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: convertedCapacity)
      else { return nil }
      // The input block runs during `convert`, on this thread: one buffer, then the end.
      final class Once: @unchecked Sendable { var given = false }
      let once = Once()
      nonisolated(unsafe) let input = decoded
      let status = converter.convert(to: converted, error: nil) { _, state in
        if once.given {
          state.pointee = .endOfStream
          return nil
        }
        once.given = true
        state.pointee = .haveData
        return input
      }
      return status == .error ? nil : converted
    }

    /// `frames` frames of `buffer` from frame `skip`.
    private static func slice(_ buffer: AVAudioPCMBuffer, skip: Int64, frames: Int64)
      -> AVAudioPCMBuffer?
    {
      guard skip > 0 else { return buffer }
      guard skip + frames <= Int64(buffer.frameLength),
        let count = AVAudioFrameCount(exactly: frames),
        let part = AVAudioPCMBuffer(pcmFormat: buffer.format, frameCapacity: count),
        let source = buffer.floatChannelData, let target = part.floatChannelData
      else { return nil }
      for channel in 0..<Int(buffer.format.channelCount) {
        target[channel].update(from: source[channel] + Int(skip), count: Int(frames))
      }
      part.frameLength = count
      return part
    }
  }
#endif
