/* recycle: see recycle.h.
 *
 * The proof of a batch (recycle_prove, called by heap/reclaim.c with a bit per chunk of the
 * region set for each candidate): stop the world (scan/world.h), then read
 *   - every root (scan/roots.h: thread registers and stacks, alternate signal stacks, data,
 *     bss and TLS, the program's own writable mappings), this thread's stack from the walk's
 *     own frame up (the program's frames and every frame of Oscar's between them: stale
 *     words there only keep a chunk for nothing);
 *   - the live small objects: the canonical heap's window (mem/canon.h) where strict and fast
 *     mode keep their bytes, span by span, the memfd's data (SEEK_DATA: pages in memory or
 *     swapped out; spans that are empty were punched);
 *   - the live large objects (their pages present or swapped out: roots_read_private) and
 *     custom-allocator arena and view pages, from the region's page entries (chunks reclaimed
 *     or never used are skipped whole).
 * Not read: Oscar's metadata (os_meta_range), liboscar's own data (roots.c), the region itself
 * as a mapping (its live objects are read above), the window as a mapping (the same).
 * A word w is a hit when w - base <= region size: the bit of the chunk w points into, and of
 * the chunk before when w is a chunk's first address (one past the end of an object that ends
 * the chunk before), are cleared. Whatever was cleared stays out of use until a later proof.
 *
 * Locks: the caller holds the reclaim lock (and whatever lower-ranked lock region_take's
 * caller held); world_stop takes the world lock, which ranks after every allocator lock. With
 * the world stopped this file takes no lock at all (a parked thread may hold any of them),
 * allocates nothing, and only reads: page entries and span states with atomic loads, object
 * bytes with guarded reads (a page revoked under a parked thread's free is skipped). Every
 * signal but SIGSEGV and SIGBUS is blocked on this thread meanwhile (a handler of the program
 * could move a pointer below the stack pointer the walk starts from), as mark.c does. */
#define _GNU_SOURCE
#include "scan/recycle.h"
#include "scan/roots.h"
#include "scan/world.h"
#include "base/stats.h"
#include "heap/reclaim.h"
#include "heap/views.h"
#include "mem/canon.h"
#include "mem/region.h"
#include "os/os.h"

#include <errno.h>
#include <signal.h>

/* The proof's state: written by the proving thread only (under the reclaim lock, the world
 * stopped), zero between proofs. */
static struct {
    uint64_t *cand;   /* the batch: a bit per chunk (reclaim.c's) */
    size_t chunks;    /* bits in cand */
    uintptr_t base;   /* the region's first address */
    uintptr_t span;   /* and its size */
    /* Not roots: the region, the canonical window, Oscar's metadata. */
    struct root_range ex[2 + OS_META_RANGES_MAX];
} recycle_state;

static inline void keep_chunk(size_t c) {
    if (c < recycle_state.chunks)
        recycle_state.cand[c / 64] &= ~(1ULL << (c % 64));
}

static void scan(uintptr_t lo, uintptr_t hi, void *arg) {
    (void)arg;
    const uintptr_t *p = (const uintptr_t *)align_up(lo, sizeof(uintptr_t));
    const uintptr_t *e = (const uintptr_t *)(hi & ~(sizeof(uintptr_t) - 1));
    uintptr_t base = recycle_state.base, span = recycle_state.span;
    const uint64_t *cand = recycle_state.cand;
    for (; p < e; p++) {
        uintptr_t off = *p - base;
        if (likely(off > span))
            continue;
        size_t c = off / REGION_CHUNK;
        if (c < recycle_state.chunks && ((cand[c / 64] >> (c % 64)) & 1))
            keep_chunk(c);
        if (!(off % REGION_CHUNK) && c > 0 && ((cand[(c - 1) / 64] >> ((c - 1) % 64)) & 1))
            keep_chunk(c - 1); /* one past the end of an object that ends chunk c - 1 */
    }
}

static void scan_root(uintptr_t lo, uintptr_t hi, enum root_kind kind, const char *name,
                      void *arg) {
    (void)kind;
    (void)name;
    roots_read_guarded(scan, lo, hi, arg);
}

/* Reads the part of [lo, hi) (byte offsets into the window, below the heap's size) that lies
 * in spans in use, runs of consecutive such spans at a time (a span never used, or punched
 * empty, holds no object). */
static void scan_spans(uint64_t lo, uint64_t hi) {
    uint64_t sb = (uint64_t)oscar_canon.span_pages << OSCAR_PAGE_SHIFT;
    uint64_t spans = atomic_load_explicit(&oscar_canon.next_span, memory_order_acquire);
    uintptr_t w = oscar_canon.window;
    uint64_t run = UINT64_MAX; /* where the current run of spans in use began */
    for (uint64_t s = lo / sb; s < spans && s * sb < hi; s++) {
        bool used = atomic_load_explicit(&oscar_canon.spans[s].state, memory_order_acquire) !=
                    SPAN_EMPTY;
        if (used && run == UINT64_MAX)
            run = s * sb > lo ? s * sb : lo;
        if (!used && run != UINT64_MAX) {
            roots_read_guarded(scan, w + run, w + s * sb, NULL);
            run = UINT64_MAX;
        }
    }
    if (run != UINT64_MAX) {
        uint64_t end = spans * sb < hi ? spans * sb : hi;
        if (end > run)
            roots_read_guarded(scan, w + run, w + end, NULL);
    }
}

