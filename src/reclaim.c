/* reclaim: see reclaim.h. */
#include "reclaim.h"
#include "os.h"
#include "region.h"
#include "stack.h"
#include "stats.h"

#define CHUNK_PAGES (RECLAIM_CHUNK >> OSCAR_PAGE_SHIFT)
/* A sweep every 64 MiB of region handed out (16,384 strict-mode objects), looking at up to
 * 256 chunks: four times the chunks handed out meanwhile, so the cycle over chunks that
 * are still in use keeps up, and at most 131,072 entries read per sweep. */
#define SWEEP_EVERY (64UL << 20)
#define SWEEP_CHUNKS 256
/* Chunks reclaimed per sweep at most (the ranges of one system call, on the stack). */
#define DROP_MAX 64

enum chunk_state {
    CHUNK_UNKNOWN = 0,   /* in use, or not looked at yet */
    CHUNK_SEEN_DEAD = 1, /* dead at the last visit: reclaimed if still dead at the next */
    CHUNK_RECLAIMED = 2, /* its objects were all freed; entries, records, page table gone */
    CHUNK_NEVER = 3,     /* inside an alignment gap or slice rest: never handed out */
};

static _Atomic uint8_t *state; /* one byte per chunk of the region */
static size_t chunks;
static atomic_flag busy = ATOMIC_FLAG_INIT; /* a sweep is running */
static _Atomic uintptr_t next_sweep;
/* Only touched by the sweeping thread (under busy): the chunks below frontier that are
 * neither reclaimed nor never used, pending[0, n_pending), visited in passes that compact
 * the list as they go (read at r, survivors written back at w <= r), so a pass costs the
 * chunks still in use, however many were reclaimed before them. */
static uint32_t *pending;
static size_t n_pending, r, w, frontier;

void reclaim_init(void) {
    chunks = (oscar_region.end - oscar_region.base) / RECLAIM_CHUNK;
    int err;
    state = os_alloc_meta(chunks, &err);
    pending = os_alloc_meta(chunks * sizeof *pending, &err);
    if (!state || !pending) {
        state = NULL;
        return; /* no reclaiming: metadata simply stays */
    }
    atomic_store(&next_sweep, oscar_region.base + SWEEP_EVERY);
}

static size_t chunk_of(uintptr_t a) { return (a - oscar_region.base) / RECLAIM_CHUNK; }
static uintptr_t chunk_base(size_t i) { return oscar_region.base + i * RECLAIM_CHUNK; }

bool reclaim_is_reclaimed(uintptr_t a) {
    return state && region_contains(a) &&
           atomic_load_explicit(&state[chunk_of(a)], memory_order_relaxed) == CHUNK_RECLAIMED;
}

void reclaim_mark_never(uintptr_t lo, uintptr_t hi) {
    if (!state)
        return;
    for (uintptr_t c = lo; c + RECLAIM_CHUNK <= hi; c += RECLAIM_CHUNK)
        atomic_store_explicit(&state[chunk_of(c)], CHUNK_NEVER, memory_order_relaxed);
}

/* Revoked for good: its entry will never change again but for a late report. */
static bool page_dead(uintptr_t p, uint64_t e) {
    switch (entry_kind(e)) {
    case PK_NONE:
        return e == ENTRY_ABANDONED;
    case PK_SMALL_FREED:
    case PK_PACKED_FREED:
    case PK_LARGE_FREED:
        return true;
    case PK_LARGE_TAIL: {
        uintptr_t head = p - (entry_payload(e) << OSCAR_PAGE_SHIFT);
        if (!region_contains(head))
            return false;
        uint64_t h = region_load(head);
        return entry_kind(h) == PK_LARGE_FREED ||
               (h == 0 && reclaim_is_reclaimed(head)); /* a long object's reclaimed head */
    }
    default:
        return false;
    }
}

static bool chunk_dead(size_t i) {
    uintptr_t base = chunk_base(i);
    for (size_t k = 0; k < CHUNK_PAGES; k++) {
        uintptr_t p = base + (k << OSCAR_PAGE_SHIFT);
        if (!page_dead(p, region_load(p)))
            return false;
    }
    return true;
}

/* Drop the page tables, entries and records of the chunks in drop[0, n), in one call
 * (ranges of consecutive chunks merge: at most 3 per chunk). */
static void drop_chunks(const size_t *drop, unsigned n) {
    struct iovec r[3 * DROP_MAX];
    unsigned m = 0;
    for (unsigned j = 0; j < n; j++)
        m = os_ranges_add(r, m, chunk_base(drop[j]), RECLAIM_CHUNK);
    for (unsigned j = 0; j < n; j++)
        m = os_ranges_add(r, m, (uintptr_t)region_entry(chunk_base(drop[j])),
                          CHUNK_PAGES * sizeof(uint64_t));
    for (unsigned j = 0; j < n; j++)
        m = os_ranges_add(r, m, (uintptr_t)stack_record(chunk_base(drop[j])),
                          CHUNK_PAGES * sizeof(struct obj_record));
    /* Marked first: a report racing with the drop then says "reclaimed", never "wild". */
    for (unsigned j = 0; j < n; j++)
        atomic_store_explicit(&state[drop[j]], CHUNK_RECLAIMED, memory_order_relaxed);
    if (os_drop_ranges(r, m) != 0)
        return; /* whatever was not dropped stays as it was: only memory is lost */
    stats_add(STAT_CHUNKS_RECLAIMED, n);
}

static void sweep(uintptr_t bump) {
    size_t limit = chunk_of(bump); /* chunks wholly handed out */
    for (; frontier < limit; frontier++)
        if (atomic_load_explicit(&state[frontier], memory_order_relaxed) < CHUNK_RECLAIMED)
            pending[n_pending++] = (uint32_t)frontier;
    size_t drop[DROP_MAX];
    unsigned n = 0;
    for (unsigned looked = 0; looked < SWEEP_CHUNKS && n < DROP_MAX; looked++) {
        if (r == n_pending) {
            /* The pass is over; the next sweep starts the next one (never this one: a
             * chunk's two visits must be apart in time). */
            n_pending = w;
            r = w = 0;
            break;
        }
        size_t i = pending[r++];
        uint8_t s = atomic_load_explicit(&state[i], memory_order_relaxed);
        if (!chunk_dead(i)) {
            atomic_store_explicit(&state[i], CHUNK_UNKNOWN, memory_order_relaxed);
            pending[w++] = (uint32_t)i;
        } else if (s == CHUNK_SEEN_DEAD) {
            drop[n++] = i; /* (leaves the list) */
        } else {
            atomic_store_explicit(&state[i], CHUNK_SEEN_DEAD, memory_order_relaxed);
            pending[w++] = (uint32_t)i;
        }
    }
    if (n)
        drop_chunks(drop, n);
}

void reclaim_note_bump(uintptr_t bump) {
    uintptr_t mark = atomic_load_explicit(&next_sweep, memory_order_relaxed);
    if (likely(bump < mark) || !state || oscar_init_state != 2)
        return;
    if (!atomic_compare_exchange_strong(&next_sweep, &mark, bump + SWEEP_EVERY))
        return; /* another thread crossed it */
    if (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire))
        return; /* a sweep is running: the next mark gets the next one */
    sweep(bump);
    atomic_flag_clear_explicit(&busy, memory_order_release);
}

void reclaim_after_fork_child(void) { atomic_flag_clear(&busy); }
