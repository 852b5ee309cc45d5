/* packed: see packed.h. */
#include "heap/packed.h"
#include "mem/canon.h"
#include "heap/large.h"
#include "mem/maplimit.h"
#include "base/options.h"
#include "os/os.h"
#include "os/nopark.h"
#include "mem/region.h"
#include "mem/mapview.h"
#include "heap/small.h"
#include "base/stats.h"

#include <errno.h>

bool packed_mode; /* set once by modes/alloc.c's init, under its init lock */
unsigned packed_k; /* set once by packed_init */
static struct {
    /* The poison window's address, written into freed packed objects (0: no window): set
     * once by packed_init. */
    uint64_t poison_word;
} packed_state;

/* Marks a queued page whose canonical page has no live object left, so the flush gives
 * its memory back (an entry bit packed pages never use; never stored in the region). */
#define QUEUED_EMPTY (1ULL << 63)

#define POISON_WINDOW (1UL << 20)

/* The group of a filler page: a page mapped only to keep a reused span's pages in one
 * mapping, still in use through an older shadow; guarded at once, no slot handed out. */
#define FILLER_GROUP 511

void packed_init(void) {
    packed_k = (unsigned)options_int(OPT_OBJECTS_PER_PAGE);
    /* 4 GiB-aligned, so the poison's low 32 bits are zero: an int or flag read from a freed
     * object at an 8-byte boundary reads 0, not a large non-zero value. */
    uintptr_t w = region_take(POISON_WINDOW, 1UL << 32);
    if (!w)
        return; /* no poison: freed objects keep their bytes (still never reused) */
    for (uintptr_t p = w; p < w + POISON_WINDOW; p += OSCAR_PAGE)
        region_store(p, entry_large(PK_POISON, 0));
    /* A pointer read back plus a field offset (up to the window) still lands inside; below
     * the window is never-mapped region too (a wild-access report). */
    packed_state.poison_word = w;
}

/* Reuse spans (canon.h): their pages are mapped again at new shadows once revoked, so
 * freed memory serves new objects without being punched and zeroed, and memory follows the
 * pages in use, not whole spans. Needs guard markers (for the fillers) and one group. */
static bool reuse_wanted(unsigned cls) {
    return os_guards_usable() && packed_groups(cls) == 1 && !maplimit_degraded();
}

/* Which span pages map_reused asks os_pages_apply for: those (not) in mask, from lo on. */
struct mask_pages {
    const uint64_t *mask;
    unsigned lo;
    bool in_mask;
};

static bool mask_page(unsigned k, const void *arg) {
    const struct mask_pages *m = arg;
    return canon_mask_has(m->mask, m->lo + k) == m->in_mask;
}

/* Map the reusable pages (mask) of span s at new shadows for c: one mapping from the first
 * to the last of them, the pages between them that are still in use (through an older
 * shadow) guarded at once, the reused ones prefaulted. */
static bool map_reused(struct thread_cache *tc, struct class_cache *c, unsigned cls,
                       struct span *s, const uint64_t *mask) {
    unsigned pages = oscar_canon.span_pages, lo = pages, hi = 0;
    for (unsigned i = 0; i < pages; i++)
        if (canon_mask_has(mask, i)) {
            lo = lo < i ? lo : i;
            hi = i;
        }
    unsigned n = hi - lo + 1;
    uint64_t first = canon_span_first_page(s) + lo;
    size_t len = (size_t)n << OSCAR_PAGE_SHIFT;
    uintptr_t sh = thread_take_shadow(tc, n);
    if (!sh)
        return false;
    long delta = mapview_delta(sh, sh + len - OSCAR_PAGE, VIEW_SHARED, first);
    if (canon_map_shadow(sh, len, first, false) != 0)
        return false;
    struct mask_pages in_use = {mask, lo, false}, to_reuse = {mask, lo, true};
    if (os_pages_apply(sh, n, mask_page, &in_use, os_guard_ranges) != 0) {
        os_revoke((void *)sh, len); /* the addresses stay unused: never handed out twice */
        return false;
    }
    /* If refused, the pages fault in on first touch. */
    os_pages_apply(sh, n, mask_page, &to_reuse, os_populate_ranges);
    maplimit_add(delta);
    unsigned reused = 0;
    for (unsigned k = 0; k < n; k++) {
        uintptr_t p = sh + ((uintptr_t)k << OSCAR_PAGE_SHIFT);
        bool use = canon_mask_has(mask, lo + k);
        reused += use;
        region_store(p, use ? entry_small(PK_PACKED, first + k, cls, 0, 0)
                            : entry_small(PK_PACKED_GUARDED, first + k, cls, FILLER_GROUP, 0));
    }
    stats_add(STAT_RUNS_MAPPED, 1);
    stats_add(STAT_SHADOWS_CREATED, reused);
    stats_add(STAT_PACKED_PAGES, reused);
    c->packed_next = sh; /* the first page is a reused one */
    c->packed_end = sh + len;
    return true;
}

