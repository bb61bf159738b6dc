import Foundation
import LIVAProtocol
import LIVATestSupport
import Testing

@testable import LIVAMedia

/// A form is checked against its images before the store keeps it: a codec that misbehaves
/// (as one on a device this project cannot run might) leaves its animation playing from the
/// images, counted, rather than showing wrong pictures.
@Suite("Playback form: checked against its images")
struct PlaybackFormCheckTests {
  /// FFmpeg's codec with one fault in its decoder.
  struct FaultyCodec: VideoFrameCodec {
    enum Fault: String, CaseIterable, Sendable {
      /// Red and blue exchanged (a BGRA picture read as RGBA).
      case swappedChannels
      /// Predicted frames decoded but not shown: every picture is its key frame's.
      case staleFrames
      /// One pixel not opaque (an alpha channel left unset).
      case translucent
    }

    let fault: Fault

    func makeEncoder(width: Int, height: Int, keyInterval: Int, crf: Int)
      throws(LIVAMediaError) -> any VideoFrameEncoder
    {
      guard let base = FFmpegVideoCodec() else { throw LIVAMediaError(.libraryUnavailable, "") }
      return try base.makeEncoder(
        width: width, height: height, keyInterval: keyInterval, crf: crf)
    }

    func makeDecoder(width: Int, height: Int) throws(LIVAMediaError) -> any VideoFrameDecoder {
      guard let base = FFmpegVideoCodec() else { throw LIVAMediaError(.libraryUnavailable, "") }
      return Decoder(base: try base.makeDecoder(width: width, height: height), fault: fault)
    }

    final class Decoder: VideoFrameDecoder {
      let base: any VideoFrameDecoder
      let fault: Fault
      var keyPicture: RGBAImage?

      init(base: any VideoFrameDecoder, fault: Fault) {
        self.base = base
        self.fault = fault
      }

      func reset() { base.reset() }

      func decode(_ packet: UnsafeRawBufferPointer, picture: Bool, reusing buffer: inout [UInt8]?)
        throws(LIVAMediaError) -> RGBAImage?
      {
        let isKey = try H264Stream.lengthPrefixed(annexB: packet).isKey
        guard var image = try base.decode(packet, picture: true, reusing: &buffer) else {
          return nil
        }
        switch fault {
        case .swappedChannels:
          for index in stride(from: 0, to: image.pixels.count, by: 4) {
            image.pixels.swapAt(index, index + 2)
          }
        case .staleFrames:
          if isKey { keyPicture = image }
          image = keyPicture ?? image
        case .translucent:
          image.pixels[3] = 254
        }
        return picture ? image : nil
      }
    }
  }

  @Test(
    "a codec that swaps channels, shows stale frames or leaves alpha unset: no form, the images play, counted",
    .enabled(if: PlaybackFormTests.codecAvailable || PlaybackFormTests.codecRequired),
    arguments: FaultyCodec.Fault.allCases)
  func faultyCodec(_ fault: FaultyCodec.Fault) throws {
    try requireTool(PlaybackFormTests.codecAvailable, "the FFmpeg of scripts/setup-video.sh")
    let root = try TestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let talking = try AnimationName(parsing: "talking_1_s_talking_1_e")
    // One key interval: the last frame is the most predicted one.
    let frames = (0..<BaseFrameStore.playbackKeyInterval).map { PlaybackFormTests.frame($0) }
    let store = try BaseFrameStore(
      root: root, videoCodec: FaultyCodec(fault: fault), makesPlaybackForms: false)
    try PlaybackFormTests().download(store, talking, frames)
    let before = store.statistics.diskBytes
    #expect(throws: LIVAMediaError.self) { try store.makePlaybackForm(talking) }
    #expect(!store.hasPlaybackForm(talking))
    #expect(store.statistics.playbackFormFailures == 1)
    let error = try #require(store.statistics.lastPlaybackFormError)
    #expect(error.code == .corruptData && error.message.contains("dB"), "\(error)")
    #expect(store.statistics.diskBytes == before)
    // Not tried again, and every frame is its image, exactly.
    #expect(try store.makePlaybackForm(talking) == false)
    for index in frames.indices { #expect(try store.frame(index, of: talking) == frames[index]) }
    #expect(store.statistics.playbackFrames == 0)
  }

  @Test("fidelity: infinite when equal, 48.1 dB at one level off everywhere, 0 when not opaque")
  func fidelity() throws {
    let image = PlaybackFormTests.frame(0)
    #expect(PlaybackForm.fidelity(of: image, to: image) == .infinity)
    var off = image
    for index in off.pixels.indices where index % 4 != 3 {
      off.pixels[index] = off.pixels[index] == 255 ? 254 : off.pixels[index] + 1
    }
    #expect(abs(PlaybackForm.fidelity(of: off, to: image) - 48.13) < 0.01)
    var translucent = image
    translucent[3, 3] = RGBA(1, 2, 3, 254)
    #expect(PlaybackForm.fidelity(of: translucent, to: image) == 0)
    #expect(PlaybackForm.fidelity(of: PlaybackFormTests.frame(0, width: 64), to: image) == 0)
  }
}
