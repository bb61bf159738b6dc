import ArgumentParser
import Foundation
import PngineKit

#if canImport(PngineWebGPU)
  import PngineWebGPU

  let renderCommands: [any ParsableCommand.Type] = [Render.self, RenderBench.self]

  func parseSize(_ size: String) throws -> (UInt32, UInt32) {
    let parts = size.split(separator: "x").compactMap { UInt32($0) }
    guard parts.count == 2, parts[0] > 0, parts[1] > 0 else {
      throw ValidationError("--size must be WxH")
    }
    return (parts[0], parts[1])
  }

  struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract:
        "Render frames with WebGPU (wgpu-native) headless: PNG frames, and an MP4 with ffmpeg.")
    @Argument(help: "A PNG.") var file: String
    @Option(help: "Frame times in seconds, comma separated (instead of --duration).") var times:
      String?
    @Option(help: "Seconds to render at --fps.") var duration: Double = 2
    @Option(help: "Frames per second for --duration and the MP4.") var fps: Double = 30
    @Option(help: "Canvas size WxH.") var size: String = "512x512"
    @Option(name: .shortAndLong, help: "Output folder.") var output: String = "pngine-render"
    @Flag(help: "Do not make an MP4 even when ffmpeg is installed.") var noVideo = false

    func run() throws {
      let (w, h) = try parseSize(size)
      let ts: [Float]
      if let times {
        ts = try times.split(separator: ",").map { s -> Float in
          guard let t = Float(s) else { throw ValidationError("bad time \(s)") }
          return t
        }
      } else {
        guard duration > 0, fps > 0, duration * fps <= 100_000 else {
          throw ValidationError("--duration and --fps must be positive (at most 100 000 frames)")
        }
        ts = (0..<Int((duration * fps).rounded())).map { Float(Double($0) / fps) }
      }
      let bytes = try readFile(file)
      let folder = URL(fileURLWithPath: output)
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      let renderer = try PngineRenderer(png: bytes, width: w, height: h)
      FileHandle.standardError.write(Data("adapter: \(renderer.backend.adapterName)\n".utf8))
      let start = Date()
      for (i, t) in ts.enumerated() {
        let image = try renderer.render(time: t)
        let name = String(format: "frame_%05d.png", i)
        try Data(image.pngData()).write(to: folder.appendingPathComponent(name))
        let elapsed = Date().timeIntervalSince(start)
        let line = String(
          format: "\rframe %d/%d  t=%.3fs  %.1f fps", i + 1, ts.count, t,
          Double(i + 1) / max(elapsed, 1e-9))
        FileHandle.standardError.write(Data(line.utf8))
      }
      FileHandle.standardError.write(Data("\n".utf8))
      print("\(ts.count) frames in \(folder.path)")
      guard times == nil, !noVideo, ts.count > 1 else { return }
      guard let ffmpeg = findExecutable("ffmpeg") else {
        print("ffmpeg is not installed: no MP4 (the PNG frames are there)")
        return
      }
      let video = folder.appendingPathComponent("render.mp4")
      let process = Process()
      process.executableURL = ffmpeg
      process.arguments = [
        "-y", "-loglevel", "error", "-framerate", String(fps), "-i",
        folder.appendingPathComponent("frame_%05d.png").path, "-c:v", "libx264", "-pix_fmt",
        "yuv420p",
        video.path,
      ]
      try process.run()
      process.waitUntilExit()
      guard process.terminationStatus == 0 else {
        throw Failure(description: "ffmpeg failed with status \(process.terminationStatus)")
      }
      print("video: \(video.path)")
    }
  }

  func findExecutable(_ name: String) -> URL? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for folder in path.split(separator: ":") {
      let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent(name)
      if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    return nil
  }

  struct RenderBench: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "render-bench",
      abstract: "Time frames rendered and read back (median, p95), and the executor's share.")
    @Argument(help: "A PNG.") var file: String
    @Option(help: "Canvas size WxH.") var size: String = "512x512"
    @Option(help: "Timed frames.") var frames: Int = 200
    @Option(help: "Warm-up frames.") var warmup: Int = 20

    func run() throws {
      let (w, h) = try parseSize(size)
      let renderer = try PngineRenderer(png: try readFile(file), width: w, height: h)
      var total: [Double] = []
      var executor: [Double] = []
      let clock = ContinuousClock()
      for i in 0..<(warmup + frames) {
        let t = Float(i) / 60
        let a = clock.now
        let output = try renderer.animation.frame(time: t, width: w, height: h)
        let b = clock.now
        try renderer.backend.execute(output, inputs: FrameInputs(time: t, width: w, height: h))
        _ = try renderer.backend.readCanvas()
        let c = clock.now
        if i >= warmup {
          total.append(ms(c - a))
          executor.append(ms(b - a))
        }
      }
      func pct(_ v: [Double], _ p: Double) -> Double {
        let s = v.sorted()
        return s[min(s.count - 1, Int((Double(s.count - 1) * p).rounded()))]
      }
      print(
        String(
          format:
            "%@ %dx%d on %@: frame+readback median %.3f ms p95 %.3f ms; executor+decode median %.4f ms p95 %.4f ms",
          (file as NSString).lastPathComponent, w, h, renderer.backend.adapterName, pct(total, 0.5),
          pct(total, 0.95),
          pct(executor, 0.5), pct(executor, 0.95)))
    }

    func ms(_ d: Duration) -> Double {
      Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }
  }
#else
  let renderCommands: [any ParsableCommand.Type] = []
#endif