/* Reusable pages of class cls offered by a reuse span, mapped for c; false if none. */
static bool refill_reused(struct thread_cache *tc, struct class_cache *c, unsigned cls) {
    uint64_t mask[OSCAR_MAX_RUN_PAGES / 64];
    struct span *s = canon_span_reuse_packed(cls, mask);
    if (!s)
        return false;
    if (map_reused(tc, c, cls, s, mask))
        return true;
    canon_span_unreuse_packed(s, mask);
    return false;
}

/* A packed span is mapped once per group of slots (packed_groups): group g's shadow pages
 * come after group g-1's, each a mapping of the whole span, and hand out only the slots of
 * group g. With one group (the default) every slot of a canonical page shares one shadow. */
bool packed_refill(struct thread_cache *tc, unsigned cls) {
    struct class_cache *c = &tc->cls[cls];
    bool reuse = reuse_wanted(cls);
    if (reuse && refill_reused(tc, c, cls))
        return true;
    struct span *s = canon_span_acquire_packed(cls, reuse);
    if (!s)
        return false;
    unsigned pages = oscar_canon.span_pages, groups = packed_groups(cls);
    uint64_t first = canon_span_first_page(s);
    size_t len = (size_t)pages << OSCAR_PAGE_SHIFT;
    uintptr_t sh = thread_take_shadow(tc, (size_t)pages * groups);
    long delta = 0;
    unsigned g = 0;
    int err = sh ? 0 : ENOMEM;
    for (; !err && g < groups; g++) {
        uintptr_t at = sh + g * len;
        delta += mapview_delta(at, at + len - OSCAR_PAGE, VIEW_SHARED, first);
        /* A class's first span is not prefaulted: a program that uses the class lightly
         * touches (and pays memory for) only the pages it uses; later spans of a class in
         * use are prefaulted in one call. (delta approximate for g > 0: recounts fix it) */
        err = canon_map_shadow(at, len, first, c->mapped > 0);
    }
    if (err) {
        /* Nothing was handed out: the groups mapped so far go, the span goes back whole.
         * (Shadow addresses taken from the slice stay unused: never handed out twice.) */
        if (g > 1)
            os_revoke((void *)sh, (g - 1) * len);
        canon_packed_release(s, atomic_load(&s->claimed));
        canon_span_release_memory(s);
        return false;
    }
    s->packed_shadow = sh;
    c->mapped++;
    for (g = 0; g < groups; g++)
        for (unsigned i = 0; i < pages; i++)
            region_store(sh + g * len + ((uintptr_t)i << OSCAR_PAGE_SHIFT),
                         entry_small(PK_PACKED, first + i, cls, g, 0));
    maplimit_add(delta);
    stats_add(STAT_RUNS_MAPPED, groups);
    stats_add(STAT_SHADOWS_CREATED, (int64_t)pages * groups);
    stats_add(STAT_PACKED_PAGES, (int64_t)pages * groups);
    c->packed_next = sh;
    c->packed_end = sh + groups * len;
    return true;
}

uintptr_t packed_take(struct class_cache *c, unsigned cls) {
    uintptr_t a = c->packed_next, page = a & ~(OSCAR_PAGE - 1);
    unsigned size = class_size[cls], k = packed_group_size(cls);
    unsigned slot = class_slot_at(a - page, cls), end = (packed_group_of(slot, cls) + 1) * k;
    uintptr_t next = a + size;
    if (packed_one_group(cls))
        canon_note_taken(entry_canon(region_load(page)), slot + 1);
    if (slot + 1 >= end || slot + 1 >= class_slots(cls)) {
        next = page + OSCAR_PAGE; /* the next page starts at the first slot of its group */
        while (next < c->packed_end && entry_kind(region_load(next)) != PK_PACKED)
            next += OSCAR_PAGE; /* a filler (map_reused) */
        if (next < c->packed_end)
            next += (uintptr_t)entry_slot(region_load(next)) * k * size;
    }
    if (next >= c->packed_end)
        next = c->packed_end = 0;
    c->packed_next = next;
    return a;
}

