#ifndef LIVA_ALLOCATOR_H
#define LIVA_ALLOCATOR_H

/// Fixes glibc's mmap threshold at `bytes`: blocks at least that large get a mapping of their
/// own, returned to the system when freed. A fixed threshold also stops glibc from raising it
/// after each large free. Returns 1 on success, 0 where there is nothing to tune (not glibc).
int liva_fix_mmap_threshold(int bytes);

/// Bytes of the C heap in use (glibc's `mallinfo2`: allocated arena bytes plus separately
/// mapped blocks), or -1 where the C library does not say. Unlike resident memory, it does not
/// count freed memory the allocator keeps.
long long liva_heap_in_use_bytes(void);

#endif
