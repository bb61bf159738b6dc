import Foundation

/// Resident memory of this process, read from `/proc/self/status` (Linux), for the tests that
/// bound what a process keeps and for `liva bench-session`'s samples.
public enum ResidentMemory {
  /// `field` of `/proc/self/status`, in KiB: `VmRSS:` (all resident pages), or `RssAnon:` (the
  /// private, dirty ones: what iOS counts in an app's footprint; code and other file pages are
  /// shared and clean). Nil where there is no such file or field.
  public static func kibibytes(_ field: String = "VmRSS:") -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else {
      return nil
    }
    let line = status.split(separator: "\n").first { $0.hasPrefix(field) }
    return line?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
  }
}