/* The slot a starts, or -1 when a is not the start of one. */
static int slot_of(uintptr_t a, uint64_t e) {
    unsigned cls = entry_class(e);
    uintptr_t off = a & (OSCAR_PAGE - 1);
    unsigned slot = class_slot_at(off, cls);
    if (slot * class_size[cls] != off || slot >= class_slots(cls) ||
        packed_group_of(slot, cls) != entry_slot(e))
        return -1; /* not a slot, or a slot of another group's shadow */
    return (int)slot;
}

bool packed_is_live(uintptr_t a, uint64_t e) {
    int slot = slot_of(a, e);
    return slot >= 0 && packed_slot_handed_out(e, (unsigned)slot) &&
           !canon_slot_is_free(entry_canon(e), (unsigned)slot);
}

/* Every object of packed span s is freed: revoke its shadows at once, give its memory back.
 * If the kernel refuses, the span stays as it is (still never reused). */
static void span_done(struct span *s) {
    uintptr_t first = s->packed_shadow;
    uintptr_t last = first + ((uintptr_t)oscar_canon.span_pages * packed_groups(s->cls) - 1) *
                                 OSCAR_PAGE;
    long delta = shadow_revoke_delta(first, last);
    if (os_revoke((void *)first, last - first + OSCAR_PAGE) != 0) {
        maplimit_on_enomem();
        return;
    }
    maplimit_add(delta);
    for (uintptr_t p = first; p <= last; p += OSCAR_PAGE) {
        uint64_t e = region_load(p);
        if (entry_kind(e) == PK_PACKED)
            stats_add(STAT_SHADOWS_REVOKED, 1);
        region_store(p, entry_with_kind(e, PK_PACKED_FREED));
    }
    canon_span_release_memory(s);
}

/* Packed pages q->page[i..j) (consecutive shadow pages) have no live object: revoke them
 * in one call unless that would cost a mapping we cannot afford (then their span's
 * revocation catches them later), and give back the memory of canonical pages that have
 * no live object left, so a long-lived object pins its own page, not its whole span.
 * True when they were revoked. */
static bool pages_done(const uintptr_t *page, const uint64_t *entry, uint32_t n) {
    uintptr_t lo = page[0], hi = page[n - 1];
    long delta = shadow_revoke_delta(lo, hi);
    if (maplimit_defer(delta))
        return false;
    os_nopark_enter(); /* (marked freed, still mapped: os/nopark.h) */
    for (uint32_t i = 0; i < n; i++)
        region_store(page[i], entry_with_kind(entry[i] & ~QUEUED_EMPTY, PK_PACKED_FREED));
    os_nopark_test_pause();
    if (os_revoke((void *)lo, hi - lo + OSCAR_PAGE) != 0) {
        for (uint32_t i = 0; i < n; i++)
            region_store(page[i], entry[i] & ~QUEUED_EMPTY);
        os_nopark_leave();
        maplimit_on_enomem();
        return false;
    }
    os_nopark_leave();
    maplimit_add(delta);
    stats_add(STAT_SHADOWS_REVOKED, n);
    for (uint32_t i = 0; i < n; i++)
        if (entry[i] & QUEUED_EMPTY)
            canon_punch(entry_canon(entry[i]), 1);
    return true;
}

/* A finished page (entry e) was revoked, or not: offer its canonical page for reuse if
 * its span is a reuse span and it has no object left, then let go of the span count the
 * page held; the last count of a span without reuse revokes the span. */
static void page_finished(uint64_t e, bool revoked, bool idle) {
    uint64_t canon = entry_canon(e);
    struct span *s = canon_span_of(canon);
    if (revoked && s->reuse && (e & QUEUED_EMPTY))
        canon_packed_page_reusable(canon, idle);
    else if (idle)
        canon_idle_unreserve();
    if (!s->reuse && canon_packed_release(s, 1))
        span_done(s); /* (reuse spans keep no count: their pages come back one by one) */
}

