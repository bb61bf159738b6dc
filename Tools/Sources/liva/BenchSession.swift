import ArgumentParser
import Foundation
import LIVA
import LIVAEngine
import LIVAMedia
import LIVAProtocol
import LIVARecording
import LIVAServer
import LIVATestSupport
import SocketIO

/// `liva bench-session`: the SDK alone through a long speech session on a virtual clock, with
/// its resident memory sampled as it goes.
struct BenchSession: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "bench-session",
    abstract:
      "Benchmark: a speech session of the SDK alone on a virtual clock (60 s at 1280x768 by default): resident memory every 5 s, time to first frame with a warm cache.",
    discussion: """
      The sample avatar is drawn once into $LIVA_CACHE and copied into a client cache, so the
      session starts warm. The player then runs at 60 Hz of virtual time, as fast as it can;
      every speech event goes through the Socket.IO packet codec and LIVA's decoder, as it
      would from a socket. Messages follow each other with half a second of idle between.
      Decodes run inline (on the tick's thread) so that they keep up with virtual time.
      Budgets (--check): resident memory within ±5 % of its mean after the first 10 s and
      growing at most 4 MiB a minute over the second half (least-squares slope), and in
      sessions of 3 minutes or more the C heap in use at most 0.5 MiB a minute; peak resident
      memory <= 80 MiB, time to first frame <= 16 ms (one frame at 60 Hz). --peak-budget and
      --first-frame-budget set those two otherwise (to try a budget, or to see --check fail).
      """)

  @Option(help: "Frame size of the sample avatar.")
  var size = FrameSize(width: 1280, height: 768)

  @Option(help: "Length of the session, in seconds of virtual time.")
  var duration = 60.0

  @Option(help: "Seconds of virtual time between memory samples.")
  var sampleEvery = 5.0

  @Flag(
    help:
      "Use the photographic variant of the sample avatar (camera-like grain: compresses as a filmed avatar does)."
  )
  var photographic = false

  @Flag(
    help:
      "Decode every base frame from its image, without the H.264 playback form (the SDK before it)."
  )
  var imagesOnly = false

  @Option(help: "Memory for decoded base frames, in MiB; default: the SDK's.")
  var frameBudget: Int?

  @Option(help: "Where to write the results as JSON.")
  var output: String?

  @Flag(help: "Exit with an error when a budget is missed.")
  var check = false

  @Option(help: "The budget on peak resident memory, in MiB.")
  var peakBudget = 80.0

  @Option(help: "The budget on the time to first frame, in milliseconds.")
  var firstFrameBudget = 16.0

  func run() async throws {
    let cacheRoot = defaultCacheRoot()
    progress(
      "liva bench-session: \(size.width)×\(size.height)\(photographic ? " photographic" : ""), \(Int(duration)) s"
    )
    let pack = try sampleAvatar(size: size, photographic: photographic, cacheRoot: cacheRoot)
    let videoCodec = imagesOnly ? nil : BaseFrameStore.systemVideoCodec
    let clientRoot = cacheRoot.appendingPathComponent(
      "bench-client-\(size)\(photographic ? "-photographic" : "")")
    try fillClientCache(from: pack, at: clientRoot, videoCodec: videoCodec)
    let library = try UtteranceLibrary.bundled()

    var configuration = LIVAPlayer.Configuration()
    if let frameBudget { configuration.baseFrameBudget = frameBudget << 20 }
    var startUps: [Double] = []
    var storeOpens: [Double] = []
    for _ in 0..<5 {
      let run = try await timeToFirstFrame(
        configuration: configuration, cache: clientRoot, videoCodec: videoCodec)
      startUps.append(run.firstFrame)
      storeOpens.append(run.storeOpen)
    }

    let before = ResidentMemory.currentMiB()
    let store = try BaseFrameStore(
      root: clientRoot, memoryByteLimit: configuration.baseFrameBudget, videoCodec: videoCodec)
    let link = VirtualDisplayLink()
    let audio = HeadlessAudioOutput(keepsAudio: false)
    let player = LIVAPlayer(
      configuration: configuration, baseFrames: store, audio: audio,
      surface: CallbackSurface(retaining: 0) { _ in }, decodeScheduler: InlineDecodeScheduler())
    link.start { player.tick(now: $0) }

    var samples: [BenchSessionResult.Sample] = []
    var nextSample = 0.0
    var messages = 0
    var idleSince: Double? = 0
    var packets = SocketIOPacketDecoder()
    let tickLength = 1.0 / 60
    let ticks = Int((duration / tickLength).rounded())
    // CPU time (user + system, every thread) from 10 s of virtual time to the end.
    var cpuFrom: (seconds: Double, at: Double)?
    for tick in 0...ticks {
      let now = Double(tick) * tickLength
      if cpuFrom == nil, now >= min(10, duration / 2) { cpuFrom = (ProcessCPU.seconds(), now) }
      link.tick(at: now)
      if player.mode == .idle {
        if idleSince == nil { idleSince = now }
      } else {
        idleSince = nil
      }
      // A new message half a second after the last one ended (1 s after the start).
      if let since = idleSince, now - since >= (messages == 0 ? 1 : 0.5), now < duration - 3 {
        let utterance = library.utterances[messages % library.utterances.count]
        let plan = try SpeechPlanner(pack: pack).plan(
          utterance, firstMasterChunkIndex: messages * 100)
        var events = plan.chunks.flatMap { $0.events(encoding: .base64) }
        events.append(.audioEnd)
        for event in events {
          for decoded in try throughTheWire(event, decoder: &packets) { player.handle(decoded) }
        }
        messages += 1
        idleSince = nil
      }
      if now + 1e-9 >= nextSample {
        samples.append(
          .init(
            time: now, residentMiB: ResidentMemory.currentMiB(),
            anonymousMiB: ResidentMemory.currentMiB(field: "RssAnon:"),
            heapMiB: Heap.allocatedBytes().map { Double($0) / 1_048_576 },
            baseFramesMiB: Double(store.statistics.memoryBytes) / 1_048_576,
            overlaysMiB: Double(player.overlays.statistics.bytes) / 1_048_576))
        nextSample += sampleEvery
      }
    }
    let cpuPerSecond = cpuFrom.map { from in
      (ProcessCPU.seconds() - from.seconds) / max(1e-9, duration - from.at) * 1000
    }
    link.stop()
    let metrics = player.metrics
    let result = BenchSessionResult(
      size: "\(size)", photographic: photographic, duration: duration, messages: messages,
      samples: samples, cpuMillisecondsPerSecond: cpuPerSecond ?? 0,
      baseFrameBytes: store.statistics.diskBytes, playbackForm: videoCodec != nil,
      playbackFrames: store.statistics.playbackFrames,
      baselineMiB: before, peakMiB: SessionReport.peakMemoryMiB(),
      timeToFirstFrameMilliseconds: startUps.sorted()[startUps.count / 2],
      timeToFirstFrameRuns: startUps,
      storeOpenMilliseconds: storeOpens.sorted()[storeOpens.count / 2],
      framesPresented: metrics.framesPresented, baseFrameMisses: metrics.baseFrameMisses,
      overlayFramesDrawn: metrics.engine.overlayFramesDrawn, pops: metrics.engine.pops,
      desyncs: metrics.engine.desyncs, framePoolAllocations: player.framePoolAllocations,
      peakBudgetMiB: peakBudget, timeToFirstFrameBudgetMilliseconds: firstFrameBudget)
    print(result.summary)
    if let output {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
      try encoder.encode(result).write(to: URL(fileURLWithPath: output))
    }
    if check, !result.failures.isEmpty {
      throw ValidationError("budgets missed: " + result.failures.joined(separator: "; "))
    }
  }

  /// Milliseconds from creating the cache's store and a player (decoding on worker threads, as
  /// in an app) to its first frame on a real 60 Hz display clock, and the part of them opening
  /// the store took.
  private func timeToFirstFrame(
    configuration: LIVAPlayer.Configuration, cache: URL, videoCodec: (any VideoFrameCodec)?
  ) async throws -> (firstFrame: Double, storeOpen: Double) {
    let link = RealTimeDisplayLink(hz: 60)
    let created = ContinuousClock.now
    let store = try BaseFrameStore(
      root: cache, memoryByteLimit: configuration.baseFrameBudget, videoCodec: videoCodec)
    let opened = ContinuousClock.now - created
    let player = LIVAPlayer(
      configuration: configuration, baseFrames: store,
      audio: HeadlessAudioOutput(keepsAudio: false),
      surface: CallbackSurface(retaining: 0) { _ in }, createdAt: created)
    link.start { player.tick(now: $0) }
    defer { link.stop() }
    _ = await player.changes.wait(timeout: .seconds(5)) {
      player.metrics.timeToFirstFrame != nil
    }
    guard let seconds = player.metrics.timeToFirstFrame else {
      throw ValidationError("no first frame within 5 s")
    }
    // The next run starts on a quiet machine: this player's window finishes decoding first.
    link.stop()
    _ = await player.changes.wait(timeout: .seconds(5)) { player.isPreloadIdle }
    return (seconds * 1000, Double(opened.components.attoseconds) / 1e15)
  }

  /// Copies the pack's base frames into a client cache unless they are there already (the
  /// session's warm cache), as a download would, and makes their playback forms (what the
  /// store does on its background queue after a download) unless `videoCodec` is nil.
  private func fillClientCache(
    from pack: AvatarPack, at root: URL, videoCodec: (any VideoFrameCodec)?
  ) throws {
    let store = try BaseFrameStore(
      root: root, videoCodec: videoCodec, makesPlaybackForms: false)
    defer {
      if videoCodec != nil {
        let start = ProcessCPU.seconds()
        let made = store.makePlaybackForms()
        progress(
          String(
            format: "  playback forms: %d animations, %.1f s of CPU to make what was missing",
            made.count, ProcessCPU.seconds() - start))
      }
    }
    for animation in pack.animations.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
      guard !store.isAvailable(animation), let frames = pack.frameCount(of: animation) else {
        continue
      }
      progress("  caching \(animation) (\(frames) frames)")
      try store.beginDownload(animation, frames: frames)
      for index in 0..<frames {
        try store.storeFrame(
          pack.baseFrameData(animation, frame: index), index: index, of: animation)
      }
      try store.finishDownload(animation, version: pack.animations[animation]?.version)
    }
  }

  /// The event as a client receives it: a Socket.IO packet encoded, decoded, then LIVA's
  /// decoder.
  private func throughTheWire(_ event: OutgoingEvent, decoder: inout SocketIOPacketDecoder)
    throws -> [ServerEvent]
  {
    let (text, attachments) = SocketIOPacket(
      kind: .event, payload: .array([.string(event.name), event.payload])
    ).encode()
    var packet = try decoder.decode(text: text)
    for attachment in attachments { packet = try decoder.decode(attachment: attachment) }
    guard let packet, let name = packet.eventName else { return [] }
    let decoded = try ServerEvent.decode(name: name, arguments: packet.arguments)
    return decoded.map { [$0] } ?? []
  }
}

