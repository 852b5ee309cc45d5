/* region: the shadow address region and its page table.
 *
 * One big PROT_NONE reservation holds every shadow page and every large object. Addresses
 * are handed out by an atomic bump pointer and never handed out again (until the region is
 * used up: reclaim.h); freed pages go back to PROT_NONE, so neither we nor the kernel's
 * placement of a later mmap can ever put a mapping there. Each page of the region has an 8-byte entry in a flat table (O(1) lookup
 * from any address to what the page holds). */
#ifndef OSCAR_REGION_H
#define OSCAR_REGION_H
#include "base/core.h"

/* Page entry: kind in the low 4 bits, payload above. */
enum page_kind {
    PK_NONE = 0,         /* never handed out (PROT_NONE reservation, alignment gap) */
    PK_READY = 1,        /* small shadow mapped, waiting in a thread cache */
    PK_SMALL = 2,        /* small shadow holding a live object */
    PK_SMALL_FREED = 3,  /* small shadow revoked (PROT_NONE) */
    PK_LARGE = 4,        /* first page of a live large object; payload = requested size */
    PK_LARGE_FREED = 5,  /* first page of a freed large object (PROT_NONE) */
    PK_LARGE_TAIL = 6,   /* later page of a large object; payload = distance to first page */
    PK_DEFERRED = 7,  /* small object freed but its shadow still mapped (mapping limit) */
    PK_PACKED = 8,       /* shadow of a whole canonical page, one object per slot (packed.h) */
    PK_PACKED_FREED = 9, /* packed shadow revoked: every object on it was freed */
    PK_SMALL_GUARDED = 10, /* small object freed; its shadow page carries a guard marker
                            * (still part of its run's kernel mapping) */
    PK_LARGE_GUARDED = 11, /* first page of a freed large object still mapped as private
                            * memory: guard markers, or (mapping limit, no guards) dropped */
    PK_PACKED_GUARDED = 15, /* packed shadow revoked by a guard marker (still part of its
                             * span's kernel mapping) */
    PK_POISON = 12,        /* never mapped; freed packed objects are filled with pointers
                            * here, so a pointer read back from one faults (packed.h) */
    PK_ARENA = 13,         /* custom-allocator arena page (oscar_arena_alloc, api.h);
                            * payload: dead bit, distance to its first page */
    PK_VIEW = 14,          /* custom-allocator view page (oscar_view_create, api.h); same
                            * payload; dead = revoked (PROT_NONE) */
};
#define ENTRY_KIND_BITS 4

/* Small payload: canonical page (32 bits) | size class (6) | slot (9) | requested size (12).
 * K = 1, so the page entry describes its one object completely (reports name its size).
 * Packed pages use the canonical page and class only. */
static inline uint64_t entry_small(enum page_kind k, uint64_t canon, unsigned cls,
                                   unsigned slot, size_t size) {
    return (uint64_t)k | canon << 4 | (uint64_t)cls << 36 | (uint64_t)slot << 42 |
           (uint64_t)size << 51;
}
static inline enum page_kind entry_kind(uint64_t e) { return (enum page_kind)(e & 15); }
static inline uint64_t entry_canon(uint64_t e) { return (e >> 4) & ((1ULL << 32) - 1); }
static inline unsigned entry_class(uint64_t e) { return (unsigned)(e >> 36) & 63; }
static inline unsigned entry_slot(uint64_t e) { return (unsigned)(e >> 42) & 511; }
static inline size_t entry_small_size(uint64_t e) { return (size_t)(e >> 51); }
static inline uint64_t entry_with_size(uint64_t e, size_t size) {
    return (e & ((1ULL << 51) - 1)) | (uint64_t)size << 51;
}
static inline uint64_t entry_with_kind(uint64_t e, enum page_kind k) { return (e & ~15ULL) | k; }
static inline uint64_t entry_large(enum page_kind k, uint64_t payload) {
    return (uint64_t)k | payload << 4;
}
static inline uint64_t entry_payload(uint64_t e) { return e >> 4; }
/* A page never handed out that never will be (a thread's slice rest, an alignment gap):
 * still PK_NONE for reports, but dead for reclaim.h. */
#define ENTRY_ABANDONED entry_large(PK_NONE, 1)

struct region {
    uintptr_t base, end;
    _Atomic uint64_t *table; /* one entry per page of [base, end) */
    _Atomic uintptr_t bump;  /* next never-used address */
};
extern struct region oscar_region;

static inline bool region_contains(uintptr_t a) {
    return a - oscar_region.base < oscar_region.end - oscar_region.base;
}
static inline uintptr_t region_page_index(uintptr_t a) {
    return (a - oscar_region.base) >> OSCAR_PAGE_SHIFT;
}
static inline _Atomic uint64_t *region_entry(uintptr_t a) {
    return &oscar_region.table[region_page_index(a)];
}
static inline uint64_t region_load(uintptr_t a) {
    return atomic_load_explicit(region_entry(a), memory_order_acquire);
}
static inline void region_store(uintptr_t a, uint64_t e) {
    atomic_store_explicit(region_entry(a), e, memory_order_release);
}

/* Reserve the region (size from OSCAR_VA_GIB, halved until the kernel agrees). */
int region_init(void);
/* Take len bytes (multiple of a page) aligned to align from the bump pointer, or 0 when the
 * region is exhausted. Lock-free. */
uintptr_t region_take(size_t len, size_t align);
/* [lo, hi) will never be handed out: mark it so (reclaim.h). Only the pages of partly
 * covered chunks are written; whole chunks are marked by a byte each. */
void region_abandon(uintptr_t lo, uintptr_t hi);
/* Bytes of the region handed out so far. */
uintptr_t region_used(void);
/* The region is handed back in chunks of this size: the reclaim sweep (heap/reclaim.c) gives
 * a chunk's entries, records and page table back once every object in it is dead. */
#define REGION_CHUNK (2UL << 20)

/* What the heap's reclaim sweep (heap/reclaim.c) does with the addresses handed out: hears of
 * each bump, marks ranges that never held an object, and hands out old addresses again once
 * the region is used up (0: none). Registered at init, before the first region_take. */
struct region_hooks {
    void (*note_bump)(uintptr_t bump);
    void (*mark_never)(uintptr_t lo, uintptr_t hi);
    uintptr_t (*recycle)(size_t len, size_t align);
};
void region_set_hooks(const struct region_hooks *h);

#endif
