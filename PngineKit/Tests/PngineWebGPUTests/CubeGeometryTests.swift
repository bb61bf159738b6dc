import Foundation
import PngineKit
import PngineTestSupport
import PngineWebGPU
import Testing

/// The rotating cube drawn by the GPU against a picture worked out here, without the renderer:
/// the cube's triangles are read from the vertex buffer its `init` writes, projected with the
/// model-view-projection its WGSL computes (transcribed below, checked against the shader text)
/// from the time and the canvas's aspect (the `[time, width, height, width / height]` its
/// frame writes into the uniform is checked too), and each pixel's colour
/// is the fragment shader's `0.5 * (position + 1)` at the surface point seen through the
/// pixel's centre. So every pixel of the picture is known: the clear colour outside the
/// silhouette, the interpolated position colour inside it.
@Suite(.serialized, .disturbsProcess)
struct CubeGeometryTests {
  struct Case: CustomTestStringConvertible, Sendable {
    var time: Float
    var width: Int
    var height: Int
    /// The faces the camera sees, worked out by hand: at t = 0 the rotation axis is y, so the
    /// camera (level with the cube's centre) sees the two side faces the turn brings round
    /// (+x, +z) and neither the top nor the bottom; at t = 1 the axis (sin 1, cos 1, 0) tips
    /// the bottom towards it.
    var faces: [String]
    var testDescription: String { "t=\(time) \(width)x\(height)" }
  }

  /// t = 0 square (the reference's view) and t = 1 on a wide canvas (the aspect enters the
  /// projection: a viewport or aspect mistake moves the silhouette).
  static let cases = [
    Case(time: 0, width: 256, height: 256, faces: ["+x", "+z"]),
    Case(time: 1, width: 320, height: 200, faces: ["+x", "-y", "+z"]),
  ]

  /// Pixel centres closer than this to the projected silhouette's outline are not compared:
  /// a GPU snaps vertices to a subpixel grid (lavapipe 1/256 px), so a centre on the outline
  /// may fall either way; one pixel leaves any driver's snapping far behind.
  static let edgeMargin = 1.0

  /// Per channel, in 1/255: the GPU interpolates the same perspective-correct value at the same
  /// pixel centre in f32 (relative error ~1e-6, and vertex snapping moves it by under 0.01/255:
  /// the colour changes by at most ~3/255 a pixel here) and stores it in `rgba8unorm` rounded
  /// to the nearest byte, which we round too: the only disagreement left is a value within a
  /// hair of a half step rounding the other way, one unit. (Measured on lavapipe: 0 at t = 0,
  /// 1 at t = 1.)
  static let colourTolerance = 1

  @Test(arguments: cases)
  func everyPixelClearOfTheOutlineIsTheClearColourOrTheProjectedSurfaceColour(_ c: Case)
    throws
  {
    let (scene, image) = try Self.sceneAndDrawing(c)
    let compared = try Self.compare(image, with: scene, what: "drawn \(c.testDescription)")
    // The cube covers a fair share of the canvas: a test that compared nothing would pass.
    #expect(Double(compared.inside) > 0.1 * Double(c.width * c.height))
    #expect(Double(compared.outside) > 0.3 * Double(c.width * c.height))
  }

  /// The committed references of the snapshot tests (recorded by the renderer, 256², t = 0
  /// and t = 1) are right too, by the same measure: without a GPU.
  @Test(arguments: [(Float(0), "cube-t0"), (1, "cube-t1")])
  func theCubeReferencesAreTheProjectedPicture(_ time: Float, _ name: String) throws {
    let reference = try RGBAImage(
      png: [UInt8](try Data(contentsOf: references.appendingPathComponent(name + ".png"))))
    let scene = try CubeScene(time: time, width: reference.width, height: reference.height)
    _ = try Self.compare(reference, with: scene, what: name)
  }