extension ResidentMemory {
  /// Resident memory of this process now, in MiB (0 where there is none; `field` as
  /// ``ResidentMemory/kibibytes(_:)`` reads it); the peak is `SessionReport.peakMemoryMiB()`.
  static func currentMiB(field: String = "VmRSS:") -> Double {
    Double(kibibytes(field) ?? 0) / 1024
  }
}

/// CPU time this process has used, user and system, every thread.
enum ProcessCPU {
  static func seconds() -> Double {
    var usage = rusage()
    #if canImport(Glibc)
      getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
      getrusage(RUSAGE_SELF, &usage)
    #endif
    func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return s(usage.ru_utime) + s(usage.ru_stime)
  }
}

/// What `liva bench-session` measured.
struct BenchSessionResult: Codable {
  struct Sample: Codable {
    /// Virtual time, in seconds.
    var time: Double
    /// Resident memory then, in MiB.
    var residentMiB: Double
    /// Of it, anonymous (private) memory, in MiB: the heap and what the process wrote.
    var anonymousMiB: Double
    /// The C heap in use then, in MiB (nil where the C library does not say): what the
    /// process holds, without the freed memory the allocator keeps.
    var heapMiB: Double?
    /// Decoded base frames held by the store, in MiB.
    var baseFramesMiB: Double
    /// Decoded overlay images held by the player, in MiB.
    var overlaysMiB: Double
  }

