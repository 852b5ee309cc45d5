/* small: see small.h. */
#include "heap/small.h"
#include "mem/canon.h"
#include "mem/maplimit.h"
#include "os/os.h"
#include "os/nopark.h"
#include "heap/packed.h"
#include "heap/deferred.h"
#include "heap/reclaim.h"
#include "base/stats.h"

#include <errno.h>

/* Map one group of consecutive canonical pages [first, first+n) with a claimed slot each
 * and push the new shadows on c's list. Returns 0 or an errno. */
static int map_group(struct thread_cache *tc, struct class_cache *c, unsigned cls,
                     uint64_t first, const int16_t *slots, unsigned n) {
    uintptr_t sh = thread_take_shadow(tc, n);
    if (!sh)
        return ENOMEM;
    long delta = mapview_delta(sh, sh + ((uintptr_t)(n - 1) << OSCAR_PAGE_SHIFT), VIEW_SHARED, first);
    /* A class's first run is not prefaulted (a lightly used class touches only the pages
     * of the objects it gets); later runs are, in one call. */
    int err = canon_map_shadow(sh, (size_t)n << OSCAR_PAGE_SHIFT, first, c->mapped++ > 0);
    if (err)
        return err;
    stats_add(STAT_RUNS_MAPPED, 1);
    stats_add(STAT_SHADOWS_CREATED, n);
    maplimit_add(delta);
    /* Push in descending order so the fast path hands out ascending addresses. */
    for (unsigned k = n; k-- > 0;) {
        uintptr_t page = sh + ((uintptr_t)k << OSCAR_PAGE_SHIFT);
        region_store(page, entry_small(PK_READY, first + k, cls, (unsigned)slots[k], 0));
        c->objs[c->count++] = page + (uintptr_t)slots[k] * class_size[cls];
    }
    return 0;
}

/* A shadow page mapped only to keep a run in one kernel mapping: its canonical page had no
 * free slot. Guarded at once and never handed out; the slot number is past every page's
 * last slot, so reports call an access there wild and a free of it never allocated. */
#define FILLER_SLOT 511

/* With guard markers, claimed pages [i0, i1] of a span that has pages without a free slot
 * between them become ONE mapping: the pages in between are mapped too and guarded at once
 * (one more call for all of them), instead of one mapping per group of consecutive claimed
 * pages. Once a program has freed and reused many slots, the groups are a page or two long
 * and would otherwise exhaust vm.max_map_count. Returns 0 or an errno (nothing mapped). */
/* (os_pages_apply's question: is page k a filler?) */
static bool is_filler(unsigned k, const void *slots) { return ((const int16_t *)slots)[k] < 0; }

static int map_with_fillers(struct thread_cache *tc, struct class_cache *c, unsigned cls,
                            uint64_t first, const int16_t *slots, unsigned n) {
    uintptr_t sh = thread_take_shadow(tc, n);
    if (!sh)
        return ENOMEM;
    size_t len = (size_t)n << OSCAR_PAGE_SHIFT;
    long delta = mapview_delta(sh, sh + len - OSCAR_PAGE, VIEW_SHARED, first);
    int err = canon_map_shadow(sh, len, first, c->mapped++ > 0); /* (as in map_group) */
    if (err)
        return err;
    if (os_pages_apply(sh, n, is_filler, slots, os_guard_ranges) != 0) {
        os_revoke((void *)sh, len); /* the addresses stay unused: never handed out twice */
        return EINVAL;
    }
    stats_add(STAT_RUNS_MAPPED, 1);
    maplimit_add(delta);
    for (unsigned k = n; k-- > 0;) {
        uintptr_t page = sh + ((uintptr_t)k << OSCAR_PAGE_SHIFT);
        if (slots[k] < 0) {
            region_store(page, entry_small(PK_SMALL_GUARDED, first + k, cls, FILLER_SLOT, 0));
            continue;
        }
        stats_add(STAT_SHADOWS_CREATED, 1);
        region_store(page, entry_small(PK_READY, first + k, cls, (unsigned)slots[k], 0));
        c->objs[c->count++] = page + (uintptr_t)slots[k] * class_size[cls];
    }
    return 0;
}

