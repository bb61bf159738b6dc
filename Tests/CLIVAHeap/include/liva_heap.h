#ifndef LIVA_HEAP_H
#define LIVA_HEAP_H

/// Bytes the C heap holds now over every arena (glibc's mallinfo2: in-use arena bytes plus
/// separately mapped chunks), or -1 where the C library does not say.
long long liva_heap_allocated_bytes(void);

/// 1 where liva_heap_allocated_bytes measures (glibc 2.33 or newer, which has mallinfo2), so
/// that it never returns -1; 0 elsewhere.
int liva_heap_measures(void);

#endif