  /// The case's scene, worked out from the fixture, and the cube as the GPU drew it.
  static func sceneAndDrawing(_ c: Case) throws -> (CubeScene, RGBAImage) {
    let scene = try CubeScene(time: c.time, width: c.width, height: c.height)
    let renderer = try PngineRenderer(
      png: try fixture(cube), width: UInt32(c.width), height: UInt32(c.height))
    return (scene, try renderer.render(time: c.time))
  }

  /// Compares every pixel of `image` whose centre is at least ``edgeMargin`` from the
  /// silhouette's outline with `scene`'s expectation; returns how many were compared inside
  /// and outside.
  static func compare(_ image: RGBAImage, with scene: CubeScene, what: String) throws -> (
    inside: Int, outside: Int
  ) {
    try #require(image.width == scene.width && image.height == scene.height)
    let projection = scene.projection()
    var outside = 0
    var inside = 0
    var wrongOutside: [(Int, Int, [UInt8])] = []
    var wrongInside: [(Int, Int, [UInt8], [UInt8])] = []
    var worst = 0
    for y in 0..<image.height {
      for x in 0..<image.width {
        let centre = SIMD2(Double(x) + 0.5, Double(y) + 0.5)
        let pixel = image[x, y]
        guard projection.distanceToOutline(centre) >= edgeMargin else { continue }
        guard projection.silhouetteContains(centre) else {
          outside += 1
          if pixel != scene.clear { wrongOutside.append((x, y, pixel)) }
          continue
        }
        inside += 1
        guard let expected = projection.colour(at: centre) else {
          Issue.record("(\(x), \(y)) is inside the outline but on no triangle")
          continue
        }
        let difference = zip(pixel, expected).map { abs(Int($0) - Int($1)) }.max() ?? 0
        worst = max(worst, difference)
        if difference > colourTolerance { wrongInside.append((x, y, pixel, expected)) }
      }
    }
    print(
      "cube \(what): \(inside) pixels inside compared (worst difference \(worst)/255), \(outside) outside"
    )
    #expect(
      wrongOutside.isEmpty,
      "\(what): \(wrongOutside.count) pixels outside the silhouette are not the clear colour \(scene.clear), e.g. \(wrongOutside.prefix(5))"
    )
    #expect(
      wrongInside.isEmpty,
      "\(what): \(wrongInside.count) pixels inside differ by more than \(colourTolerance)/255 from the surface colour (x, y, drawn, expected), e.g. \(wrongInside.prefix(5))"
    )
    if !wrongOutside.isEmpty || !wrongInside.isEmpty {
      let failed = FileManager.default.temporaryDirectory.appendingPathComponent(
        "cube-geometry-\(what.filter { $0.isLetter || $0.isNumber })-failed.png")
      try? Data(image.pngData()).write(to: failed)
      print("compared picture: \(failed.path)")
    }
    return (inside, outside)
  }

  @Test(arguments: cases)
  func theDrawnBoundingBoxIsTheProjectedCornersBox(_ c: Case) throws {
    let (scene, image) = try Self.sceneAndDrawing(c)
    let projection = scene.projection()
    var (minX, minY, maxX, maxY) = (Int.max, Int.max, Int.min, Int.min)
    for y in 0..<c.height {
      for x in 0..<c.width where image[x, y] != scene.clear {
        (minX, minY) = (min(minX, x), min(minY, y))
        (maxX, maxY) = (max(maxX, x), max(maxY, y))
      }
    }
    // The projected corners' box in pixels; a drawn pixel covers [x, x + 1) and is drawn when
    // its centre is inside. So the drawn box reaches at most half a pixel past the corners'
    // box (a centre just inside), and falls short of it by at most a pixel and a half (a
    // corner's sharp tip can slip between the centres of the first column or row).
    let (low, high) = projection.cornerBox
    print(
      "cube \(c.testDescription): drawn box x \(minX)...\(maxX) y \(minY)...\(maxY), projected corners x \(low.x)...\(high.x) y \(low.y)...\(high.y)"
    )
    for (drawn, projected) in [(Double(minX), low.x), (Double(minY), low.y)] {
      #expect(drawn >= projected - 0.5 && drawn <= projected + 1.5, "\(drawn) vs \(projected)")
    }
    for (drawn, projected) in [(Double(maxX + 1), high.x), (Double(maxY + 1), high.y)] {
      #expect(drawn <= projected + 0.5 && drawn >= projected - 1.5, "\(drawn) vs \(projected)")
    }
  }

  /// The centre of each face: where the camera sees the face, its pixel is the surface colour
  /// at the pixel's centre (the interpolated `0.5 * (position + 1)`, within the tolerance) and
  /// its channel along the face's axis is exactly 255 on a +1 face, 0 on a -1 face; a face
  /// turned away (culled, or behind in depth) shows nowhere near its centre colour there.
  @Test(arguments: cases)
  func eachVisibleFaceCentreHasItsFaceColour(_ c: Case) throws {
    let (scene, image) = try Self.sceneAndDrawing(c)
    let projection = scene.projection()
    var visible: [String] = []
    for axis in 0..<3 {
      for sign in [-1.0, 1.0] {
        var centre = SIMD3<Double>(0, 0, 0)
        centre[axis] = sign
        let face = "\(sign > 0 ? "+" : "-")\(["x", "y", "z"][axis])"
        let seen = scene.faceFacesTheCamera(centre: centre, normal: centre)
        let point = projection.window(scene.clip(SIMD4(centre, 1)))
        let (x, y) = (Int(point.x.rounded(.down)), Int(point.y.rounded(.down)))
        try #require((0..<c.width).contains(x) && (0..<c.height).contains(y), "face \(face)")
        let pixel = image[x, y]
        let faceColour = 0.5 * (centre + 1)
        let far = (0..<3).map { abs(Double(pixel[$0]) - 255 * faceColour[$0]) }.max()!
        print(
          "cube \(c.testDescription): face \(face) \(seen ? "seen" : "hidden") centre at (\(x), \(y)): \(pixel)"
        )
        guard seen else {
          #expect(far > 40, "face \(face) is turned away, yet its centre colour shows: \(pixel)")
          continue
        }
        visible.append(face)
        let expected = try #require(projection.colour(at: SIMD2(Double(x) + 0.5, Double(y) + 0.5)))
        let difference = zip(pixel, expected).map { abs(Int($0) - Int($1)) }.max()!
        #expect(difference <= Self.colourTolerance, "face \(face): \(pixel), expected \(expected)")
        #expect(Int(pixel[axis]) == (sign > 0 ? 255 : 0), "face \(face): \(pixel)")
      }
    }
    #expect(visible == c.faces)
  }
}

