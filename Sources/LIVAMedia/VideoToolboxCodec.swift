#if canImport(VideoToolbox) && !os(Linux)
  import Accelerate
  import CoreMedia
  import CoreVideo
  import Foundation
  import Locking
  import VideoToolbox

  /// Apple platforms: H.264 through VideoToolbox, the hardware encoder and decoder of every
  /// iPhone. Kept thin on purpose (this machine compiles it for iOS, it cannot run it): the
  /// stream's framing is ``H264Stream``'s, tested on Linux against x264's packets, and a form
  /// made by any codec is checked against its images before the store uses it (frame 0 and the
  /// last frame decoded back), so an encoder or decoder that misbehaves on a device leaves the
  /// animation playing from its images rather than showing wrong pictures.
  ///
  /// The encoder takes the frames as BGRA pixel buffers from the session's pool, forces a key
  /// frame every `keyInterval` frames, never reorders frames (no B-frames) and completes each
  /// frame before the next goes in, so the frames it holds stay one or two. The decoder keeps
  /// one decompression session per parameter sets and copies each picture out as RGBA with
  /// vImage.
  public struct VideoToolboxCodec: VideoFrameCodec {
    /// A codec; VideoToolbox is on every Apple platform LIVA supports.
    public init() {}

    /// A VideoToolbox H.264 encoder. `crf` (x264's scale) becomes VideoToolbox's quality:
    /// `(51 - crf) / 51`, 0.65 at the form's 18.
    public func makeEncoder(width: Int, height: Int, keyInterval: Int, crf: Int)
      throws(LIVAMediaError) -> any VideoFrameEncoder
    {
      try Encoder(width: width, height: height, keyInterval: keyInterval, crf: crf)
    }

    /// A VideoToolbox H.264 decoder giving RGBA pictures.
    public func makeDecoder(width: Int, height: Int) throws(LIVAMediaError)
      -> any VideoFrameDecoder
    {
      Decoder(width: width, height: height)
    }

    static func failure(_ what: String, _ status: OSStatus) -> LIVAMediaError {
      LIVAMediaError(.corruptData, "VideoToolbox: \(what) failed (OSStatus \(status))")
    }

    /// BGRA pixel buffers of `width`×`height`, IOSurface-backed (what the hardware reads and
    /// writes without a copy).
    static func pixelBufferAttributes(_ width: Int, _ height: Int) -> CFDictionary {
      [
        kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA,
        kCVPixelBufferWidthKey: width,
        kCVPixelBufferHeightKey: height,
        kCVPixelBufferIOSurfacePropertiesKey: [String: Any](),
      ] as [CFString: Any] as CFDictionary
    }

    /// Copies `width`×`height` pixels from one buffer to another, exchanging the first and
    /// third byte of each: RGBA ⇄ BGRA, the same swap both ways.
    static func swapRedBlue(
      _ width: Int, _ height: Int, from source: UnsafeMutableRawPointer, rowBytes sourceRow: Int,
      to target: UnsafeMutableRawPointer, rowBytes targetRow: Int
    ) throws(LIVAMediaError) {
      var from = vImage_Buffer(
        data: source, height: vImagePixelCount(height), width: vImagePixelCount(width),
        rowBytes: sourceRow)
      var to = vImage_Buffer(
        data: target, height: vImagePixelCount(height), width: vImagePixelCount(width),
        rowBytes: targetRow)
      let map: [UInt8] = [2, 1, 0, 3]
      let result = vImagePermuteChannels_ARGB8888(&from, &to, map, vImage_Flags(kvImageNoFlags))
      guard result == kvImageNoError else {
        throw LIVAMediaError(.corruptData, "vImage: swapping red and blue failed (\(result))")
      }
    }

    final class Encoder: VideoFrameEncoder {
      let session: VTCompressionSession
      let width: Int
      let height: Int
      let keyInterval: Int
      /// Packets by frame number, and the first error, written by the output handler.
      let output = Locked<(packets: [Int: (Data, Bool)], error: LIVAMediaError?)>(([:], nil))
      var pushed = 0

      init(width: Int, height: Int, keyInterval: Int, crf: Int) throws(LIVAMediaError) {
        guard width > 0, height > 0, width % 2 == 0, height % 2 == 0, keyInterval > 0 else {
          throw LIVAMediaError(
            .invalidArgument, "H.264: \(width)×\(height) frames, key interval \(keyInterval)")
        }
        let attributes = VideoToolboxCodec.pixelBufferAttributes(width, height)
        var created: VTCompressionSession?
        let status = VTCompressionSessionCreate(
          allocator: kCFAllocatorDefault, width: Int32(clamping: width),
          height: Int32(clamping: height), codecType: kCMVideoCodecType_H264,
          encoderSpecification: nil, imageBufferAttributes: attributes,
          compressedDataAllocator: nil, outputCallback: nil, refcon: nil,
          compressionSessionOut: &created)
        guard status == noErr, let created else {
          throw VideoToolboxCodec.failure("creating the encoder", status)
        }
        session = created
        self.width = width
        self.height = height
        self.keyInterval = keyInterval
        let quality = Double(max(0, min(51, 51 - crf))) / 51
        let properties: [(CFString, CFTypeRef)] = [
          (kVTCompressionPropertyKey_RealTime, kCFBooleanFalse),
          (kVTCompressionPropertyKey_AllowFrameReordering, kCFBooleanFalse),
          (kVTCompressionPropertyKey_MaxKeyFrameInterval, keyInterval as CFNumber),
          (kVTCompressionPropertyKey_ProfileLevel, kVTProfileLevel_H264_Main_AutoLevel),
          (kVTCompressionPropertyKey_Quality, quality as CFNumber),
        ]
        for (key, value) in properties {
          let set = VTSessionSetProperty(created, key: key, value: value)
          guard set == noErr else {
            VTCompressionSessionInvalidate(created)
            throw VideoToolboxCodec.failure("setting \(key)", set)
          }
        }
        VTCompressionSessionPrepareToEncodeFrames(created)
      }

      deinit { VTCompressionSessionInvalidate(session) }

      func push(_ frame: RGBAImage) throws(LIVAMediaError) {
        guard frame.width == width, frame.height == height else {
          throw LIVAMediaError(
            .invalidArgument,
            "a \(frame.width)×\(frame.height) frame in a \(width)×\(height) animation")
        }
        let buffer = try pixelBuffer(frame)
        let index = pushed
        let time = CMTime(value: CMTimeValue(index), timescale: 30)
        let options =
          [kVTEncodeFrameOptionKey_ForceKeyFrame: index % keyInterval == 0] as [CFString: Any]
          as CFDictionary
        let output = output
        let status = VTCompressionSessionEncodeFrame(
          session, imageBuffer: buffer, presentationTimeStamp: time,
          duration: CMTime(value: 1, timescale: 30), frameProperties: options,
          infoFlagsOut: nil
        ) { status, _, sample in
          let packet = Result { () throws(LIVAMediaError) in
            guard status == noErr, let sample else {
              throw VideoToolboxCodec.failure("encoding frame \(index)", status)
            }
            return try Encoder.annexB(sample)
          }
          output.withLock { output in
            switch packet {
            case .success(let packet): output.packets[index] = packet
            case .failure(let error): output.error = output.error ?? error
            }
          }
        }
        guard status == noErr else {
          throw VideoToolboxCodec.failure("encoding frame \(index)", status)
        }
        pushed += 1
        // Done before the next frame goes in: the session holds one frame, not the animation.
        let completed = VTCompressionSessionCompleteFrames(
          session, untilPresentationTimeStamp: time)
        guard completed == noErr else {
          throw VideoToolboxCodec.failure("completing frame \(index)", completed)
        }
      }

      func finish() throws(LIVAMediaError) -> [(packet: Data, isKey: Bool)] {
        let completed = VTCompressionSessionCompleteFrames(
          session, untilPresentationTimeStamp: .invalid)
        guard completed == noErr else {
          throw VideoToolboxCodec.failure("completing the frames", completed)
        }
        let (packets, error) = output.withLock { ($0.packets, $0.error) }
        if let error { throw error }
        return try (0..<pushed).map { index throws(LIVAMediaError) in
          guard let packet = packets[index] else {
            throw LIVAMediaError(.corruptData, "VideoToolbox: frame \(index) was dropped")
          }
          return (packet.0, packet.1)
        }
      }

      /// A BGRA pixel buffer of the session's pool holding `frame`.
      func pixelBuffer(_ frame: RGBAImage) throws(LIVAMediaError) -> CVPixelBuffer {
        var created: CVPixelBuffer?
        var status: CVReturn = kCVReturnError
        if let pool = VTCompressionSessionGetPixelBufferPool(session) {
          status = CVPixelBufferPoolCreatePixelBuffer(kCFAllocatorDefault, pool, &created)
        }
        guard status == kCVReturnSuccess, let created else {
          throw VideoToolboxCodec.failure("taking a pixel buffer", status)
        }
        CVPixelBufferLockBaseAddress(created, [])
        defer { CVPixelBufferUnlockBaseAddress(created, []) }
        guard let base = CVPixelBufferGetBaseAddress(created),
          CVPixelBufferGetWidth(created) == width, CVPixelBufferGetHeight(created) == height
        else {
          throw LIVAMediaError(.corruptData, "VideoToolbox: a pixel buffer of the wrong size")
        }
        try frame.pixels.withUnsafeBytes { source in
          Result { () throws(LIVAMediaError) in
            // vImage only reads its source.
            try VideoToolboxCodec.swapRedBlue(
              width, height, from: UnsafeMutableRawPointer(mutating: source.baseAddress!),
              rowBytes: width * 4, to: base, rowBytes: CVPixelBufferGetBytesPerRow(created))
          }
        }.get()
        return created
      }

      /// An encoded sample as one Annex B packet: a key frame's parameter sets first.
      static func annexB(_ sample: CMSampleBuffer) throws(LIVAMediaError) -> (Data, Bool) {
        guard let block = CMSampleBufferGetDataBuffer(sample),
          let format = CMSampleBufferGetFormatDescription(sample)
        else { throw LIVAMediaError(.corruptData, "VideoToolbox: a sample with no data") }
        var isKey = true
        if let attachments = CMSampleBufferGetSampleAttachmentsArray(
          sample, createIfNecessary: false) as? [[String: Any]],
          let first = attachments.first,
          first[kCMSampleAttachmentKey_NotSync as String] as? Bool == true
        {
          isKey = false
        }
        var sets: [Data] = []
        var lengthSize: Int32 = 4
        if isKey {
          var count = 0
          var index = 0
          repeat {
            var pointer: UnsafePointer<UInt8>?
            var size = 0
            let status = CMVideoFormatDescriptionGetH264ParameterSetAtIndex(
              format, parameterSetIndex: index, parameterSetPointerOut: &pointer,
              parameterSetSizeOut: &size, parameterSetCountOut: &count,
              nalUnitHeaderLengthOut: &lengthSize)
            guard status == noErr, let pointer else {
              throw VideoToolboxCodec.failure("reading the parameter sets", status)
            }
            sets.append(Data(bytes: pointer, count: size))
            index += 1
          } while index < count
        } else {
          let status = CMVideoFormatDescriptionGetH264ParameterSetAtIndex(
            format, parameterSetIndex: 0, parameterSetPointerOut: nil, parameterSetSizeOut: nil,
            parameterSetCountOut: nil, nalUnitHeaderLengthOut: &lengthSize)
          guard status == noErr else {
            throw VideoToolboxCodec.failure("reading the NAL length size", status)
          }
        }
        let length = CMBlockBufferGetDataLength(block)
        var bytes = [UInt8](repeating: 0, count: length)
        let copied = CMBlockBufferCopyDataBytes(
          block, atOffset: 0, dataLength: length, destination: &bytes)
        guard copied == kCMBlockBufferNoErr else {
          throw VideoToolboxCodec.failure("copying a sample", copied)
        }
        let packet = try bytes.withUnsafeBytes { bytes in
          Result { () throws(LIVAMediaError) in
            try H264Stream.annexB(
              lengthPrefixed: bytes, lengthSize: Int(lengthSize), parameterSets: sets)
          }
        }.get()
        return (packet, isKey)
      }
    }

    final class Decoder: VideoFrameDecoder {
      let width: Int
      let height: Int
      var session: VTDecompressionSession?
      var format: CMVideoFormatDescription?
      /// The parameter sets the session was made for.
      var parameterSets: [Data] = []

      init(width: Int, height: Int) {
        self.width = width
        self.height = height
      }

      deinit { close() }

      func close() {
        if let session { VTDecompressionSessionInvalidate(session) }
        session = nil
        format = nil
        parameterSets = []
      }

      func reset() {
        // The next packet is a key frame, whose parameter sets make the session again when
        // they differ; VideoToolbox needs nothing forgotten otherwise.
        if let session { VTDecompressionSessionWaitForAsynchronousFrames(session) }
      }

      func decode(_ packet: UnsafeRawBufferPointer, picture: Bool, reusing buffer: inout [UInt8]?)
        throws(LIVAMediaError) -> RGBAImage?
      {
        let parts = try H264Stream.lengthPrefixed(annexB: packet)
        let sets = parts.sequenceParameterSets + parts.pictureParameterSets
        if !sets.isEmpty, sets != parameterSets || session == nil {
          try open(parts.sequenceParameterSets, parts.pictureParameterSets)
        }
        guard let session, let format else {
          throw LIVAMediaError(.corruptData, "H.264: a frame before its parameter sets")
        }
        let sample = try Self.sampleBuffer(parts.sample, format)
        let result = Locked<(status: OSStatus, image: CVImageBuffer?)?>(nil)
        // No asynchronous flag: the handler has run when the call returns.
        let status = VTDecompressionSessionDecodeFrame(
          session, sampleBuffer: sample, flags: [], infoFlagsOut: nil
        ) { status, _, image, _, _ in
          result.withLock { $0 = (status, image) }
        }
        guard status == noErr else { throw VideoToolboxCodec.failure("decoding", status) }
        VTDecompressionSessionWaitForAsynchronousFrames(session)
        guard let decoded = result.withLock({ $0 }), decoded.status == noErr else {
          throw VideoToolboxCodec.failure("decoding", result.withLock { $0?.status } ?? -1)
        }
        guard picture else { return nil }
        guard let image = decoded.image else {
          throw LIVAMediaError(.corruptData, "VideoToolbox: no picture for a frame")
        }
        return try copy(image, reusing: &buffer)
      }

      /// A decompression session for these parameter sets, giving BGRA pictures.
      func open(_ sequence: [Data], _ picture: [Data]) throws(LIVAMediaError) {
        close()
        guard let sps = sequence.last, let pps = picture.last else {
          throw LIVAMediaError(.corruptData, "H.264: a key frame without an SPS and a PPS")
        }
        var created: CMFormatDescription?
        let status = sps.withUnsafeBytes { sps in
          pps.withUnsafeBytes { pps in
            let pointers = [sps, pps].map { $0.bindMemory(to: UInt8.self).baseAddress! }
            return CMVideoFormatDescriptionCreateFromH264ParameterSets(
              allocator: kCFAllocatorDefault, parameterSetCount: 2,
              parameterSetPointers: pointers, parameterSetSizes: [sps.count, pps.count],
              nalUnitHeaderLength: 4, formatDescriptionOut: &created)
          }
        }
        guard status == noErr, let created else {
          throw VideoToolboxCodec.failure("reading the parameter sets", status)
        }
        let attributes = VideoToolboxCodec.pixelBufferAttributes(width, height)
        var made: VTDecompressionSession?
        let opened = VTDecompressionSessionCreate(
          allocator: kCFAllocatorDefault, formatDescription: created,
          decoderSpecification: nil, imageBufferAttributes: attributes, outputCallback: nil,
          decompressionSessionOut: &made)
        guard opened == noErr, let made else {
          throw VideoToolboxCodec.failure("creating the decoder", opened)
        }
        session = made
        format = created
        parameterSets = sequence + picture
      }

      /// One length-prefixed access unit as a sample buffer of `format`.
      static func sampleBuffer(_ data: Data, _ format: CMVideoFormatDescription)
        throws(LIVAMediaError) -> CMSampleBuffer
      {
        var block: CMBlockBuffer?
        var status = CMBlockBufferCreateWithMemoryBlock(
          allocator: kCFAllocatorDefault, memoryBlock: nil, blockLength: data.count,
          blockAllocator: kCFAllocatorDefault, customBlockSource: nil, offsetToData: 0,
          dataLength: data.count, flags: kCMBlockBufferAssureMemoryNowFlag,
          blockBufferOut: &block)
        guard status == kCMBlockBufferNoErr, let block else {
          throw VideoToolboxCodec.failure("allocating a sample", status)
        }
        status = data.withUnsafeBytes {
          CMBlockBufferReplaceDataBytes(
            with: $0.baseAddress!, blockBuffer: block, offsetIntoDestination: 0,
            dataLength: data.count)
        }
        guard status == kCMBlockBufferNoErr else {
          throw VideoToolboxCodec.failure("filling a sample", status)
        }
        var sample: CMSampleBuffer?
        var size = data.count
        status = CMSampleBufferCreateReady(
          allocator: kCFAllocatorDefault, dataBuffer: block, formatDescription: format,
          sampleCount: 1, sampleTimingEntryCount: 0, sampleTimingArray: nil,
          sampleSizeEntryCount: 1, sampleSizeArray: &size, sampleBufferOut: &sample)
        guard status == noErr, let sample else {
          throw VideoToolboxCodec.failure("making a sample", status)
        }
        return sample
      }

      /// The decoded picture as RGBA, into `buffer` when it has the size.
      func copy(_ image: CVImageBuffer, reusing buffer: inout [UInt8]?)
        throws(LIVAMediaError) -> RGBAImage
      {
        guard CVPixelBufferGetPixelFormatType(image) == kCVPixelFormatType_32BGRA,
          CVPixelBufferGetWidth(image) == width, CVPixelBufferGetHeight(image) == height
        else {
          throw LIVAMediaError(
            .corruptData,
            "VideoToolbox: a \(CVPixelBufferGetWidth(image))×\(CVPixelBufferGetHeight(image)) picture, not \(width)×\(height) BGRA"
          )
        }
        CVPixelBufferLockBaseAddress(image, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
        guard let base = CVPixelBufferGetBaseAddress(image) else {
          throw LIVAMediaError(.corruptData, "VideoToolbox: a picture with no pixels")
        }
        let count = width * height * 4
        var pixels = buffer ?? []
        buffer = nil
        if pixels.count != count { pixels = [UInt8](repeating: 0, count: count) }
        try pixels.withUnsafeMutableBytes { target in
          Result { () throws(LIVAMediaError) in
            try VideoToolboxCodec.swapRedBlue(
              width, height, from: base, rowBytes: CVPixelBufferGetBytesPerRow(image),
              to: target.baseAddress!, rowBytes: width * 4)
          }
        }.get()
        return try RGBAImage(width: width, height: height, pixels: pixels)
      }
    }
  }
#endif