static bool is_large(uint64_t e) { return entry_kind(e) == PK_LARGE_GUARDED; }

/* The queued pages and large objects (only the pages whose memory goes back, if only_empty)
 * as ranges. A queued large object's entry is as queued: marked LARGE_FREEING, so no other
 * thread's dead stretch and no reclaim sweep touches it before this flush settles it
 * (large.h). */
static unsigned add_ranges(struct iovec *iov, const struct retire_queue *q, const bool *idle,
                           bool only_empty) {
    unsigned n = 0;
    for (uint32_t i = 0; i < q->n; i++) {
        uint64_t e = q->entry[i];
        if (is_large(e)) {
            if (!only_empty) /* (its memory goes with its guard) */
                n = os_ranges_add(iov, n, q->page[i], large_capacity(q->page[i], e));
        } else if (!only_empty || ((e & QUEUED_EMPTY) && !idle[i])) {
            n = os_ranges_add_page(iov, n, q->page[i]);
        }
    }
    return n;
}

/* With guard markers, the whole queue in two system calls whatever its shape: guard the
 * pages and the large objects (no mapping split; a guard frees private memory too), then
 * give the empty pages' memory back (MADV_REMOVE through the shadows punches the canonical
 * file). In this order only the guard clears page-table entries: one TLB shoot-down of the
 * other CPUs per flush, not two.
 * Empty pages of reuse spans keep their memory (idle) while the idle budget lasts: they
 * are mapped again for new objects. False when the kernel cannot: the caller goes one
 * stretch at a time. */
static bool guard_queue(struct retire_queue *q, bool *idle) {
    for (uint32_t i = 0; i < q->n; i++)
        idle[i] = false;
    if (!os_guards_usable() || !q->n)
        return false;
    for (uint32_t i = 0; i < q->n; i++)
        idle[i] = !is_large(q->entry[i]) && (q->entry[i] & QUEUED_EMPTY) &&
                  canon_span_of(entry_canon(q->entry[i]))->reuse && canon_idle_reserve();
    struct iovec *all = q->all, *empty = q->empty;
    unsigned n_all = add_ranges(all, q, idle, false);
    unsigned n_empty = add_ranges(empty, q, idle, true);
    for (uint32_t i = 0; i < q->n; i++)
        if (!is_large(q->entry[i]))
            region_store(q->page[i], entry_with_kind(q->entry[i] & ~QUEUED_EMPTY, PK_PACKED_GUARDED));
    if ((n_all && os_guard_ranges(all, n_all) != 0) ||
        (n_empty && os_remove_ranges(empty, n_empty) != 0)) {
        for (uint32_t i = 0; i < q->n; i++) {
            if (!is_large(q->entry[i]))
                region_store(q->page[i], q->entry[i] & ~QUEUED_EMPTY);
            if (idle[i])
                canon_idle_unreserve();
            idle[i] = false;
        }
        return false;
    }
    return true;
}

static void swap_entries(struct retire_queue *q, uint32_t i, uint32_t j) {
    uintptr_t p = q->page[i];
    uint64_t e = q->entry[i];
    q->page[i] = q->page[j];
    q->entry[i] = q->entry[j];
    q->page[j] = p;
    q->entry[j] = e;
}

/* Move entry i down the max-heap q[0, n) (by page address) to its place. */
static void sift_down(struct retire_queue *q, uint32_t i, uint32_t n) {
    for (uint32_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && q->page[c + 1] > q->page[c])
            c++;
        if (q->page[i] >= q->page[c])
            return;
        swap_entries(q, i, c);
    }
}

/* Sort the queue by address, so frees that came in any order still revoke as long runs
 * (heapsort: in place, n log n for up to RETIRE_MAX entries). */
static void sort_queue(struct retire_queue *q) {
    uint32_t n = q->n;
    for (uint32_t i = n / 2; i-- > 0;)
        sift_down(q, i, n);
    for (uint32_t end = n; end > 1; end--) {
        swap_entries(q, 0, end - 1);
        sift_down(q, 0, end - 1);
    }
}