/// The cube fixture as its executor describes it, and the WGSL's transform in plain Swift.
struct CubeScene {
  /// The 36 vertices' positions (`@location(0)`, `float32x4`), three a triangle.
  var positions: [SIMD4<Double>]
  /// The render pass's clear colour as canvas bytes.
  var clear: [UInt8]
  var time: Double
  var aspect: Double
  var width: Int
  var height: Int

  /// The WGSL lines the transform below transcribes: if the fixture's shader changed, the
  /// expectation would be of another program.
  static let transcribed = [
    "let f = 1.0 / tan(fovy * 0.5);", "let nf = 1.0 / (near - far);",
    "vec4f(f / aspect, 0, 0, 0),", "vec4f(0, f, 0, 0),", "vec4f(0, 0, far * nf, -1),",
    "vec4f(0, 0, far * near * nf, 0));", "vec4f(0, 0, -4, 1));",
    "let axis = vec3f(sin(now), cos(now), 0.0);", "let c = cos(1.0);", "let s = sin(1.0);",
    "vec4f(t*x*x+c,     t*x*y,       s*y, 0),", "vec4f(t*x*y,        t*y*y+c,    -s*x, 0),",
    "vec4f(-s*y,         s*x,         c,   0),", "view = view * rot;",
    "return perspective(1.2566, inputs.aspect, 1.0, 100.0) * view;",
    "output.Position = getMVP() * position;",
    "output.fragPosition = 0.5 * (position + vec4f(1.0, 1.0, 1.0, 1.0));",
    "return fragPosition;",
  ]

