/* keep: the memory of freed large objects, kept for the next ones. A freed object's pages
 * are moved (mremap, no copy) out of its never-reused addresses into a private area of
 * ours, and a later large object gets them moved to its own new addresses: no page faults
 * and no zeroing, where fresh pages cost a fault each. The freed addresses are revoked as
 * before; only the physical memory is reused, as the design allows.
 * Bounded by OSCAR_KEEP_FREED_MIB (bytes kept, over the whole process) and by a few slots;
 * used with guard markers, and while the process is far from the kernel's mapping limit.
 * Kept pages hold a freed object's old bytes: calloc zeroes what it gets. */
#ifndef OSCAR_KEEP_H
#define OSCAR_KEEP_H
#include "base/core.h"

/* Reserve the area (one mapping, PROT_NONE, no memory). Off if it cannot. */
void keep_init(void);
/* The freed large object [a, a + len) (over 64 KiB, one private mapping): move its pages
 * into the keep if there is room. [a, a + len) stays mapped with no pages (the caller
 * revokes it). True if kept. */
bool keep_put(uintptr_t a, size_t len);
/* Kept pages for a new object of len bytes of pages, claimed (no other thread takes
 * them): c->len bytes, len or a little more when what would stay kept is too small to
 * serve anyone. False if none fit (the caller maps fresh pages). */
struct keep_claim {
    void *slot;
    size_t len;
};
bool keep_claim(size_t len, struct keep_claim *c);
/* Move the claimed pages to [a, a + c->len) (a free part of our PROT_NONE reservation).
 * False if the kernel refused (the claim is dropped either way). */
bool keep_move(const struct keep_claim *c, uintptr_t a);
/* Drop a claim without moving the pages. */
void keep_release(const struct keep_claim *c);
/* malloc_trim: give the memory of every kept run back to the kernel (MADV_DONTNEED; the
 * slots stay, empty). Returns the bytes given back. */
size_t keep_trim(void);
/* fork: keep the slots consistent across it. */
void keep_lock(void);
void keep_unlock(void);
/* In the child (lock held): slots that threads which no longer exist were moving pages in
 * or out of are forgotten; then unlocks. */
void keep_after_fork_child(void);
#endif
