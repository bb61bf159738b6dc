#include "liva_jpeg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <setjmp.h>
#include <jpeglib.h>
#include <jerror.h>

#if !defined(JCS_EXTENSIONS)
#error "LIVAMedia's JPEG shim needs libjpeg-turbo (JCS_EXT_RGBA); install libjpeg-dev from Debian"
#endif

struct liva_error_manager {
  struct jpeg_error_mgr base;
  jmp_buf jump;
  int hit_end_of_input;  // the memory source ran out and libjpeg inserted a fake EOI
};

static void liva_on_error(j_common_ptr cinfo) {
  struct liva_error_manager *manager = (struct liva_error_manager *)cinfo->err;
  longjmp(manager->jump, 1);
}

// Warnings are counted by libjpeg (num_warnings) and inspected after decoding; print nothing,
// but remember running out of input: later errors are then a consequence of truncation.
static void liva_on_message(j_common_ptr cinfo) { (void)cinfo; }

static void liva_on_emit(j_common_ptr cinfo, int level) {
  struct liva_error_manager *manager = (struct liva_error_manager *)cinfo->err;
  if (level < 0) {
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) manager->hit_end_of_input = 1;
    cinfo->err->num_warnings++;
  }
}

static void liva_copy_message(j_common_ptr cinfo, char *message, size_t message_size) {
  char text[JMSG_LENGTH_MAX];
  text[0] = 0;
  (*cinfo->err->format_message)(cinfo, text);
  snprintf(message, message_size, "%s", text);
}

int liva_jpeg_decode_rgba(const uint8_t *data, size_t size, size_t max_pixels,
                          uint8_t **pixels, int *width, int *height,
                          char *message, size_t message_size) {
  struct jpeg_decompress_struct cinfo;
  struct liva_error_manager errors;
  // Read after a longjmp, so volatile.
  uint8_t *volatile output = NULL;
  volatile int result = LIVA_JPEG_CORRUPT;

  *pixels = NULL;
  *width = 0;
  *height = 0;
  if (message_size > 0) message[0] = 0;
  if (size == 0) {
    snprintf(message, message_size, "empty input");
    return LIVA_JPEG_TRUNCATED;
  }

  cinfo.err = jpeg_std_error(&errors.base);
  errors.base.error_exit = liva_on_error;
  errors.base.output_message = liva_on_message;
  errors.base.emit_message = liva_on_emit;
  errors.hit_end_of_input = 0;
  if (setjmp(errors.jump)) {
    liva_copy_message((j_common_ptr)&cinfo, message, message_size);
    result = errors.hit_end_of_input || errors.base.msg_code == JERR_INPUT_EOF
                 ? LIVA_JPEG_TRUNCATED : LIVA_JPEG_CORRUPT;
    jpeg_destroy_decompress(&cinfo);
    free(output);
    return result;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, (const unsigned char *)data, (unsigned long)size);
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.image_width == 0 || cinfo.image_height == 0 ||
      (size_t)cinfo.image_width * (size_t)cinfo.image_height > max_pixels) {
    snprintf(message, message_size, "%ux%u exceeds the limit of %zu pixels",
             cinfo.image_width, cinfo.image_height, max_pixels);
    jpeg_destroy_decompress(&cinfo);
    return LIVA_JPEG_TOO_LARGE;
  }
  cinfo.out_color_space = JCS_EXT_RGBA;
  jpeg_start_decompress(&cinfo);
  size_t stride = (size_t)cinfo.output_width * 4;
  output = malloc(stride * cinfo.output_height);
  if (output == NULL) {
    snprintf(message, message_size, "out of memory");
    jpeg_destroy_decompress(&cinfo);
    return LIVA_JPEG_NO_MEMORY;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = output + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  if (errors.base.num_warnings > 0) {
    liva_copy_message((j_common_ptr)&cinfo, message, message_size);
    result = errors.hit_end_of_input ? LIVA_JPEG_TRUNCATED : LIVA_JPEG_CORRUPT;
    jpeg_destroy_decompress(&cinfo);
    free(output);
    return result;
  }
  *width = (int)cinfo.output_width;
  *height = (int)cinfo.output_height;
  jpeg_destroy_decompress(&cinfo);
  *pixels = output;
  return LIVA_JPEG_OK;
}

#else

int liva_jpeg_decode_rgba(const uint8_t *data, size_t size, size_t max_pixels,
                          uint8_t **pixels, int *width, int *height,
                          char *message, size_t message_size) {
  (void)data; (void)size; (void)max_pixels;
  *pixels = NULL; *width = 0; *height = 0;
  snprintf(message, message_size, "libjpeg is only used on Linux");
  return LIVA_JPEG_UNAVAILABLE;
}

#endif