  /// Runs the fixture's executor through the recording backend (no GPU): `init`, then one
  /// frame at `time` on a `width × height` canvas.
  init(time: Float, width: Int, height: Int) throws {
    let animation = PngineAnimation()
    let report = try animation.load(png: try fixture(cube))
    let backend = RecordingBackend()
    let inputs = FrameInputs(time: time, width: UInt32(width), height: UInt32(height))
    try backend.execute(report.initOutput, inputs: inputs)
    let frame = try animation.frame(time: time, width: UInt32(width), height: UInt32(height))
    try backend.execute(frame, inputs: inputs)

    let initCommands = report.initOutput.buffer.commands.enumerated()
    let shader = initCommands.compactMap { i, d -> String? in
      if case .createShader = d.command { return report.initOutput.blobs[i]?.text }
      return nil
    }
    try #require(shader.count == 1)
    for line in Self.transcribed {
      #expect(shader[0].contains(line), "the cube's WGSL no longer has `\(line)`")
    }
    let pipelines = initCommands.compactMap { i, d -> String? in
      if case .createRenderPipeline = d.command { return report.initOutput.blobs[i]?.text }
      return nil
    }
    try #require(pipelines.count == 1)
    let pipeline = try #require(
      try JSONSerialization.jsonObject(with: Data(pipelines[0].utf8)) as? [String: Any])
    let vertex = try #require(pipeline["vertex"] as? [String: Any])
    let layout = try #require((vertex["buffers"] as? [[String: Any]])?.first)
    let stride = try #require(layout["arrayStride"] as? Int)
    let position = try #require(
      (layout["attributes"] as? [[String: Any]])?.first { $0["shaderLocation"] as? Int == 0 })
    #expect(position["format"] as? String == "float32x4")
    let offset = try #require(position["offset"] as? Int)
    let primitive = pipeline["primitive"] as? [String: Any]
    #expect(primitive?["topology"] as? String == "triangle-list")
    let depth = pipeline["depthStencil"] as? [String: Any]
    #expect(depth?["depthCompare"] as? String == "less")

    // The frame: the time uniform, one pass on the canvas, 36 vertices from buffer 0.
    var vertexBytes: [UInt8]?
    var uniform: [UInt8]?
    var clear: ClearColor?
    var draws: [Command] = []
    for entry in backend.entries {
      switch entry.command {
      case .writeBuffer(id: 0, offset: 0, _) where entry.call == "init": vertexBytes = entry.written
      case .writeTimeUniform where entry.call != "init": uniform = entry.written
      case .beginRenderPass(let colors, _, _) where colors.first?.texture == 0xFFFE:
        clear = colors.first?.clear
      case .draw: draws.append(entry.command)
      default: break
      }
    }
    #expect(draws == [.draw(vertexCount: 36, instanceCount: 1, firstVertex: 0, firstInstance: 0)])
    let bytes = try #require(vertexBytes)
    try #require(bytes.count >= 35 * stride + offset + 16)
    func float(_ at: Int) -> Double {
      Double(Float(bitPattern: (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * $1) }))
    }
    positions = (0..<36).map { v in
      let at = v * stride + offset
      return SIMD4(float(at), float(at + 4), float(at + 8), float(at + 12))
    }
    // The inputs the shader reads: [time, width, height, width / height], worked out here.
    let floats: [Float] = [time, Float(width), Float(height), Float(width) / Float(height)]
    let expectedUniform: [UInt8] = floats.flatMap { f -> [UInt8] in
      (0..<4).map { (i: Int) -> UInt8 in UInt8(truncatingIfNeeded: f.bitPattern >> (8 * i)) }
    }
    #expect(uniform == expectedUniform)
    guard case .unorm8(let r, let g, let b, let a)? = clear else {
      throw CubeSceneError(
        message: "no unorm8 clear colour on the canvas pass: \(String(describing: clear))")
    }
    self.clear = [r, g, b, a]
    self.time = Double(time)
    self.aspect = Double(width) / Double(height)
    self.width = width
    self.height = height
  }

  /// `perspective(1.2566, aspect, 1, 100) * translate(0, 0, -4) * rot`, as `getMVP()`.
  var modelViewProjection: Matrix4 {
    let f = 1.0 / tan(1.2566 * 0.5)
    let (near, far) = (1.0, 100.0)
    let nf = 1.0 / (near - far)
    let perspective = Matrix4(
      SIMD4(f / aspect, 0, 0, 0), SIMD4(0, f, 0, 0), SIMD4(0, 0, far * nf, -1),
      SIMD4(0, 0, far * near * nf, 0))
    return perspective * view
  }

  /// `translate(0, 0, -4) * rot`: the view part of `getMVP()`.
  var view: Matrix4 {
    let translate = Matrix4(
      SIMD4(1, 0, 0, 0), SIMD4(0, 1, 0, 0), SIMD4(0, 0, 1, 0), SIMD4(0, 0, -4, 1))
    let (x, y) = (sin(time), cos(time))
    let (c, s) = (cos(1.0), sin(1.0))
    let t = 1 - c
    let rot = Matrix4(
      SIMD4(t * x * x + c, t * x * y, s * y, 0), SIMD4(t * x * y, t * y * y + c, -s * x, 0),
      SIMD4(-s * y, s * x, c, 0), SIMD4(0, 0, 0, 1))
    return translate * rot
  }

  /// A model-space point in clip space.
  func clip(_ p: SIMD4<Double>) -> SIMD4<Double> { modelViewProjection * p }

  /// Whether a face (its centre and outward normal in model space) faces the camera, which
  /// sits at the view-space origin.
  func faceFacesTheCamera(centre: SIMD3<Double>, normal: SIMD3<Double>) -> Bool {
    let c = view * SIMD4(centre, 1)
    let n = view * SIMD4(normal, 0)
    return (n.x * -c.x + n.y * -c.y + n.z * -c.z) > 0
  }

  func projection() -> CubeProjection { CubeProjection(scene: self) }
}

