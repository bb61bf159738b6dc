import Foundation

/// A PNG reader that shares no code with the project's writers: scripts/interop/png_rgba.py
/// (Python's zlib and the PNG specification's row filters, run by the system's python3). A
/// writer that swapped channels, filtered a row wrongly or mangled alpha would be read back as
/// the same wrong pixels by its own reader, but not by this one.
public enum IndependentPNG {
  /// Whether python3 is there to run the reader.
  public static var isAvailable: Bool {
    FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
  }

  /// `width height hex` of the RGBA pixels read from `png`; nil when the reader refused it.
  public static func read(_ png: [UInt8]) throws -> String? {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
      "liva-png-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("image.png")
    try Data(png).write(to: file)
    let script = PythonProcess.repositoryRoot.appendingPathComponent(
      "scripts/interop/png_rgba.py")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = [script.path, file.path]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return text.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// What ``read(_:)`` must answer for an image of these RGBA pixels.
  public static func expected(width: Int, height: Int, pixels: some Sequence<UInt8>) -> String {
    "\(width) \(height) " + pixels.map { String(format: "%02x", $0) }.joined()
  }
}