  var size: String
  /// Whether the photographic variant of the sample avatar played.
  var photographic: Bool
  var duration: Double
  var messages: Int
  var samples: [Sample]
  /// CPU time (user + system, all threads) per second of playback, in milliseconds, from
  /// 10 s of virtual time to the end.
  var cpuMillisecondsPerSecond: Double
  /// The base frames' bytes in the client cache (`BaseFrameStore.Statistics.diskBytes`).
  var baseFrameBytes: Int
  /// Whether base frames played from their H.264 playback form (false: `--images-only`).
  var playbackForm: Bool
  /// Base frames decoded from the playback form.
  var playbackFrames: Int
  var baselineMiB: Double
  var peakMiB: Double
  /// The median of ``timeToFirstFrameRuns``.
  var timeToFirstFrameMilliseconds: Double?
  var timeToFirstFrameRuns: [Double]
  /// The median time opening the warm cache's store took in those runs, in milliseconds.
  var storeOpenMilliseconds: Double
  var framesPresented: Int
  var baseFrameMisses: Int
  var overlayFramesDrawn: Int
  var pops: Int
  var desyncs: Int
  var framePoolAllocations: Int
  /// The budget on ``peakMiB`` (`--peak-budget`).
  var peakBudgetMiB: Double
  /// The budget on ``timeToFirstFrameMilliseconds`` (`--first-frame-budget`).
  var timeToFirstFrameBudgetMilliseconds: Double

