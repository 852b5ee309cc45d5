/* large: objects of more than SMALL_MAX bytes get private anonymous pages of their own at
 * never-reused addresses in the shadow region (no aliasing needed: nothing else lives on
 * their pages). free revokes them, which also returns their memory. With guard markers,
 * those of a few pages are carved one after another from a per-thread slab mapped in one
 * call (a guard revokes one without splitting the slab's mapping). */
#ifndef OSCAR_LARGE_H
#define OSCAR_LARGE_H
#include "base/core.h"

void *large_alloc(size_t size, size_t align);
/* For calloc: fresh pages, which the kernel zeroes (never a freed object's kept pages). */
void *large_alloc_zeroed(size_t size);
/* A large object of size bytes with len bytes of pages (len >= large_len(size)): the room
 * past its size lets later reallocs grow it in place. */
void *large_alloc_room(size_t size, size_t len);
/* Bytes of pages the live or freed large object at a (entry e) holds: large_len of its size
 * plus any growth room (its tail pages past that). */
size_t large_capacity(uintptr_t a, uint64_t e);
/* The pages to give a large object that realloc grows from cap bytes of pages to size:
 * at least double (at most 64 MiB more), so n appends cost O(log n) moves, not O(n). */
size_t large_growth_len(size_t size, size_t cap);
/* Free the live large object at a (entry e). False if e changed under us. */
bool large_free(uintptr_t a, uint64_t e);
/* Fast mode: the queued large object at a (marked freed by large_free) was revoked with its
 * batch (len bytes); or, when the batch could not be, revoke it now. */
void large_batch_revoked(uintptr_t a, size_t len);
void large_revoke_now(uintptr_t a, uint64_t e);
/* The live large object at a (cap bytes of pages) is the last one carved from the calling
 * thread's slab and the slab has room: its pages now run to len bytes (its head entry
 * is the caller's to update). False if not. */
bool large_extend_in_slab(uintptr_t a, size_t cap, size_t len);
/* Grow a live large object by moving its pages (no copy). NULL if not possible. */
void *large_grow_by_moving(uintptr_t a, uint64_t e, size_t new_size);
/* Pages of a large object of this size. */
static inline size_t large_len(size_t size) { return pages_for(size ? size : 1) << OSCAR_PAGE_SHIFT; }
#define LARGE_MAX (1ULL << 56)
#endif
