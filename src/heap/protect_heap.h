/* protect_heap: protect mode's allocator (OSCAR_MODE=protect).
 *
 * One big reservation (the heap) carved into 64 KiB pages. A small page holds slots of one
 * size class (16 B .. 32 KiB); a large object has a run of whole pages of its own. All
 * metadata lives out of band, in a separate reservation indexed by page number: the page
 * descriptor (kind, class, owner state) and a per-page block with the owner's free-slot
 * bitmap, the bitmap of slots released by a mark, and one 16-bit word per slot (its state and
 * the slack between the slot size and the requested size). Nothing in user memory is ever
 * trusted, so an overflow cannot forge a free.
 *
 * Slot life: NEVER -> LIVE (malloc) -> QUAR (free: zeroed, quarantined) -> [mark: CAND, or
 * MARKED when a pointer into it was found] -> FREED (released by the mark, back in its
 * page's released bitmap) -> LIVE ... A slot is handed out again only from FREED, and only
 * the mark makes a slot FREED: nothing is reused before a mark proved no pointer reaches it.
 *
 * Threads: each thread has a cache (initial-exec TLS) with its current page per class and a
 * copy of one word of that page's free bitmap: malloc is a TLS load, a bit pop and a store of
 * the slot's state, no lock, no atomic read-modify-write, no system call. free (any thread)
 * is a lookup, a check of the slot state, a memset and a store. The mark (another thread)
 * publishes released slots through the page's atomic released bitmap; the owner harvests it
 * when its bits run dry. Pages with free slots and no owner wait in a per-class pool.
 *
 * The heap layer does not know how marks are made: ph_free says when one is due (the
 * quarantine passed its trigger), and its caller (modes/protect.c) runs it. */
#ifndef OSCAR_PROTECT_HEAP_H
#define OSCAR_PROTECT_HEAP_H
#include "base/core.h"
#include "report/report.h"

#define PH_PAGE_SHIFT 16
#define PH_PAGE (1UL << PH_PAGE_SHIFT)
#define PH_SMALL_MAX 32768UL
#define PH_NUM_CLASSES 40
#define PH_MAX_SLOTS (PH_PAGE / 16)
#define PH_MAX_WORDS (PH_MAX_SLOTS / 64)

/* Page kinds (descriptor). */
enum ph_kind { PHK_UNUSED = 0, PHK_SMALL = 1, PHK_LARGE = 2, PHK_TAIL = 3, PHK_FREE_RUN = 4 };
/* Slot states (low 3 bits of a slot word; the slack is above). Large objects keep theirs
 * in the head page's descriptor. */
enum ph_slot {
    PHS_NEVER = 0,  /* never handed out */
    PHS_LIVE = 1,
    PHS_QUAR = 2,   /* freed, zeroed, waiting for a mark */
    PHS_CAND = 3,   /* quarantined when the current mark stopped the world */
    PHS_MARKED = 4, /* a pointer into it was found by the current mark */
    PHS_FREED = 5,  /* proven unreferenced, released to its page */
};
#define PHS_MASK 7
/* Page ownership (small pages). POOLED is set and cleared only under the class's pool lock:
 * under it, POOLED means "in the pool list". MOVING: taken by whoever won it from FULL (the
 * mark releasing a slot there), on its way to the pool or back to the free runs. */
enum ph_own { PHO_CURRENT = 0, PHO_POOLED = 1, PHO_FULL = 2, PHO_MOVING = 3 };

struct ph_page {
    _Atomic uint8_t kind;
    uint8_t cls;
    uint8_t freed_head; /* free run page that was a large object's head (double-free reports) */
    _Atomic uint8_t lkind; /* large head: enum alloc_kind, as struct ph_meta's kinds */
    uint32_t slot_size; /* small: class size; large head: usable bytes */
    uint32_t nslots, nwords;
    uint32_t run;       /* large head / free-run head: pages; tail: distance to the head */
    _Atomic uint32_t own;
    _Atomic uint32_t lstate; /* large head: slot state */
    /* large head in quarantine: its pages were given back at free (ph_free), so it holds no
     * memory and counts a PH_DROPPED_SHARE-th toward the next mark */
    _Atomic uint32_t dropped;
    uint64_t recip;          /* small: ceil(2^32 / slot_size) */
    uint64_t large_size;     /* large head: requested bytes */
    struct ph_page *next, *prev; /* pool or free-run list */
    /* The program changed this page's protection or mapping (ph_note_foreign): the mark
     * reads it through scan/mark.c's scan_foreign, never directly (set once, never cleared) */
    _Atomic uint8_t foreign;
};

/* Per-page out-of-band block: bitmaps first (large classes touch only them), slot words. */
struct ph_meta {
    uint64_t local[PH_MAX_WORDS];             /* owner's free slots (not yet in its cache) */
    _Atomic uint64_t released[PH_MAX_WORDS];  /* released by a mark, not yet harvested */
    _Atomic uint16_t slot[PH_MAX_SLOTS];
    /* How each live slot was allocated (enum alloc_kind, 2 bits; 0 = malloc): set by
     * operator new, read and cleared by the free (only once a program used operator new). */
    _Atomic uint64_t kinds[PH_MAX_SLOTS / 32];
};

