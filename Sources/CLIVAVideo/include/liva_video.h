#ifndef LIVA_VIDEO_H
#define LIVA_VIDEO_H

#include <stddef.h>
#include <stdint.h>

/// Result codes of the liva_video_* functions.
enum {
  LIVA_VIDEO_OK = 0,
  LIVA_VIDEO_UNAVAILABLE = 1,  ///< no H.264 encoder or decoder in this libavcodec
  LIVA_VIDEO_INVALID = 2,      ///< a size or argument the codec cannot take
  LIVA_VIDEO_FAILED = 3,       ///< the codec reported an error (message says which)
  LIVA_VIDEO_NO_FRAME = 4,     ///< the decoder gave no picture for the packet
  LIVA_VIDEO_NO_MEMORY = 5
};

/// Encodes RGBA frames of one animation as H.264 (4:2:0, no B-frames, a key frame every
/// `key_interval` frames, one packet per frame in frame order). Opaque type.
typedef struct liva_video_encoder liva_video_encoder;

/// Opens an encoder for `width`×`height` (both even) at constant quality `crf` (0–51, lower is
/// better). NULL with `message` set when no encoder is available or the size is refused.
liva_video_encoder *liva_video_encoder_open(int width, int height, int key_interval, int crf,
                                            char *message, size_t message_size);

/// Encodes the next frame: `rgba` is width*height*4 bytes, straight alpha, rows top first.
int liva_video_encoder_push(liva_video_encoder *encoder, const uint8_t *rgba, char *message,
                            size_t message_size);

/// Flushes the encoder. On LIVA_VIDEO_OK, *packets is the frames' packets one after another
/// (Annex B), *sizes the size of each, *keys 1 for each key frame, *count how many (one per
/// frame pushed); all three are owned by the encoder and valid until it is closed.
int liva_video_encoder_finish(liva_video_encoder *encoder, const uint8_t **packets,
                              const int32_t **sizes, const uint8_t **keys, int *count,
                              char *message, size_t message_size);

void liva_video_encoder_close(liva_video_encoder *encoder);

/// Decodes one animation's packets, in order from a key frame, to RGBA. Opaque type.
typedef struct liva_video_decoder liva_video_decoder;

/// Opens a one-thread, low-delay H.264 decoder whose pictures must be `width`×`height`.
liva_video_decoder *liva_video_decoder_open(int width, int height, char *message,
                                            size_t message_size);

/// Decodes `packet` and writes its picture to `rgba` (width*height*4 bytes, alpha 255), or
/// only decodes it when `rgba` is NULL (a frame passed on the way to a later one).
/// LIVA_VIDEO_NO_FRAME when the packet gave no picture or one of another size.
int liva_video_decode(liva_video_decoder *decoder, const uint8_t *packet, size_t size,
                      uint8_t *rgba, char *message, size_t message_size);

/// Forgets the pictures decoded so far: the next packet must be a key frame.
void liva_video_decoder_reset(liva_video_decoder *decoder);

void liva_video_decoder_close(liva_video_decoder *decoder);

#endif