/* Build runs from the active span until c has ready shadows. */
static bool refill(struct thread_cache *tc, unsigned cls) {
    struct class_cache *c = &tc->cls[cls];
    unsigned pages = oscar_canon.span_pages;
    int16_t slots[OSCAR_MAX_RUN_PAGES]; /* (a slot number, or -1: 2 KiB of a small stack) */
    thread_fold_stats(tc);
    while (!c->count) {
        struct span *s = c->active;
        if (!s) {
            s = canon_span_acquire(cls);
            if (!s)
                return false;
            c->active = s;
        }
        uint64_t first = canon_span_first_page(s);
        unsigned claimed = 0;
        for (unsigned i = 0; i < pages; i++) {
            slots[i] = (int16_t)canon_claim_slot(first + i);
            claimed += slots[i] >= 0;
        }
        if (!claimed) {
            canon_span_detach(s);
            c->active = NULL;
            continue;
        }
        atomic_fetch_add(&s->claimed, claimed);
        unsigned i0 = 0, i1 = pages - 1;
        while (slots[i0] < 0)
            i0++;
        while (slots[i1] < 0)
            i1--;
        if (i1 - i0 + 1 > claimed && os_guards_usable() &&
            map_with_fillers(tc, c, cls, first + i0, slots + i0, i1 - i0 + 1) == 0)
            continue;
        for (unsigned i = 0; i < pages;) {
            if (slots[i] < 0) {
                i++;
                continue;
            }
            unsigned j = i;
            while (j < pages && slots[j] >= 0)
                j++;
            if (map_group(tc, c, cls, first + i, slots + i, j - i) != 0) {
                for (unsigned k = i; k < j; k++)
                    canon_release_slot(first + k, (unsigned)slots[k]);
                if (!c->count) {
                    for (unsigned k = j; k < pages; k++)
                        if (slots[k] >= 0)
                            canon_release_slot(first + k, (unsigned)slots[k]);
                    return false;
                }
            }
            i = j;
        }
    }
    return true;
}

static void *alloc_in(struct thread_cache *tc, unsigned cls, size_t size) {
    struct class_cache *c = &tc->cls[cls];
    if (!c->count &&
        (c->packed_next || ((packed_mode || maplimit_degraded() || reclaim_short_of_addresses()) &&
                            packed_refill(tc, cls)))) {
        tc->n_alloc++;
        tc->n_small++;
        uintptr_t a = packed_take(c, cls);
        if (!(c->packed_next & (OSCAR_PAGE - 1)))
            thread_fold_stats(tc); /* a page filled: keep the live and peak counts fresh */
        return (void *)a;
    }
    if (!c->count && !refill(tc, cls)) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t a = c->objs[--c->count];
    uint64_t e = region_load(a);
    region_store(a, entry_with_size(entry_with_kind(e, PK_SMALL), size));
    tc->n_alloc++;
    tc->n_small++;
    return (void *)a;
}

void *small_alloc_from_span(unsigned cls, size_t size) {
    if (unlikely(atomic_load_explicit(&oscar_init_state, memory_order_acquire) != 2))
        return NULL; /* the process's first allocation: modes/alloc.c initialises, retries */
    struct thread_cache *tc = thread_attach();
    if (tc)
        return alloc_in(tc, cls, size);
    thread_fallback_lock();
    void *p = alloc_in(thread_fallback, cls, size);
    thread_fallback_unlock();
    return p;
}

static void defer_revocation(uintptr_t page) {
    if (!deferred_push(page))
        return; /* list full: the shadow simply stays mapped, the slot unused */
}

/* The page next to p in the same kernel mapping (a run of consecutive canonical pages of
 * the same mode), if it is a guarded shadow; 0 if it is not, or -1 if the run ends there. */
static int guarded_neighbour(uintptr_t p, uint64_t canon, long step, bool packed) {
    uintptr_t q = p + (uintptr_t)step * OSCAR_PAGE;
    if (!region_contains(q))
        return -1;
    uint64_t f = region_load(q);
    enum page_kind k = entry_kind(f);
    enum page_kind guarded = packed ? PK_PACKED_GUARDED : PK_SMALL_GUARDED;
    bool shared = packed ? k == PK_PACKED || k == PK_PACKED_GUARDED
                         : k == PK_READY || k == PK_SMALL || k == PK_DEFERRED ||
                               k == PK_PACKED || k == PK_SMALL_GUARDED;
    if (!shared || entry_canon(f) != canon + (uint64_t)step)
        return -1;
    return k == guarded;
}

