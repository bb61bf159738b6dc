import ArgumentParser
import Foundation
import PngineKit

#if canImport(PngineWebGPU)
  import PngineWebGPU

  let renderCommands: [any ParsableCommand.Type] = [Render.self, RenderBench.self, FuzzGPU.self]

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
    @Flag(
      help:
        "Go on after a frame that fails (as an app's display loop does): print its error, render the next; exit 1 if any failed."
    ) var keepGoing = false

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
      var failed = 0
      // Each distinct error is shown once (a frame that fails the same way every frame is one
      // message, the rest counted at the end).
      var shown = Set<String>()
      for (i, t) in ts.enumerated() {
        let image: RGBAImage
        do {
          image = try renderer.render(time: t)
        } catch {
          guard keepGoing else { throw error }
          failed += 1
          if shown.insert("\(error)").inserted {
            let line = "\nframe \(i) t=\(t): error: \(error)\n"
            FileHandle.standardError.write(Data(line.utf8))
          }
          continue
        }
        let name = String(format: "frame_%05d.png", i)
        try Data(image.pngData()).write(to: folder.appendingPathComponent(name))
        let elapsed = Date().timeIntervalSince(start)
        let line = String(
          format: "\rframe %d/%d  t=%.3fs  %.1f fps", i + 1, ts.count, t,
          Double(i + 1) / max(elapsed, 1e-9))
        FileHandle.standardError.write(Data(line.utf8))
      }
      FileHandle.standardError.write(Data("\n".utf8))
      if failed > shown.count {
        FileHandle.standardError.write(
          Data("\(failed - shown.count) more frames failed with an error shown above\n".utf8))
      }
      print("\(ts.count - failed) frames in \(folder.path)")
      if failed > 0 { throw ExitCode(1) }
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
    @Option(
      help:
        "Also write the decoded stream (init and the first frames) as JSON here, for scripts/bench-render.py."
    )
    var dumpStream: String?

    func run() throws {
      let (w, h) = try parseSize(size)
      if let dumpStream {
        try dump(to: dumpStream, width: w, height: h)
      }
      let renderer = try PngineRenderer(png: try readFile(file), width: w, height: h)
      var total: [Double] = []
      var executor: [Double] = []
      // The executor plus encoding and submitting the commands (no waiting for the GPU).
      var encoding: [Double] = []
      let clock = ContinuousClock()
      for i in 0..<(warmup + frames) {
        let t = Float(i) / 60
        let a = clock.now
        let output = try renderer.animation.frame(time: t, width: w, height: h)
        let b = clock.now
        try renderer.backend.execute(output, inputs: FrameInputs(time: t, width: w, height: h))
        let encoded = clock.now
        _ = try renderer.backend.readCanvas()
        let c = clock.now
        if i >= warmup {
          total.append(ms(c - a))
          executor.append(ms(b - a))
          encoding.append(ms(encoded - a))
        }
      }
      func pct(_ v: [Double], _ p: Double) -> Double {
        let s = v.sorted()
        return s[min(s.count - 1, Int((Double(s.count - 1) * p).rounded()))]
      }
      print(
        String(
          format:
            "%@ %dx%d on %@: frame+readback median %.3f ms p95 %.3f ms; executor+decode median %.4f ms p95 %.4f ms; executor+encode+submit median %.4f ms p95 %.4f ms",
          (file as NSString).lastPathComponent, w, h, renderer.backend.adapterName, pct(total, 0.5),
          pct(total, 0.95), pct(executor, 0.5), pct(executor, 0.95), pct(encoding, 0.5),
          pct(encoding, 0.95)))
    }

    /// The decoded stream as JSON: `{"width", "height", "init": [...], "frames": [[...], ...]}`,
    /// each command `{"op": name, fields…, "blob": base64}`; the frames are those at
    /// `i / 60` s, as the benchmark draws them.
    func dump(to path: String, width w: UInt32, height h: UInt32) throws {
      let animation = PngineAnimation()
      let report = try animation.load(png: try readFile(file))
      func commands(_ output: FrameOutput) -> [[String: Any]] {
        output.buffer.commands.enumerated().map { index, decoded in
          var o = fields(decoded.command)
          if case .bytes(let b)? = output.blobs[index] { o["blob"] = Data(b).base64EncodedString() }
          return o
        }
      }
      var frames: [[[String: Any]]] = []
      for i in 0..<4 {
        frames.append(commands(try animation.frame(time: Float(i) / 60, width: w, height: h)))
      }
      let object: [String: Any] = [
        "width": w, "height": h, "init": commands(report.initOutput), "frames": frames,
      ]
      try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        .write(to: URL(fileURLWithPath: path))
    }

    func fields(_ command: Command) -> [String: Any] {
      switch command {
      case .createBuffer(let id, let size, let usage):
        return ["op": "createBuffer", "id": id, "size": size, "usage": usage]
      case .createTexture(let id, _): return ["op": "createTexture", "id": id]
      case .createShader(let id, _): return ["op": "createShader", "id": id]
      case .createRenderPipeline(let id, _): return ["op": "createRenderPipeline", "id": id]
      case .createComputePipeline(let id, _): return ["op": "createComputePipeline", "id": id]
      case .createBindGroup(let id, let layout, _):
        return ["op": "createBindGroup", "id": id, "layout": layout]
      case .beginRenderPass(let colors, let depth, _):
        let c = colors.first
        var clear: [Double] = [0, 0, 0, 0]
        if case .unorm8(let r, let g, let b, let a)? = c?.clear {
          clear = [r, g, b, a].map { Double($0) / 255 }
        }
        if case .float(let r, let g, let b, let a)? = c?.clear {
          clear = [r, g, b, a].map(Double.init)
        }
        return [
          "op": "beginRenderPass", "texture": c?.texture ?? 0xFFFF, "load": c?.load ?? 1,
          "clear": clear, "depth": depth,
        ]
      case .beginComputePass: return ["op": "beginComputePass"]
      case .setPipeline(let id): return ["op": "setPipeline", "id": id]
      case .setBindGroup(let slot, let id): return ["op": "setBindGroup", "slot": slot, "id": id]
      case .setVertexBuffer(let slot, let id):
        return ["op": "setVertexBuffer", "slot": slot, "id": id]
      case .draw(let v, let i, let fv, let fi): return ["op": "draw", "args": [v, i, fv, fi]]
      case .dispatch(let x, let y, let z): return ["op": "dispatch", "args": [x, y, z]]
      case .endPass: return ["op": "endPass"]
      case .writeBuffer(let id, let offset, _):
        return ["op": "writeBuffer", "id": id, "offset": offset]
      case .writeTimeUniform(let id, let offset, let size):
        return ["op": "writeTimeUniform", "id": id, "offset": offset, "size": size]
      case .submit: return ["op": "submit"]
      default: return ["op": "unsupported", "text": "\(command)"]
      }
    }

    func ms(_ d: Duration) -> Double {
      Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }
  }
#else
  let renderCommands: [any ParsableCommand.Type] = []
#endif