struct CubeSceneError: Error { var message: String }

/// A column-major 4×4 matrix, as WGSL's `mat4x4f(col0, col1, col2, col3)`.
struct Matrix4 {
  var columns: [SIMD4<Double>]
  init(_ c0: SIMD4<Double>, _ c1: SIMD4<Double>, _ c2: SIMD4<Double>, _ c3: SIMD4<Double>) {
    columns = [c0, c1, c2, c3]
  }
  static func * (m: Matrix4, v: SIMD4<Double>) -> SIMD4<Double> {
    m.columns[0] * v.x + m.columns[1] * v.y + m.columns[2] * v.z + m.columns[3] * v.w
  }
  static func * (a: Matrix4, b: Matrix4) -> Matrix4 {
    Matrix4(a * b.columns[0], a * b.columns[1], a * b.columns[2], a * b.columns[3])
  }
}

/// The cube on the canvas: its triangles in window coordinates (x right, y down, pixels),
/// with each vertex's clip w and model position for perspective-correct interpolation.
struct CubeProjection {
  struct Vertex {
    var window: SIMD3<Double>  // x, y in pixels, z the depth in [0, 1]
    var w: Double
    var model: SIMD3<Double>
  }
  var triangles: [[Vertex]]
  /// The silhouette: the convex hull of the projected corners, counter-clockwise on screen.
  var outline: [SIMD2<Double>]
  var cornerBox: (SIMD2<Double>, SIMD2<Double>)
  var width: Double
  var height: Double

