// The H.264 playback form of base frames through libavcodec and libswscale (Linux).
#include "liva_video.h"

#include <libavcodec/avcodec.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *message, size_t size, const char *what, int error) {
  if (!message || size == 0) return;
  if (error) {
    char reason[AV_ERROR_MAX_STRING_SIZE] = {0};
    av_strerror(error, reason, sizeof reason);
    snprintf(message, size, "%s: %s", what, reason);
  } else {
    snprintf(message, size, "%s", what);
  }
}

// MARK: Encoder

struct liva_video_encoder {
  AVCodecContext *context;
  struct SwsContext *scale;
  AVFrame *frame;
  AVPacket *packet;
  int width, height, key_interval;
  int64_t pushed;
  uint8_t *bytes;
  size_t used, capacity;
  int32_t *sizes;
  uint8_t *keys;
  int count, slots;
};

void liva_video_encoder_close(liva_video_encoder *encoder) {
  if (!encoder) return;
  avcodec_free_context(&encoder->context);
  sws_freeContext(encoder->scale);
  av_frame_free(&encoder->frame);
  av_packet_free(&encoder->packet);
  free(encoder->bytes);
  free(encoder->sizes);
  free(encoder->keys);
  free(encoder);
}

// libav* print to stderr by default: an app's console is not theirs. Errors come back as codes.
static void quiet(void) { av_log_set_level(AV_LOG_QUIET); }

liva_video_encoder *liva_video_encoder_open(int width, int height, int key_interval, int crf,
                                            char *message, size_t message_size) {
  quiet();
  if (width <= 0 || height <= 0 || (width | height) & 1 || width > 8192 || height > 8192 ||
      key_interval <= 0) {
    say(message, message_size, "the size must be even and at most 8192, the interval positive", 0);
    return NULL;
  }
  // x264 when present (constant quality, exact key frames); any other H.264 encoder else.
  const AVCodec *codec = avcodec_find_encoder_by_name("libx264");
  int x264 = codec != NULL;
  if (!codec) codec = avcodec_find_encoder(AV_CODEC_ID_H264);
  if (!codec) {
    say(message, message_size, "this libavcodec has no H.264 encoder", 0);
    return NULL;
  }
  liva_video_encoder *encoder = calloc(1, sizeof *encoder);
  if (!encoder) return NULL;
  encoder->width = width;
  encoder->height = height;
  encoder->key_interval = key_interval;
  AVCodecContext *context = avcodec_alloc_context3(codec);
  encoder->context = context;
  encoder->frame = av_frame_alloc();
  encoder->packet = av_packet_alloc();
  if (!context || !encoder->frame || !encoder->packet) goto no_memory;
  context->width = width;
  context->height = height;
  context->pix_fmt = AV_PIX_FMT_YUV420P;
  context->time_base = (AVRational){1, 30};
  context->framerate = (AVRational){30, 1};
  context->gop_size = key_interval;
  context->max_b_frames = 0;
  context->thread_count = 1;
  context->color_range = AVCOL_RANGE_MPEG;
  context->colorspace = AVCOL_SPC_SMPTE170M;
  context->color_primaries = AVCOL_PRI_SMPTE170M;
  context->color_trc = AVCOL_TRC_SMPTE170M;
  if (x264) {
    char quality[16];
    snprintf(quality, sizeof quality, "%d", crf < 0 ? 0 : crf > 51 ? 51 : crf);
    av_opt_set(context->priv_data, "crf", quality, 0);
    av_opt_set(context->priv_data, "preset", "fast", 0);
    // fastdecode: no CABAC, no deblocking, no weighted prediction (decoding is the cost we
    // pay every frame); zerolatency: no look-ahead, so each frame's packet comes at once; one
    // reference picture: the decoder holds fewer pictures.
    av_opt_set(context->priv_data, "tune", "fastdecode,zerolatency", 0);
    av_opt_set(context->priv_data, "x264-params", "scenecut=0:bframes=0:ref=1", 0);
    av_opt_set(context->priv_data, "forced-idr", "1", 0);
  }
  int error = avcodec_open2(context, codec, NULL);
  if (error < 0) {
    say(message, message_size, "cannot open the H.264 encoder", error);
    liva_video_encoder_close(encoder);
    return NULL;
  }
  encoder->frame->format = AV_PIX_FMT_YUV420P;
  encoder->frame->width = width;
  encoder->frame->height = height;
  if (av_frame_get_buffer(encoder->frame, 0) < 0) goto no_memory;
  encoder->scale = sws_getContext(width, height, AV_PIX_FMT_RGBA, width, height,
                                  AV_PIX_FMT_YUV420P, SWS_BICUBIC | SWS_ACCURATE_RND, NULL,
                                  NULL, NULL);
  if (!encoder->scale) goto no_memory;
  return encoder;
no_memory:
  say(message, message_size, "out of memory", 0);
  liva_video_encoder_close(encoder);
  return NULL;
}