  /// The samples after the first 10 s.
  var steady: [Double] { samples.filter { $0.time >= 10 }.map(\.residentMiB) }

  /// The largest distance of a steady sample from the steady mean, as a fraction of it.
  var steadyDeviation: Double {
    let steady = steady
    guard !steady.isEmpty else { return 0 }
    let mean = steady.reduce(0, +) / Double(steady.count)
    return steady.map { abs($0 - mean) / mean }.max() ?? 0
  }

  /// The trend of resident memory over the second half of the session (and after 10 s), in
  /// MiB per minute: the least-squares slope of those samples. A session that holds what it
  /// needs is flat; one that keeps something per message grows in every sample, however small
  /// each step (a ±5 % band alone passes a leak of several MiB a minute).
  var residentSlopeMiBPerMinute: Double { slope(\.residentMiB) }

  /// The same trend for the C heap in use (nil where unknown): growth here is memory held;
  /// growth of resident memory alone is the allocator keeping what was freed.
  var heapSlopeMiBPerMinute: Double? {
    samples.allSatisfy { $0.heapMiB != nil } ? slope { $0.heapMiB ?? 0 } : nil
  }

  private func slope(_ value: (Sample) -> Double) -> Double {
    let start = max(10, duration / 2)
    let points = samples.filter { $0.time >= start }.map { ($0.time / 60, value($0)) }
    guard points.count >= 3 else { return 0 }
    let n = Double(points.count)
    let meanX = points.map(\.0).reduce(0, +) / n
    let meanY = points.map(\.1).reduce(0, +) / n
    let covariance = points.map { ($0.0 - meanX) * ($0.1 - meanY) }.reduce(0, +)
    let variance = points.map { ($0.0 - meanX) * ($0.0 - meanX) }.reduce(0, +)
    return variance > 0 ? covariance / variance : 0
  }

  /// The budget on ``residentSlopeMiBPerMinute``: wide, since glibc's arenas grow slowly
  /// over a long session while the heap in use stays flat (measured over 240 s: resident
  /// +1.0 to +1.5 MiB a minute, the heap in use -1 to 0; over 60 s in CI, +1.1 to +2.4); a
  /// leak of 7 MiB in 50 s is 8.4.
  static let slopeBudgetMiBPerMinute = 4.0
  /// The budget on ``heapSlopeMiBPerMinute``, for sessions of 3 minutes or more: what the
  /// session holds must not grow (a player that kept each chunk's audio grew resident memory
  /// by 1 MiB a minute over 4 minutes).
  static let heapSlopeBudgetMiBPerMinute = 0.5

