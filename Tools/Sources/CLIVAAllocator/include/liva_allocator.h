#ifndef LIVA_ALLOCATOR_H
#define LIVA_ALLOCATOR_H

/// Fixes glibc's mmap threshold at `bytes`: blocks at least that large get a mapping of their
/// own, returned to the system when freed. A fixed threshold also stops glibc from raising it
/// after each large free. Returns 1 on success, 0 where there is nothing to tune (not glibc).
int liva_fix_mmap_threshold(int bytes);

#endif
