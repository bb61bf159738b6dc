import Foundation
import Locking
import PngineKit
import PngineWebGPU

#if canImport(Glibc)
  import Glibc
#endif

/// The few Xlib calls the surface tests need, taken from `libX11.so.6` with `dlopen` (no C
/// target, no link-time dependency: without libX11 the tests are skipped).
///
/// Xlib's default error handler exits the process; ``load()`` installs one that only counts
/// errors, so a failed request is an assertion, not an exit.
final class Xlib: @unchecked Sendable {
  typealias Display = OpaquePointer
  typealias Window = UInt

  typealias OpenDisplay = @convention(c) (UnsafePointer<CChar>?) -> Display?
  typealias OfDisplay = @convention(c) (Display) -> Int32
  typealias OfScreen = @convention(c) (Display, Int32) -> UInt
  typealias CreateSimpleWindow =
    @convention(c) (Display, Window, Int32, Int32, UInt32, UInt32, UInt32, UInt, UInt) -> Window
  typealias OfWindow = @convention(c) (Display, Window) -> Int32
  typealias ResizeWindow = @convention(c) (Display, Window, UInt32, UInt32) -> Int32
  typealias Sync = @convention(c) (Display, Int32) -> Int32
  typealias GetImage =
    @convention(c) (Display, Window, Int32, Int32, UInt32, UInt32, UInt, Int32) -> OpaquePointer?
  typealias GetPixel = @convention(c) (OpaquePointer, Int32, Int32) -> UInt
  typealias DestroyImage = @convention(c) (OpaquePointer) -> Int32
  typealias DefaultDepth = @convention(c) (Display, Int32) -> Int32
  typealias ErrorHandler = @convention(c) (Display?, UnsafeMutableRawPointer?) -> Int32
  typealias SetErrorHandler = @convention(c) (ErrorHandler?) -> OpaquePointer?

  let openDisplay: OpenDisplay
  let closeDisplay: OfDisplay
  let defaultScreen: OfDisplay
  let rootWindow: OfScreen
  let blackPixel: OfScreen
  let createSimpleWindow: CreateSimpleWindow
  let mapWindow: OfWindow
  let resizeWindow: ResizeWindow
  let destroyWindow: OfWindow
  let sync: Sync
  let getImage: GetImage
  let getPixel: GetPixel
  let destroyImage: DestroyImage
  let defaultDepth: DefaultDepth

  /// Xlib, or `nil` when `libX11.so.6` (or a symbol) is missing.
  static let shared: Xlib? = load()

  private init?(_ handle: UnsafeMutableRawPointer) {
    func symbol<T>(_ name: String) -> T? {
      dlsym(handle, name).map { unsafeBitCast($0, to: T.self) }
    }
    guard let openDisplay: OpenDisplay = symbol("XOpenDisplay"),
      let closeDisplay: OfDisplay = symbol("XCloseDisplay"),
      let defaultScreen: OfDisplay = symbol("XDefaultScreen"),
      let rootWindow: OfScreen = symbol("XRootWindow"),
      let blackPixel: OfScreen = symbol("XBlackPixel"),
      let createSimpleWindow: CreateSimpleWindow = symbol("XCreateSimpleWindow"),
      let mapWindow: OfWindow = symbol("XMapWindow"),
      let resizeWindow: ResizeWindow = symbol("XResizeWindow"),
      let destroyWindow: OfWindow = symbol("XDestroyWindow"),
      let sync: Sync = symbol("XSync"),
      let getImage: GetImage = symbol("XGetImage"),
      let getPixel: GetPixel = symbol("XGetPixel"),
      let destroyImage: DestroyImage = symbol("XDestroyImage"),
      let defaultDepth: DefaultDepth = symbol("XDefaultDepth"),
      let setErrorHandler: SetErrorHandler = symbol("XSetErrorHandler")
    else { return nil }
    self.openDisplay = openDisplay
    self.closeDisplay = closeDisplay
    self.defaultScreen = defaultScreen
    self.rootWindow = rootWindow
    self.blackPixel = blackPixel
    self.createSimpleWindow = createSimpleWindow
    self.mapWindow = mapWindow
    self.resizeWindow = resizeWindow
    self.destroyWindow = destroyWindow
    self.sync = sync
    self.getImage = getImage
    self.getPixel = getPixel
    self.destroyImage = destroyImage
    self.defaultDepth = defaultDepth
    _ = setErrorHandler { _, _ in
      xlibErrors.withLock { $0 += 1 }
      return 0
    }
  }

  private static func load() -> Xlib? {
    guard let handle = dlopen("libX11.so.6", RTLD_NOW | RTLD_GLOBAL) else { return nil }
    return Xlib(handle)
  }