  var failures: [String] {
    var failures: [String] = []
    if residentSlopeMiBPerMinute > Self.slopeBudgetMiBPerMinute {
      failures.append(
        String(
          format: "RSS grows %.2f MiB a minute over the second half (budget %.1f)",
          residentSlopeMiBPerMinute, Self.slopeBudgetMiBPerMinute))
    }
    // Over a minute the heap's trend is within the noise of the caches filling and emptying
    // (-3 to -1 MiB a minute measured); over three minutes or more it is the trend.
    if duration >= 180, let heap = heapSlopeMiBPerMinute, heap > Self.heapSlopeBudgetMiBPerMinute {
      failures.append(
        String(
          format: "the C heap in use grows %.2f MiB a minute over the second half (budget %.1f)",
          heap, Self.heapSlopeBudgetMiBPerMinute))
    }
    if steadyDeviation > 0.05 {
      failures.append(
        String(format: "RSS moved %.1f %% after 10 s (budget 5 %%)", steadyDeviation * 100))
    }
    if peakMiB > peakBudgetMiB {
      failures.append(String(format: "peak %.1f MiB (budget %g)", peakMiB, peakBudgetMiB))
    }
    if (timeToFirstFrameMilliseconds ?? .infinity) > timeToFirstFrameBudgetMilliseconds {
      failures.append(
        "time to first frame \(timeToFirstFrameMilliseconds ?? -1) ms (budget \(String(format: "%g", timeToFirstFrameBudgetMilliseconds)))"
      )
    }
    if baseFrameMisses > 0 { failures.append("\(baseFrameMisses) base-frame misses") }
    return failures
  }

  var summary: String {
    let last = samples.last
    let series = samples.map { String(format: "%.0fs %.1f", $0.time, $0.residentMiB) }
    return """
      messages             \(messages) over \(Int(duration)) s of virtual time
      resident (MiB)       \(series.joined(separator: ", "))
      after 10 s           within \(String(format: "%.1f", steadyDeviation * 100)) % of the mean (budget 5 %)
      trend                \(String(format: "%+.2f", residentSlopeMiBPerMinute)) MiB a minute over the second half (budget \(String(format: "%.1f", Self.slopeBudgetMiBPerMinute))); C heap in use \(heapSlopeMiBPerMinute.map { String(format: "%+.2f", $0) } ?? "n/a") MiB a minute (budget \(String(format: "%.1f", Self.heapSlopeBudgetMiBPerMinute)) from 180 s), \(samples.last?.heapMiB.map { String(format: "%.1f", $0) } ?? "n/a") MiB at the end
      peak resident        \(String(format: "%.1f", peakMiB)) MiB (\(String(format: "%.1f", baselineMiB)) before the player; budget \(String(format: "%g", peakBudgetMiB)))
      at the end (MiB)     \(last.map { String(format: "%.1f resident, %.1f of it anonymous: base frames %.1f, overlays %.1f", $0.residentMiB, $0.anonymousMiB, $0.baseFramesMiB, $0.overlaysMiB) } ?? "no sample")
      time to first frame  median \(timeToFirstFrameMilliseconds.map { String(format: "%.1f ms", $0) } ?? "none") of \(timeToFirstFrameRuns.map { String(format: "%.1f", $0) }.joined(separator: ", ")) (warm cache; budget \(String(format: "%g", timeToFirstFrameBudgetMilliseconds)) ms), of which opening the store \(String(format: "%.1f ms", storeOpenMilliseconds))
      CPU                  \(String(format: "%.1f", cpuMillisecondsPerSecond)) ms per second of playback (user + system, after 10 s)
      cache on disk        \(String(format: "%.1f", Double(baseFrameBytes) / 1_048_576)) MiB of base frames\(playbackForm ? " and their playback forms" : "")
      decoded              \(playbackFrames) base frames from the playback form\(playbackForm ? "" : " (--images-only)")
      frames               \(framesPresented) presented, \(overlayFramesDrawn) with mouths, \(baseFrameMisses) base-frame misses
      pops / desyncs       \(pops) / \(desyncs); frame-pool buffers \(framePoolAllocations)
      """
  }
}
