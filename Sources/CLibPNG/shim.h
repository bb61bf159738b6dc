// libpng's simplified API (png_image_*) only. The classic API reports errors with longjmp,
// which Swift code cannot survive; the simplified API catches them inside libpng and
// returns 0 with a message in png_image.message.
#include <png.h>

// Macros Swift cannot import (they are built from other macros).
static const unsigned int CLibPNG_FORMAT_RGBA = PNG_FORMAT_RGBA;
static const unsigned int CLibPNG_IMAGE_VERSION = PNG_IMAGE_VERSION;
static const unsigned int CLibPNG_IMAGE_FLAG_FAST = PNG_IMAGE_FLAG_FAST;

// The most bytes a PNG of `image` (8-bit RGBA, no colormap) can take: one pass of encoding
// into a buffer this large always fits.
static inline png_alloc_size_t CLibPNG_size_max(png_image image) {
  return PNG_IMAGE_PNG_SIZE_MAX(image);
}