// Takes every packet the encoder has ready.
static int drain(liva_video_encoder *encoder, char *message, size_t message_size) {
  while (1) {
    int error = avcodec_receive_packet(encoder->context, encoder->packet);
    if (error == AVERROR(EAGAIN) || error == AVERROR_EOF) return LIVA_VIDEO_OK;
    if (error < 0) {
      say(message, message_size, "the encoder failed", error);
      return LIVA_VIDEO_FAILED;
    }
    AVPacket *packet = encoder->packet;
    // One packet per frame, in frame order: a packet out of order would be drawn as another
    // frame.
    if (packet->pts != encoder->count) {
      av_packet_unref(packet);
      say(message, message_size, "the encoder reordered frames", 0);
      return LIVA_VIDEO_FAILED;
    }
    if (encoder->used + (size_t)packet->size > encoder->capacity) {
      size_t capacity = (encoder->capacity + (size_t)packet->size) * 2;
      uint8_t *bytes = realloc(encoder->bytes, capacity);
      if (!bytes) {
        av_packet_unref(packet);
        return LIVA_VIDEO_NO_MEMORY;
      }
      encoder->bytes = bytes;
      encoder->capacity = capacity;
    }
    if (encoder->count == encoder->slots) {
      int slots = encoder->slots ? encoder->slots * 2 : 64;
      int32_t *sizes = realloc(encoder->sizes, sizeof(int32_t) * (size_t)slots);
      if (sizes) encoder->sizes = sizes;
      uint8_t *keys = realloc(encoder->keys, (size_t)slots);
      if (keys) encoder->keys = keys;
      if (!sizes || !keys) {
        av_packet_unref(packet);
        return LIVA_VIDEO_NO_MEMORY;
      }
      encoder->slots = slots;
    }
    memcpy(encoder->bytes + encoder->used, packet->data, (size_t)packet->size);
    encoder->used += (size_t)packet->size;
    encoder->sizes[encoder->count] = packet->size;
    encoder->keys[encoder->count] = (packet->flags & AV_PKT_FLAG_KEY) ? 1 : 0;
    encoder->count += 1;
    av_packet_unref(packet);
  }
}

int liva_video_encoder_push(liva_video_encoder *encoder, const uint8_t *rgba, char *message,
                            size_t message_size) {
  if (!encoder || !rgba) return LIVA_VIDEO_INVALID;
  AVFrame *frame = encoder->frame;
  if (av_frame_make_writable(frame) < 0) return LIVA_VIDEO_NO_MEMORY;
  const uint8_t *planes[1] = {rgba};
  const int strides[1] = {encoder->width * 4};
  sws_scale(encoder->scale, planes, strides, 0, encoder->height, frame->data, frame->linesize);
  frame->pts = encoder->pushed;
  frame->pict_type =
      encoder->pushed % encoder->key_interval == 0 ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
  encoder->pushed += 1;
  int error = avcodec_send_frame(encoder->context, frame);
  if (error < 0) {
    say(message, message_size, "the encoder refused a frame", error);
    return LIVA_VIDEO_FAILED;
  }
  return drain(encoder, message, message_size);
}

int liva_video_encoder_finish(liva_video_encoder *encoder, const uint8_t **packets,
                              const int32_t **sizes, const uint8_t **keys, int *count,
                              char *message, size_t message_size) {
  if (!encoder) return LIVA_VIDEO_INVALID;
  int error = avcodec_send_frame(encoder->context, NULL);
  if (error < 0 && error != AVERROR_EOF) {
    say(message, message_size, "cannot flush the encoder", error);
    return LIVA_VIDEO_FAILED;
  }
  int result = drain(encoder, message, message_size);
  if (result != LIVA_VIDEO_OK) return result;
  if (encoder->count != encoder->pushed) {
    say(message, message_size, "the encoder dropped or added frames", 0);
    return LIVA_VIDEO_FAILED;
  }
  *packets = encoder->bytes;
  *sizes = encoder->sizes;
  *keys = encoder->keys;
  *count = encoder->count;
  return LIVA_VIDEO_OK;
}

// MARK: Decoder

struct liva_video_decoder {
  AVCodecContext *context;
  AVPacket *packet;
  AVFrame *frame;
  struct SwsContext *scale;
  int width, height;
  uint8_t *padded;
  size_t padded_size;
};