void packed_flush_retired(struct thread_cache *tc) {
    struct retire_queue *q = &tc->retire;
    uint32_t n = q->n;
    sort_queue(q);
    bool idle[RETIRE_MAX];
    bool guarded = guard_queue(q, idle);
    q->n = 0; /* (finishing the entries below frees nothing: it cannot refill the queue) */
    q->large_bytes = 0;
    for (uint32_t i = 0; i < n;) {
        if (is_large(q->entry[i])) {
            if (guarded)
                large_batch_revoked(q->page[i], large_capacity(q->page[i], q->entry[i]));
            else
                large_revoke_now(q->page[i], q->entry[i]);
            i++;
            continue;
        }
        uint32_t j = i + 1;
        while (j < n && !is_large(q->entry[j]) && q->page[j] == q->page[j - 1] + OSCAR_PAGE)
            j++;
        if (guarded)
            stats_add(STAT_SHADOWS_REVOKED, j - i);
        bool revoked = guarded || pages_done(q->page + i, q->entry + i, j - i);
        for (uint32_t k = i; k < j; k++)
            page_finished(q->entry[k], revoked, idle[k]);
        if (guarded && canon_span_of(entry_canon(q->entry[i]))->reuse)
            shadow_retire_run_if_dead(q->page[i], entry_canon(q->entry[i]), true);
        i = j;
    }
}

bool packed_trim(void) {
    struct thread_cache *tc = oscar_tc;
    if (!tc || tc->state != TS_LIVE || !tc->retire.n)
        return false;
    packed_flush_retired(tc);
    return true;
}

/* Queue a finished page (or a freed large object of `bytes`) on the calling thread's
 * retire queue; false when the thread has no live cache (it is exiting): the caller
 * revokes at once. */
bool packed_retire_later(uintptr_t page, uint64_t e, size_t bytes) {
    struct thread_cache *tc = thread_live_cache(); /* a thread that only frees gets one too */
    if (!tc)
        return false;
    if (tc->retire.n >= (thread_several_live() ? RETIRE_MAX : RETIRE_SOLO))
        packed_flush_retired(tc);
    tc->retire.page[tc->retire.n] = page;
    tc->retire.entry[tc->retire.n] = e;
    tc->retire.n++;
    if (is_large(e) && (tc->retire.large_bytes += bytes) >= RETIRE_LARGE_BYTES)
        packed_flush_retired(tc); /* freed large objects hold memory until revoked */
    return true;
}

static bool release_slot(uintptr_t a, uint64_t e, unsigned slot) {
    uint64_t canon = entry_canon(e);
    unsigned n = class_slots(entry_class(e)), k = packed_group_size(entry_class(e));
    unsigned lo = packed_group_of(slot, entry_class(e)) * k, hi = lo + k < n ? lo + k : n;
    int r = canon_packed_free_slot(canon, slot, lo, hi);
    if (r < 0)
        return false;
    bool group_done = r & PACKED_GROUP_DONE;
    if (!group_done && lo / 64 != (hi - 1) / 64 && hi - lo < n)
        group_done = canon_slots_free(canon, lo, hi); /* (K not dividing 64: may race) */
    if (group_done) {
        /* Every object of this shadow page is freed. */
        uintptr_t page = a & ~(OSCAR_PAGE - 1);
        uint64_t queued = r & PACKED_PAGE_DONE ? e | QUEUED_EMPTY : e;
        if (packed_retire_later(page, queued, OSCAR_PAGE))
            return true; /* the page keeps this slot's span count until it is revoked */
        page_finished(queued, pages_done(&page, &queued, 1), false);
        return true;
    }
    page_finished(e, false, false);
    return true;
}

void packed_poison(uintptr_t a, size_t bytes) {
    if (!packed_state.poison_word)
        return;
    uint64_t *w = (uint64_t *)a;
    for (size_t i = 0; i < bytes / 8; i++)
        w[i] = packed_state.poison_word;
}

bool packed_free(uintptr_t a, uint64_t e) {
    int slot = slot_of(a, e);
    if (slot < 0)
        return false;
    /* The slot stays readable until its whole page is freed: overwrite what the program
     * left there (secrets, function and vtable pointers) with pointers into the poison
     * window, so a dangling read learns nothing and a followed pointer faults. */
    packed_poison(a, class_size[entry_class(e)]);
    return release_slot(a, e, (unsigned)slot);
}
