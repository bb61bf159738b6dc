#include "liva_heap.h"

// <stdlib.h> first: it defines __GLIBC__ where the C library is glibc.
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#define LIVA_HEAP_MEASURED 1
#else
#define LIVA_HEAP_MEASURED 0
#endif

int liva_heap_measures(void) { return LIVA_HEAP_MEASURED; }

long long liva_heap_allocated_bytes(void) {
#if LIVA_HEAP_MEASURED
  struct mallinfo2 info = mallinfo2();
  return (long long)(info.uordblks + info.hblkhd);
#else
  return -1;
#endif
}