  init(scene: CubeScene) {
    width = Double(scene.width)
    height = Double(scene.height)
    let (w, h) = (width, height)
    let vertices = scene.positions.map { p -> Vertex in
      let c = scene.clip(p)
      let window = SIMD3((c.x / c.w + 1) / 2 * w, (1 - c.y / c.w) / 2 * h, c.z / c.w)
      return Vertex(window: window, w: c.w, model: SIMD3(p.x, p.y, p.z))
    }
    triangles = stride(from: 0, to: vertices.count, by: 3).map { Array(vertices[$0..<($0 + 3)]) }
    let points = vertices.map { SIMD2($0.window.x, $0.window.y) }
    outline = convexHull(points)
    let xs = points.map(\.x)
    let ys = points.map(\.y)
    cornerBox = (SIMD2(xs.min()!, ys.min()!), SIMD2(xs.max()!, ys.max()!))
  }

  /// The same projection as ``init(scene:)`` for one clip-space point.
  func window(_ c: SIMD4<Double>) -> SIMD2<Double> {
    SIMD2((c.x / c.w + 1) / 2 * width, (1 - c.y / c.w) / 2 * height)
  }

  func silhouetteContains(_ p: SIMD2<Double>) -> Bool {
    zip(outline, outline.dropFirst() + [outline[0]]).allSatisfy { a, b in cross(b - a, p - a) >= 0 }
  }

  func distanceToOutline(_ p: SIMD2<Double>) -> Double {
    zip(outline, outline.dropFirst() + [outline[0]]).map { a, b in
      let ab = b - a
      let t = max(0, min(1, ((p - a) * ab).sum() / (ab * ab).sum()))
      let d = p - (a + t * ab)
      return (d * d).sum().squareRoot()
    }.min()!
  }

  /// The canvas bytes the fragment shader gives at window point `p`: the nearest triangle
  /// covering `p`, its model position interpolated perspective-correct (weights λᵢ/wᵢ), as
  /// `0.5 * (position + 1)` rounded to bytes; `nil` off the cube.
  func colour(at p: SIMD2<Double>) -> [UInt8]? {
    var best: (depth: Double, position: SIMD3<Double>)?
    for t in triangles {
      let a = SIMD2(t[0].window.x, t[0].window.y)
      let b = SIMD2(t[1].window.x, t[1].window.y)
      let c = SIMD2(t[2].window.x, t[2].window.y)
      let area = cross(b - a, c - a)
      guard abs(area) > 1e-9 else { continue }
      let l0 = cross(c - b, p - b) / area
      let l1 = cross(a - c, p - c) / area
      let l2 = cross(b - a, p - a) / area
      guard min(l0, l1, l2) >= -1e-9 else { continue }
      let depth = l0 * t[0].window.z + l1 * t[1].window.z + l2 * t[2].window.z
      let (q0, q1, q2) = (l0 / t[0].w, l1 / t[1].w, l2 / t[2].w)
      let position = (q0 * t[0].model + q1 * t[1].model + q2 * t[2].model) / (q0 + q1 + q2)
      if best == nil || depth < best!.depth { best = (depth, position) }
    }
    guard let best else { return nil }
    let colour = 0.5 * (best.position + 1)
    return [colour.x, colour.y, colour.z, 1].map { UInt8(max(0, min(255, ($0 * 255).rounded()))) }
  }
}

func cross(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> Double { a.x * b.y - a.y * b.x }

/// The convex hull of `points` (monotone chain), counter-clockwise in a y-down frame's sense of
/// ``cross(_:_:)`` ≥ 0 for points inside.
func convexHull(_ points: [SIMD2<Double>]) -> [SIMD2<Double>] {
  let sorted = points.sorted { ($0.x, $0.y) < ($1.x, $1.y) }
  func chain(_ ps: [SIMD2<Double>]) -> [SIMD2<Double>] {
    var hull: [SIMD2<Double>] = []
    for p in ps {
      while hull.count >= 2,
        cross(hull[hull.count - 1] - hull[hull.count - 2], p - hull[hull.count - 2]) <= 1e-9
      {
        hull.removeLast()
      }
      hull.append(p)
    }
    return hull
  }
  let lower = chain(sorted)
  let upper = chain(sorted.reversed())
  return Array(lower.dropLast() + upper.dropLast())
}
