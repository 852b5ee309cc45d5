/* foreign: pointers Oscar never handed out that belong to glibc's own malloc (issue 18, item
 * 19). A library loaded with RTLD_DEEPBIND looks its symbols up in its own dependencies first,
 * so its malloc is libc's, not the preloaded Oscar's; the pointers it hands to the program then
 * reach Oscar's free, realloc and malloc_usable_size. They go back to glibc when they are
 * glibc's: inside the brk heap (main arena), or the start of a chunk glibc mapped for itself.
 * A chunk of another glibc arena (a thread's, in its own 64 MiB heap) is not recognised and
 * is still reported as an invalid free. Called only once a pointer is known not to be Oscar's
 * (the error path): it reads /proc/self/stat once and asks mincore before reading a header. */
#ifndef OSCAR_FOREIGN_H
#define OSCAR_FOREIGN_H
#include "base/core.h"

/* Is p (not Oscar's) a live-looking chunk of glibc's malloc? Then *usable is its room. */
bool foreign_is_libcs(const void *p, size_t *usable);
/* Give it back to glibc. */
void foreign_free(void *p);
#endif