/* The canonical heap's data, where strict and fast mode keep the bytes of small objects: the
 * memfd's data ranges (lseek SEEK_DATA / SEEK_HOLE) within spans in use. A page swapped out
 * is data (a swap entry in the file), so it is read (and comes back in); only holes (never
 * written, or punched) are skipped, and reading one would allocate a page. (mincore would
 * call a swapped-out page absent, and the only pointer may lie there.) Without the memfd (none
 * could be made, or the program closed it), the spans in use are read whole: their holes get
 * pages, which stay theirs until the span is punched. */
static void scan_canonical(void) {
    if (!oscar_canon.window || !oscar_canon.span_pages)
        return;
    uint64_t size = atomic_load_explicit(&oscar_canon.max_pages, memory_order_acquire)
                    << OSCAR_PAGE_SHIFT;
    int fd = canon_heap_fd();
    uint64_t pos = 0;
    while (fd >= 0 && pos < size) {
        uint64_t data, hole;
        int err = os_next_data(fd, pos, &data, &hole);
        if (err == ENXIO)
            return; /* no data after pos */
        if (err)
            break; /* (read the rest whole) */
        if (data >= size)
            return;
        scan_spans(data, hole < size ? hole : size);
        pos = hole;
    }
    if (pos < size)
        scan_spans(pos, size);
}

/* Live large objects, arena and view pages of the region handed out so far. Large objects
 * are private memory: from PRIVATE_MIN up, their pages present or swapped out are read, as
 * roots are (roots_read_private), never a page the program did not touch; smaller ones are
 * read whole (a page never touched reads as the zero page, a swapped-out one comes back). */
#define PRIVATE_MIN (64UL << 10)
static void scan_region(int pagemap_fd) {
    uintptr_t end = oscar_region.base + region_used();
    for (uintptr_t p = oscar_region.base; p < end;) {
        uint64_t e = region_load(p);
        enum page_kind k = entry_kind(e);
        if (k == PK_LARGE) {
            size_t len = align_up(entry_payload(e), OSCAR_PAGE);
            if (!len)
                len = OSCAR_PAGE;
            if (len > end - p)
                len = end - p;
            if (len >= PRIVATE_MIN)
                roots_read_private(pagemap_fd, scan, p, p + len, NULL);
            else /* (a pread of pagemap costs more than reading a few pages whole) */
                roots_read_guarded(scan, p, p + len, NULL);
            p += len;
            continue;
        }
        if ((k == PK_ARENA || k == PK_VIEW) && !entry_api_dead(e))
            roots_read_guarded(scan, p, p + OSCAR_PAGE, NULL);
        p = k == PK_NONE || e == 0 ? reclaim_next_page(p) : p + OSCAR_PAGE;
    }
}

/* The ranges that are no roots (in any order: roots.c cuts each from what is left). */
static size_t not_roots(void) {
    struct root_range *ex = recycle_state.ex;
    size_t n = 0;
    ex[n++] = (struct root_range){oscar_region.base, oscar_region.end};
    if (oscar_canon.window)
        ex[n++] = (struct root_range){oscar_canon.window,
                                      oscar_canon.window +
                                          (atomic_load(&oscar_canon.max_pages) << OSCAR_PAGE_SHIFT)};
    for (size_t i = 0, m = os_meta_count(); i < m && n < sizeof recycle_state.ex / sizeof *ex; i++)
        if (os_meta_range(i, &ex[n].lo, &ex[n].hi))
            n++;
    return n;
}

static int recycle_prove(uint64_t *cand, size_t chunks) {
    int err = world_init();
    if (err)
        return err;
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    os_sigprocmask(SIG_BLOCK, &all, &old);
    recycle_state.cand = cand;
    recycle_state.chunks = chunks;
    recycle_state.base = oscar_region.base;
    recycle_state.span = oscar_region.end - oscar_region.base;
    size_t nex = not_roots();
    uint64_t t0 = os_monotonic_ns();
    err = world_stop();
    if (!err) {
        /* Locks held: reclaim, world (and region_take's caller's). Parked threads may hold
         * any other: none is taken from here to world_resume. */
        err = roots_for_each(scan_root, NULL, recycle_state.ex, nex, 0);
        if (!err) {
            scan_canonical();
            int pagemap_fd = roots_pagemap_open();
            scan_region(pagemap_fd);
            if (pagemap_fd >= 0)
                os_close(pagemap_fd);
        }
        world_resume();
        uint64_t us = (os_monotonic_ns() - t0) / 1000;
        stats_raise_peak(STAT_RECYCLE_PAUSE_US_MAX, us);
        stats_add(STAT_RECYCLE_PAUSE_US, (int64_t)us);
    }
    recycle_state.cand = NULL;
    os_sigprocmask(SIG_SETMASK, &old, NULL);
    return err;
}

void recycle_init(void) { reclaim_set_prove_hook(recycle_prove); }