struct ph_heap {
    uintptr_t lo, hi;           /* the reservation */
    struct ph_page *pages;      /* one descriptor per page of [lo, hi) */
    struct ph_meta *meta;       /* one block per page */
    uintptr_t meta_lo, meta_hi; /* every byte of metadata (not a root) */
    /* The mark's filter (scan/mark.c writes it; zero between marks): for each 64 granules of
     * 16 bytes, two words side by side (one cache line, one miss): [2k+1] a bit for the
     * granule right after a candidate that fills its slot (a pointer there may be one past
     * its end), [2k] a bit per granule of a candidate of the mark in progress and those
     * bits of [2k+1] too (the mark's word filter reads one word: scan/words.h). */
    _Atomic uint64_t *cand;
    _Atomic uintptr_t used_pages; /* pages ever handed out (descriptors to visit) */
    atomic_bool any_foreign;      /* some page is foreign (ph_note_foreign; set once) */
};
extern struct ph_heap ph;

static inline bool ph_contains(uintptr_t a) { return a - ph.lo < ph.hi - ph.lo; }
static inline size_t ph_index(uintptr_t a) { return (a - ph.lo) >> PH_PAGE_SHIFT; }
static inline uintptr_t ph_page_base(size_t i) { return ph.lo + (i << PH_PAGE_SHIFT); }
static inline unsigned ph_slot_of(const struct ph_page *pg, uintptr_t off) {
    return (unsigned)((off * pg->recip) >> 32);
}

/* Reserve the heap and its metadata. 0 or an errno. */
int protect_heap_init(void);

void *ph_malloc(size_t size);
void *ph_aligned(size_t size, size_t align);
void *ph_calloc(size_t size);
/* *mark: the old object went to the quarantine and a mark is due, as ph_free says (the
 * caller marks: the frames above the mark are roots). */
void *ph_realloc(void *p, size_t size, bool *mark);
/* The program changed the protection or the mapping of [addr, addr + len) (mprotect without
 * read access, pkey_mprotect, mmap MAP_FIXED, MADV_GUARD_INSTALL): the heap pages it overlaps
 * may fault when read, and are marked foreign (struct ph_page). True if it overlaps the heap. */
bool ph_note_foreign(uintptr_t addr, size_t len);
/* who: enum report_caller. True: a mark is due (the caller runs it, from as shallow a stack
 * as it can: the frames below it are roots). */
bool ph_free(void *p, int who);
size_t ph_usable_size(void *p, int caller);

/* Allocation kinds (OSCAR_ALLOC_DEALLOC_MISMATCH, OSCAR_NEW_DELETE_TYPE_MISMATCH). */
extern _Atomic bool ph_kinds_used; /* some object was given a kind other than malloc's */
/* p, just allocated, was allocated by kind (operator new: 1, new[]: 2). */
void ph_set_kind(void *p, unsigned kind);
/* p is the start of a live object: its kind and requested size, the kind cleared (it is being
 * freed); false otherwise (the free then reports what p is). */
bool ph_take_kind(void *p, unsigned *kind, size_t *size);
/* What a report says of the object a points into (report.h's struct object_info). */
struct object_info ph_describe(uintptr_t a);

/* malloc_trim: give back the memory of empty pooled pages and of free runs. 1 if any was
 * resident, else 0. */
int ph_trim(void);

/* For the mark (scan/mark.c). */
/* Release one slot (state already set to FREED by the caller) of a small page. */
void ph_release_slots(size_t page, const uint64_t *bits, unsigned nwords);
/* Release a large object whose head is page (state CAND): its run becomes free. */
void ph_release_large(size_t page);
/* A mark could not stop the world: the next waits (10 ms, doubling with each failure in a
 * row, at most 1 s). */
void ph_mark_failed(void);
/* Quarantine accounting after a mark: bytes released, bytes still referenced, and of each
 * the bytes of large objects whose pages were given back at free (ph_page.dropped); mark_ns,
 * how long the mark took (stop and release: the next one is paced by it); stopped, the
 * threads of the program's its stop parked (each makes every stop dearer). */
void ph_after_mark(uint64_t released_bytes, uint64_t held_bytes, uint64_t released_objects,
                   uint64_t held_objects, uint64_t released_dropped, uint64_t held_dropped,
                   uint64_t mark_ns, size_t stopped);
/* A mark that read its roots read `bytes` in all (the live heap and the roots): the next
 * one waits for the quarantine's share of that, if it is more than the live heap's. */
void ph_mark_read(uint64_t bytes);
/* A freed large object from PH_DROP_AT bytes on gives its pages back to the kernel instead of
 * being zeroed: in quarantine it holds no memory (only addresses), so it counts a
 * PH_DROPPED_SHARE-th of its size toward the next mark (bigobj: a mark every 4 frees of
 * 64 KiB-4 MiB objects, each reading the 14 MiB the live ones hold). */
#define PH_DROP_AT (256UL << 10)
#define PH_DROPPED_SHARE 16
/* The quarantine is far past its trigger (URGENT times it) while a concurrent mark runs: the
 * freeing thread waits for the mark instead of letting it grow further. */
bool ph_quarantine_urgent(void);
/* Fold every thread's counters into stats (at exit and before a mark's figures). */
void ph_fold_all(void);
/* fork: take every heap lock / release them in the parent / in the child. */
void ph_fork_prepare(void);
void ph_fork_parent(void);
void ph_fork_child(void);
#endif