  /// The window's pixels (`width × height` from its origin) as RGBA with alpha 255, read with
  /// `XGetImage` (ZPixmap) and `XGetPixel`. Assumes a TrueColor visual with 8-bit red, green
  /// and blue at bits 16, 8, 0 (Xvfb's 24-bit default); any other visual would make the
  /// comparisons fail, not pass.
  func pixels(_ display: Display, _ window: Window, width: Int, height: Int) -> RGBAImage? {
    let zPixmap: Int32 = 2
    let allPlanes = ~UInt(0)
    guard
      let image = getImage(
        display, window, 0, 0, UInt32(width), UInt32(height), allPlanes, zPixmap)
    else { return nil }
    defer { _ = destroyImage(image) }
    var rgba = [UInt8](repeating: 255, count: width * height * 4)
    for y in 0..<height {
      for x in 0..<width {
        let p = getPixel(image, Int32(x), Int32(y))
        let i = (y * width + x) * 4
        rgba[i] = UInt8(truncatingIfNeeded: p >> 16)
        rgba[i + 1] = UInt8(truncatingIfNeeded: p >> 8)
        rgba[i + 2] = UInt8(truncatingIfNeeded: p)
      }
    }
    return RGBAImage(width: width, height: height, pixels: rgba)
  }
}

/// Xlib errors seen by the handler (any is a failed test).
let xlibErrors = Locked(0)

/// An X display for the surface tests: a private `Xvfb` (preferred: nothing else draws on it,
/// no window manager reparents or covers the window) started for the test and stopped by
/// ``close()``, else the `DISPLAY` of the environment.
///
/// Xvfb picks a free display number itself and writes it to `-displayfd` once it accepts
/// connections, so there is no number to guess and nothing to poll: the test blocks on that
/// line.
final class XDisplay {
  let xlib: Xlib
  /// The GPU device of this display's surfaces, opened for it and gone with it. A Vulkan
  /// instance on Mesa keeps what it learnt of an X connection (its extensions' opcodes) for
  /// its whole life, keyed by the connection's address; the process-wide device would carry it
  /// over to the next test's server, whose connection may reuse the address, and send it
  /// requests it does not know (BadRequest).
  let devices = PngineDeviceProvider()
  let display: Xlib.Display
  let screen: Int32
  private let server: Process?

  /// The `Xvfb` on `PATH`, if any.
  static let xvfb: String? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/Xvfb" }
      .first { FileManager.default.isExecutableFile(atPath: $0) }
  }()

  /// Whether a display can be had: libX11 loads, and Xvfb or a `DISPLAY` is there.
  static var available: Bool {
    Xlib.shared != nil
      && (xvfb != nil || ProcessInfo.processInfo.environment["DISPLAY"] != nil)
  }

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  init() throws {
    guard let xlib = Xlib.shared else { throw Failure(description: "no libX11.so.6") }
    self.xlib = xlib
    var name: String
    if let xvfb = Self.xvfb {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: xvfb)
      // -terminate: the server exits when its last client goes, so a test process that
      // crashes does not leave it behind.
      process.arguments = [
        "-displayfd", "1", "-screen", "0", "640x480x24", "-nolisten", "tcp", "-terminate",
      ]
      let out = Pipe()
      process.standardOutput = out
      process.standardError = FileHandle.nullDevice
      try process.run()
      var line = Data()
      while !line.contains(UInt8(ascii: "\n")) {
        let chunk = out.fileHandleForReading.availableData
        if chunk.isEmpty { break }  // Xvfb exited before it was ready
        line += chunk
      }
      guard let number = String(decoding: line, as: UTF8.self).split(separator: "\n").first,
        Int(number) != nil
      else {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw Failure(description: "Xvfb did not start (\(process.terminationStatus))")
      }
      name = ":\(number)"
      server = process
    } else {
      name = ProcessInfo.processInfo.environment["DISPLAY"] ?? ":0"
      server = nil
    }
    guard let display = xlib.openDisplay(name) else {
      if let server { kill(server.processIdentifier, SIGKILL) }
      server?.waitUntilExit()
      throw Failure(description: "XOpenDisplay(\(name)) failed")
    }
    self.display = display
    screen = xlib.defaultScreen(display)
    // ``Xlib/pixels(_:_:width:height:)`` decodes 24-bit TrueColor.
    guard xlib.defaultDepth(display, screen) == 24 else {
      close()
      throw Failure(description: "\(name) is not 24 bits deep")
    }
  }

  /// A mapped `width × height` window at the screen's origin, black, processed by the server.
  func window(width: UInt32, height: UInt32) -> Xlib.Window {
    let root = xlib.rootWindow(display, screen)
    let black = xlib.blackPixel(display, screen)
    let window = xlib.createSimpleWindow(display, root, 0, 0, width, height, 0, black, black)
    _ = xlib.mapWindow(display, window)
    _ = xlib.sync(display, 0)
    return window
  }

  /// What the window shows, once the server has processed every request so far.
  func pixels(_ window: Xlib.Window, width: Int, height: Int) -> RGBAImage? {
    _ = xlib.sync(display, 0)
    return xlib.pixels(display, window, width: width, height: height)
  }

  /// The surface source for `window`.
  func source(_ window: Xlib.Window) -> SurfaceSource {
    .xlibWindow(display: UnsafeMutableRawPointer(display), window: UInt64(window))
  }

  /// Closes the connection and stops the private server.
  func close() {
    _ = xlib.closeDisplay(display)
    if let server {
      // SIGKILL: the child inherits the signal mask of the test's worker thread, where
      // SIGTERM may be blocked.
      kill(server.processIdentifier, SIGKILL)
      server.waitUntilExit()
    }
  }
}
