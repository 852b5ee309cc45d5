/* reclaim: give back what long-dead stretches of the shadow region still cost.
 *
 * Addresses are never reused, so without this every 2 MiB of shadow addresses ever handed
 * out would keep, for good, a page of page entries (region.h), two pages of stack records
 * (stack.h) and a kernel page-table page: about 30 bytes per object ever allocated in
 * strict mode, a leak that grows with a long-running program's allocation count.
 *
 * A *chunk* is a 2 MiB-aligned 2 MiB of the region (512 pages, one page of entries). It is
 * dead when every page in it is revoked for good: freed and PROT_NONE, or never to be
 * handed out (an abandoned slice rest or alignment gap, region_abandon). Large objects
 * carved from a thread's slab (large.c) are revoked by guard markers inside the slab's
 * mapping and seldom become PROT_NONE on their own: a chunk that holds nothing else the
 * sweep makes PROT_NONE itself first (large_retire_chunk), once their frees are over (large.h,
 * LARGE_FREEING). A sweep, run every
 * SWEEP_EVERY bytes of region handed out by the thread that crosses the mark (a try-lock:
 * nobody waits), looks at a bounded number of chunks, cycling over those not reclaimed yet.
 * A chunk seen dead on two visits (whatever was finishing on it has finished) is reclaimed
 * in one system call with the others of its sweep: MADV_DONTNEED on its addresses (the
 * kernel frees the empty page table), its entries and its records (they read as zeros
 * after). A byte per chunk remembers it, so a late access or free there is still reported
 * as a use after free or double free, without the object's size and stacks.
 *
 * Addresses run out too: at the rate strict mode can allocate (~300,000 objects a second,
 * a page each), 16 TiB lasts hours. When the region is used up, the addresses of reclaimed
 * chunks, oldest first, are handed out again (reclaim_recycle), with one warning, but only
 * once a proof has shown that no pointer into them is left: a stop of the world and a
 * conservative scan of every root and every live object (scan/recycle.c, through the hook
 * below), a batch of up to PROVE_BATCH chunks (4 GiB of addresses) at a time. A chunk some
 * word points into (or one past the end of) is kept out of use and tried again at a later
 * proof. Chunks never handed out (alignment gaps, slice rests) need no proof. When no chunk
 * can be proven (every one is pointed to, or the world could not be stopped), malloc does
 * what it does when nothing is left to recycle, and one warning says why. */
#ifndef OSCAR_RECLAIM_H
#define OSCAR_RECLAIM_H
#include "base/core.h"


/* Reserve the per-chunk state (after region_init and stack_init). Off if it cannot. */
void reclaim_init(void);
/* The region's bump pointer moved to `bump`: sweep if it crossed the next mark. */
void reclaim_note_bump(uintptr_t bump);
/* For whole-region walks (fork): the next page to look at after p, whose entry maps
 * nothing. Whole chunks that hold nothing (reclaimed, or never handed out: the gap before
 * the poison window alone is up to 4 GiB) are skipped without reading their entries. */
uintptr_t reclaim_next_page(uintptr_t p);
/* The whole chunks of [lo, hi) will never be handed out (region_abandon). */
void reclaim_mark_never(uintptr_t lo, uintptr_t hi);
/* Was the chunk holding address a reclaimed (its objects were all freed long ago)? */
bool reclaim_is_reclaimed(uintptr_t a);
/* The region is used up: len bytes aligned to align (at most a chunk) from the addresses of
 * reclaimed chunks proven unreferenced, oldest first, with a one-time warning; 0 if there are
 * none. */
uintptr_t reclaim_recycle(size_t len, size_t align);
/* The proof (scan/recycle.c registers it at init): with every other thread stopped, clears
 * in cand (a bit per chunk of the region, chunks bits) the bit of every chunk that an aligned
 * word of a root or of a live object points into, or one past the end of. 0, or -errno when
 * nothing was proven (the world could not be stopped, the roots could not be read). Called
 * with the reclaim lock held (see reclaim_lock). */
typedef int (*reclaim_prove_fn)(uint64_t *cand, size_t chunks);
void reclaim_set_prove_hook(reclaim_prove_fn prove);
/* True once live objects filled the region (not even one chunk could be recycled): small
 * objects are then packed, several to a shadow page, as near the mapping limit. */
bool reclaim_short_of_addresses(void);
/* fork: no sweep runs across it (the innermost lock: a sweep takes no other). */
void reclaim_lock(void);
void reclaim_unlock(void);
#endif
