#ifndef LIVA_JPEG_H
#define LIVA_JPEG_H

#include <stddef.h>
#include <stdint.h>

/// Result codes of liva_jpeg_decode_rgba.
enum {
  LIVA_JPEG_OK = 0,
  LIVA_JPEG_CORRUPT = 1,
  LIVA_JPEG_TRUNCATED = 2,
  LIVA_JPEG_TOO_LARGE = 3,
  LIVA_JPEG_NO_MEMORY = 4,
  LIVA_JPEG_UNAVAILABLE = 5
};

/// Decodes a JPEG to straight-alpha RGBA8 (alpha 255), rows top first, stride width*4.
///
/// libjpeg reports errors with longjmp, which must never cross Swift frames; this shim keeps
/// setjmp/longjmp entirely inside C. On LIVA_JPEG_OK, *pixels is a malloc'd buffer of
/// width*height*4 bytes that the caller frees with free(). Any warning (premature end of
/// data, corrupt entropy data) is reported as an error: a partial image is never returned.
/// `message` receives libjpeg's text for the problem (always NUL-terminated).
int liva_jpeg_decode_rgba(const uint8_t *data, size_t size, size_t max_pixels,
                          uint8_t **pixels, int *width, int *height,
                          char *message, size_t message_size);

#endif
