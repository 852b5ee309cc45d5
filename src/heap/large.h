/* large: objects of more than SMALL_MAX bytes get private anonymous pages of their own at
 * never-reused addresses in the shadow region (no aliasing needed: nothing else lives on
 * their pages). free revokes them, which also returns their memory. With guard markers,
 * those of a few pages are carved one after another from a per-thread slab mapped in one
 * call (a guard revokes one without splitting the slab's mapping). */
#ifndef OSCAR_LARGE_H
#define OSCAR_LARGE_H
#include "base/core.h"
#include "mem/region.h"

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
/* Set, above the size, in the first page's entry of a freed large object (PK_LARGE_GUARDED
 * or PK_LARGE_FREED) while its freeing thread still works on its pages: moving them to the
 * keep, guarding them (at once, or with its fast-mode retire queue), revoking them. Only
 * that thread writes such an entry. Without it the object is *settled*: no thread uses its
 * pages again, so a dead stretch or the reclaim sweep may make a guarded one PROT_NONE at
 * any time, and nothing else is ever done to them. (Sizes stay below LARGE_MAX.)
 *
 * Who acts on a freed object's pages, with the locks held (no lock is shared among them:
 * the mark keeps them apart):
 *   its free (large_free, the retire queue's flush, large_revoke_now): no lock (keep_put
 *     takes the keep lock to pick a slot, not across the move); marked throughout;
 *   a free's dead stretch (retire_dead_stretch): no lock; settled guarded objects only;
 *   the reclaim sweep (large_retire_chunk): the reclaim lock, and whatever lower-ranked
 *     lock the thread whose region_take set it off holds (the fallback cache's); settled
 *     guarded objects only, and it reclaims only chunks in which no page is marked.
 * The last two may both make an object PROT_NONE: the same as once.
 * A fork child keeps the mark of a free another thread of the parent had under way: that
 * object's chunk is never reclaimed in the child. */
#define LARGE_FREEING (1ULL << 62)
/* The size in a large object's first page's entry e (live or freed). */
static inline size_t large_size(uint64_t e) { return entry_payload(e & ~LARGE_FREEING); }
/* The freed large object at a (len bytes of pages, marked by its free) carries its guard
 * markers now (fast mode: with its retire queue's batch): it is settled. Or, when the
 * batch could not be guarded, revoke it now (e: its entry as queued), settled after too. */
void large_batch_revoked(uintptr_t a, size_t len);
void large_revoke_now(uintptr_t a, uint64_t e);
/* The reclaim sweep: every page of the chunk [lo, hi) is dead or belongs to a settled
 * guarded large object. Make each stretch of them PROT_NONE, whole (an object may run in
 * from the chunk before or on into the next), and mark them PK_LARGE_FREED. False if some
 * stretch could not be (the mapping limit, or the kernel refused). */
bool large_retire_chunk(uintptr_t lo, uintptr_t hi);
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
