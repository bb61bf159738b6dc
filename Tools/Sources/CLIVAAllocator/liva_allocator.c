#include "liva_allocator.h"

// <stdlib.h> first: it defines __GLIBC__ where the C library is glibc.
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

int liva_fix_mmap_threshold(int bytes) {
#if defined(__GLIBC__)
  return mallopt(M_MMAP_THRESHOLD, bytes);
#else
  (void)bytes;
  return 0;
#endif
}
