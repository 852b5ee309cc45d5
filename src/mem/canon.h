/* canon: the canonical heap. A memfd holds the bytes of every small object; it is carved
 * into spans of RUN_PAGES pages, each given to one size class. Each canonical page has a
 * bitmap of free slots (out of band); each span counts its claimed slots. A span is owned by
 * at most one thread at a time (ACTIVE), which claims slots from it to build runs; frees
 * from any thread release slots with atomics. A span whose slots are all free gives its
 * memory back to the kernel (hole punch) and returns to the pool of empty spans. */
#ifndef OSCAR_CANON_H
#define OSCAR_CANON_H
#include "base/core.h"

enum span_state {
    SPAN_EMPTY = 0,    /* no class, memory punched (or never touched) */
    SPAN_ACTIVE = 1,   /* owned by one thread cache, which claims slots from it */
    SPAN_DETACHED = 2, /* full when its owner let go; nobody lists it */
    SPAN_POOLING = 3,  /* being put into its class pool */
    SPAN_POOLED = 4,   /* in its class pool: has free slots, no owner */
    SPAN_PACKED = 5,   /* mapped whole by packed shadows (packed.h); never pooled */
};

struct span {
    _Atomic uint32_t claimed; /* slots handed out and not yet released (not kept for reuse spans) */
    _Atomic uint8_t state;
    uint8_t cls;
    bool reuse;               /* SPAN_PACKED: its pages are reused page by page (packed.c) */
    _Atomic uint8_t in_reuse_pool;
    _Atomic int32_t n_reusable; /* pages in `reusable` (approximate while others race) */
    _Atomic int32_t n_idle;     /* reusable pages whose memory was kept, not punched */
    uintptr_t packed_shadow;  /* SPAN_PACKED: address of the shadow of its first page */
    /* SPAN_PACKED with reuse: pages whose objects are all freed and whose shadow is revoked,
     * so the page can be mapped again at a new shadow for new objects. */
    _Atomic uint64_t reusable[OSCAR_MAX_RUN_PAGES / 64];
    struct span *next, *prev; /* class pool or empty list, under their locks */
};

struct canon {
    int fd;              /* the memfd, high and close-on-exec; -1: none, or no longer ours */
    uint64_t fd_dev, fd_ino; /* what fd referred to (the program may close or replace it) */
    uintptr_t window;    /* the whole heap mapped shared: shadows are aliases of it */
    unsigned span_pages; /* RUN_PAGES */
    unsigned span_shift; /* log2(span_pages) when it is a power of two (> 1), else 0 */
    _Atomic uint64_t max_pages; /* size of the heap in pages (lowered by canon_shrink) */
    struct span *spans;  /* indexed by span number */
    _Atomic uint64_t (*bits)[4]; /* free-slot bitmap per canonical page (256 slots max) */
    _Atomic uint8_t *done;       /* packed pages: set by the free that finished the page */
    _Atomic uint16_t *taken;     /* packed pages of one group: slots handed out so far */
    _Atomic uint64_t next_span;  /* never-used spans start here */
};
extern struct canon oscar_canon;

int canon_init(void);
/* The heap's memfd while it is still ours (the program may have closed or replaced it), else
 * -1 (no memfd: the window is shared anonymous memory). The window maps it from offset 0. */
int canon_heap_fd(void);
static inline uint64_t canon_span_first_page(const struct span *s) {
    return (uint64_t)(s - oscar_canon.spans) * oscar_canon.span_pages;
}
static inline struct span *canon_span_of(uint64_t page) {
    unsigned shift = oscar_canon.span_shift; /* no division on the free path */
    return &oscar_canon.spans[shift ? page >> shift : page / oscar_canon.span_pages];
}
/* A span of class cls with free slots, now ACTIVE for the caller; NULL when the canonical
 * heap is exhausted. */
struct span *canon_span_acquire(unsigned cls);
/* The owner lets go of an ACTIVE span. */
void canon_span_detach(struct span *s);
/* Claim one free slot of a canonical page; -1 if none. The caller then adds to claimed. */
int canon_claim_slot(uint64_t page);
/* Give slot back (after its shadow is revoked). Any thread. */
void canon_release_slot(uint64_t page, unsigned slot);
/* Packed spans: a never-used (or punched) span of class cls, every slot claimed at once;
 * NULL when the canonical heap is exhausted. With reuse, its pages are offered again one
 * by one once revoked (canon_packed_page_reusable) instead of the span as a whole. */
