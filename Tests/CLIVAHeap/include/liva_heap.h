#ifndef LIVA_HEAP_H
#define LIVA_HEAP_H

/// Bytes the C heap holds now over every arena (glibc's mallinfo2: in-use arena bytes plus
/// separately mapped chunks), or -1 where the C library does not say.
long long liva_heap_allocated_bytes(void);

#endif