void liva_video_decoder_close(liva_video_decoder *decoder) {
  if (!decoder) return;
  avcodec_free_context(&decoder->context);
  av_packet_free(&decoder->packet);
  av_frame_free(&decoder->frame);
  sws_freeContext(decoder->scale);
  av_free(decoder->padded);
  free(decoder);
}

liva_video_decoder *liva_video_decoder_open(int width, int height, char *message,
                                            size_t message_size) {
  quiet();
  if (width <= 0 || height <= 0 || width > 8192 || height > 8192) {
    say(message, message_size, "the size is outside 1...8192", 0);
    return NULL;
  }
  const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_H264);
  if (!codec) {
    say(message, message_size, "this libavcodec has no H.264 decoder", 0);
    return NULL;
  }
  liva_video_decoder *decoder = calloc(1, sizeof *decoder);
  if (!decoder) return NULL;
  decoder->width = width;
  decoder->height = height;
  decoder->context = avcodec_alloc_context3(codec);
  decoder->packet = av_packet_alloc();
  decoder->frame = av_frame_alloc();
  if (!decoder->context || !decoder->packet || !decoder->frame) {
    say(message, message_size, "out of memory", 0);
    liva_video_decoder_close(decoder);
    return NULL;
  }
  // One thread (the caller's worker is the parallelism) and every picture out at once.
  decoder->context->thread_count = 1;
  decoder->context->flags |= AV_CODEC_FLAG_LOW_DELAY;
  int error = avcodec_open2(decoder->context, codec, NULL);
  if (error < 0) {
    say(message, message_size, "cannot open the H.264 decoder", error);
    liva_video_decoder_close(decoder);
    return NULL;
  }
  return decoder;
}

void liva_video_decoder_reset(liva_video_decoder *decoder) {
  if (decoder) avcodec_flush_buffers(decoder->context);
}

int liva_video_decode(liva_video_decoder *decoder, const uint8_t *packet, size_t size,
                      uint8_t *rgba, char *message, size_t message_size) {
  if (!decoder || !packet || size == 0 || size > (1u << 30)) return LIVA_VIDEO_INVALID;
  // The bitstream reader may read past the end: a copy with zeroed padding.
  if (decoder->padded_size < size + AV_INPUT_BUFFER_PADDING_SIZE) {
    av_free(decoder->padded);
    decoder->padded_size = size + AV_INPUT_BUFFER_PADDING_SIZE;
    decoder->padded = av_malloc(decoder->padded_size);
    if (!decoder->padded) {
      decoder->padded_size = 0;
      return LIVA_VIDEO_NO_MEMORY;
    }
  }
  memcpy(decoder->padded, packet, size);
  memset(decoder->padded + size, 0, AV_INPUT_BUFFER_PADDING_SIZE);
  decoder->packet->data = decoder->padded;
  decoder->packet->size = (int)size;
  int error = avcodec_send_packet(decoder->context, decoder->packet);
  decoder->packet->data = NULL;
  decoder->packet->size = 0;
  if (error < 0) {
    say(message, message_size, "the decoder refused the packet", error);
    return LIVA_VIDEO_FAILED;
  }
  error = avcodec_receive_frame(decoder->context, decoder->frame);
  if (error == AVERROR(EAGAIN)) {
    say(message, message_size, "the packet gave no picture", 0);
    return LIVA_VIDEO_NO_FRAME;
  }
  if (error < 0) {
    say(message, message_size, "the decoder failed", error);
    return LIVA_VIDEO_FAILED;
  }
  AVFrame *frame = decoder->frame;
  int result = LIVA_VIDEO_OK;
  if (!rgba) {
    // Decoded for the frames after it only: no conversion.
  } else if (frame->width != decoder->width || frame->height != decoder->height ||
      (frame->format != AV_PIX_FMT_YUV420P && frame->format != AV_PIX_FMT_YUVJ420P) ||
      frame->decode_error_flags) {
    say(message, message_size, "the picture has another size or format, or is damaged", 0);
    result = LIVA_VIDEO_NO_FRAME;
  } else {
    decoder->scale = sws_getCachedContext(decoder->scale, frame->width, frame->height,
                                          frame->format, decoder->width, decoder->height,
                                          AV_PIX_FMT_RGBA, SWS_BILINEAR, NULL, NULL, NULL);
    if (!decoder->scale) {
      result = LIVA_VIDEO_NO_MEMORY;
    } else {
      uint8_t *planes[1] = {rgba};
      int strides[1] = {decoder->width * 4};
      sws_scale(decoder->scale, (const uint8_t *const *)frame->data, frame->linesize, 0,
                frame->height, planes, strides);
    }
  }
  av_frame_unref(frame);
  return result;
}