void shadow_retire_run_if_dead(uintptr_t page, uint64_t canon, bool packed) {
    uintptr_t lo = page, hi = page;
    uint64_t clo = canon, chi = canon;
    int r;
    for (unsigned n = 0; n < 2 * OSCAR_MAX_RUN_PAGES; n++) {
        if ((r = guarded_neighbour(lo, clo, -1, packed)) == 0)
            return;
        if (r < 0)
            break;
        lo -= OSCAR_PAGE;
        clo--;
    }
    for (unsigned n = 0; n < 2 * OSCAR_MAX_RUN_PAGES; n++) {
        if ((r = guarded_neighbour(hi, chi, 1, packed)) == 0)
            return;
        if (r < 0)
            break;
        hi += OSCAR_PAGE;
        chi++;
    }
    long delta = shadow_revoke_delta(lo, hi);
    if (os_revoke((void *)lo, hi - lo + OSCAR_PAGE) != 0)
        return; /* the run stays guarded */
    enum page_kind freed = packed ? PK_PACKED_FREED : PK_SMALL_FREED;
    for (uintptr_t p = lo; p <= hi; p += OSCAR_PAGE)
        region_store(p, entry_with_kind(region_load(p), freed));
    maplimit_add(delta);
    stats_add(STAT_RUNS_RETIRED, 1);
}

enum guard_result { GUARD_DONE, GUARD_RACED, GUARD_REFUSED };

/* Revoke with a guard marker: no new kernel mapping, whatever the neighbours. */
static enum guard_result free_by_guard(uintptr_t page, uint64_t e) {
    if (!atomic_compare_exchange_strong(region_entry(page), &e,
                                        entry_with_kind(e, PK_SMALL_GUARDED)))
        return GUARD_RACED;
    if (os_guard((void *)page, OSCAR_PAGE) != 0) {
        region_store(page, e); /* not revoked: take the mmap path */
        return GUARD_REFUSED;
    }
    stats_add(STAT_SHADOWS_REVOKED, 1);
    canon_release_slot(entry_canon(e), entry_slot(e));
    shadow_retire_run_if_dead(page, entry_canon(e), false);
    return GUARD_DONE;
}

bool small_free(uintptr_t a, uint64_t e) {
    uintptr_t page = a & ~(OSCAR_PAGE - 1);
    _Atomic uint64_t *ep = region_entry(page);
    if (os_guards_usable()) {
        enum guard_result r = free_by_guard(page, e);
        if (r != GUARD_REFUSED)
            return r == GUARD_DONE;
    }
    long delta = shadow_revoke_delta(page, page);
    if (maplimit_defer(delta)) {
        if (!atomic_compare_exchange_strong(ep, &e, entry_with_kind(e, PK_DEFERRED)))
            return false;
        defer_revocation(page);
        return true;
    }
    /* Marked freed and still mapped until os_revoke returns: no stop may park us between
     * (a fork's child would keep the page on our heap: os/nopark.h). */
    os_nopark_enter();
    if (!atomic_compare_exchange_strong(ep, &e, entry_with_kind(e, PK_SMALL_FREED))) {
        os_nopark_leave();
        return false;
    }
    os_nopark_test_pause();
    int err = os_revoke((void *)page, OSCAR_PAGE);
    if (err)
        region_store(page, entry_with_kind(e, PK_DEFERRED));
    os_nopark_leave();
    if (err) {
        /* Cannot split the mapping: defer the revocation (the slot is never reused meanwhile). */
        maplimit_on_enomem();
        defer_revocation(page);
        return true;
    }
    maplimit_add(delta);
    stats_add(STAT_SHADOWS_REVOKED, 1);
    canon_release_slot(entry_canon(e), entry_slot(e));
    return true;
}

bool small_revoke_deferred(uintptr_t page) {
    uint64_t e = region_load(page);
    if (entry_kind(e) != PK_DEFERRED)
        return true; /* not ours any more (cannot happen; drop it) */
    long delta = shadow_revoke_delta(page, page);
    if (maplimit_defer(delta))
        return false;
    os_nopark_enter();
    region_store(page, entry_with_kind(e, PK_SMALL_FREED));
    os_nopark_test_pause();
    if (os_revoke((void *)page, OSCAR_PAGE) != 0) {
        region_store(page, e);
        os_nopark_leave();
        return false;
    }
    os_nopark_leave();
    maplimit_add(delta);
    stats_add(STAT_SHADOWS_REVOKED, 1);
    canon_release_slot(entry_canon(e), entry_slot(e));
    return true;
}