struct span *canon_span_acquire_packed(unsigned cls, bool reuse);
/* Reusable pages may keep their memory (idle, not punched and zeroed again) within a
 * process-wide budget: reserve one such page, or false when the budget is spent. */
bool canon_idle_reserve(void);
void canon_idle_unreserve(void);
/* Page `page` of a reuse span has every slot free and its shadow revoked: offer it for new
 * objects (idle: its memory was kept, with a reservation from canon_idle_reserve). */
void canon_packed_page_reusable(uint64_t page, bool idle);
/* Take a packed span of class cls with reusable pages: the pages are put in mask (one bit
 * per page of the span), every slot on them claimed; NULL when none is offered. */
struct span *canon_span_reuse_packed(unsigned cls, uint64_t *mask);
/* Is page i of a span in mask (one bit per page, as canon_span_reuse_packed fills it)? */
static inline bool canon_mask_has(const uint64_t *mask, unsigned i) {
    return mask[i / 64] >> (i % 64) & 1;
}
/* Undo canon_span_reuse_packed when the pages could not be mapped. */
void canon_span_unreuse_packed(struct span *s, const uint64_t *mask);
/* A packed object's slot is freed; its group of slots is [lo, hi). -1 if it already was
 * (double free); else PACKED_GROUP_DONE if this free is the one that left the group with no
 * object (exact when the group lies in one 64-slot word or is the whole page; for other
 * groups two racing frees may both see it), PACKED_PAGE_DONE if it left the page with none
 * (exactly one free sees that). */
#define PACKED_GROUP_DONE 1
#define PACKED_PAGE_DONE 2
int canon_packed_free_slot(uint64_t page, unsigned slot, unsigned lo, unsigned hi);
bool canon_slot_is_free(uint64_t page, unsigned slot);
/* A packed page of one group hands out its slots in order: its owner says how many so far,
 * so that a slot not yet handed out is told apart from a live one (fast mode's free of such a
 * slot is an invalid free, not a later false double free). */
static inline void canon_note_taken(uint64_t page, unsigned n) {
    atomic_store_explicit(&oscar_canon.taken[page], (uint16_t)n, memory_order_relaxed);
}
static inline bool canon_slot_taken(uint64_t page, unsigned slot) {
    return slot < atomic_load_explicit(&oscar_canon.taken[page], memory_order_relaxed);
}
/* n slots of packed span s were freed; true when none is left (the caller revokes its
 * shadows, then calls canon_span_release_memory). */
bool canon_packed_release(struct span *s, uint32_t n);
/* Map canonical pages [first, first + len) at shadow address sh, prefaulted if populate;
 * near the kernel's mapping limit (ENOMEM) tell maplimit and try once more. 0 or an errno.
 * An alias of the window: no descriptor is used. */
int canon_map_shadow(uintptr_t sh, size_t len, uint64_t first, bool populate);
/* Give the memory of canonical pages [first, first + pages) back (a hole). */
void canon_punch(uint64_t first, uint64_t pages);
/* Are slots [lo, hi) of canonical page `page` all free? */
bool canon_slots_free(uint64_t page, unsigned lo, unsigned hi);
void canon_span_release_memory(struct span *s);
/* RLIMIT_AS lowered after initialisation (mem/maplimit.c): give back all but `keep` bytes
 * of never-used spans, with their window and metadata. canon_unused: what could be. */
void canon_shrink(uint64_t keep);
uint64_t canon_unused(void);
/* fork (export/fork.c): prepare makes the child's private copy of the heap (0 or an errno;
 * nothing left to undo on error); the parent then drops it; the child moves it in place of
 * its window (0 or an errno), then maps each run of shadows from it. No step needs a free
 * descriptor or the heap's own (a memfd is used when there is one). */
int canon_fork_prepare(void);
void canon_fork_parent(void);
int canon_fork_child(void);
int canon_fork_child_map(uintptr_t sh, size_t len, uint64_t first);
/* fork.c takes these in order: class pools (ascending), the empty list, reuse pools. */
void canon_lock_all(void);
void canon_unlock_all(void);
#endif
