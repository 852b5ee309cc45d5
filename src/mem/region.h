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
#define PAGE_KIND(id, value, name, what) PK_##id = value,
#include "mem/page_kinds.def"
#undef PAGE_KIND
};
const char *page_kind_name(enum page_kind k);
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

/* Reserve the region (size from OSCAR_VA_GIB, halved until the kernel agrees; under a finite
 * RLIMIT_AS, sized to the budget below with one warning), placed by the kernel and moved up
 * by a random offset. */
int region_init(void);
/* Bytes of address space Oscar may reserve in all (three quarters of what a finite RLIMIT_AS left at
 * initialisation); UINT64_MAX when unlimited. Every reservation sized by the region (its
 * table, the canonical heap, the stack store) fits in it. */
uint64_t region_as_budget(void);
/* Was the region sized under a limit at initialisation (a finite RLIMIT_AS, or a finite
 * RLIMIT_DATA, which counts the metadata sized by it)? The canonical heap is sized to it then. */
bool region_sized_by_limit(void);
/* Take len bytes (multiple of a page) aligned to align from the bump pointer, or 0 when the
 * region is exhausted. Lock-free. After a take aligned to 1 GiB or more, the bump pointer
 * skips a random gap (that alignment would fix the low bits of every later address). */
uintptr_t region_take(size_t len, size_t align);
/* [lo, hi) will never be handed out: mark it so (reclaim.h). Only the pages of partly
 * covered chunks are written; whole chunks are marked by a byte each. */
void region_abandon(uintptr_t lo, uintptr_t hi);
/* RLIMIT_AS lowered after initialisation (maplimit.c, on ENOMEM): give back all but `keep`
 * bytes of the never-used top of the region, with its page-table entries (and the stack
 * records: the hook). region_unused: the bytes that could be given back. */
void region_shrink(uint64_t keep);
uint64_t region_unused(void);
void region_set_shrink_hook(void (*hook)(uintptr_t new_end));
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
