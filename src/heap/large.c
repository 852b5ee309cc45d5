/* large: see large.h. */
#include "heap/large.h"
#include "heap/keep.h"
#include "mem/maplimit.h"
#include "os/os.h"
#include "mem/region.h"
#include "mem/mapview.h"
#include "heap/packed.h"
#include "base/stats.h"
#include "heap/thread.h"

#include <errno.h>
#include <string.h>

static void set_entries(uintptr_t a, size_t size, size_t len) {
    size_t pages = len >> OSCAR_PAGE_SHIFT;
    for (size_t i = 1; i < pages; i++)
        region_store(a + (i << OSCAR_PAGE_SHIFT), entry_large(PK_LARGE_TAIL, i));
    region_store(a, entry_large(PK_LARGE, size));
}

static void count_alloc(void) {
    struct thread_cache *tc = oscar_tc;
    if (tc->state == TS_LIVE) {
        tc->n_alloc++;
        tc->n_large++;
    } else {
        stats_fold(1, 0, 0, 1, 0);
    }
}

size_t large_capacity(uintptr_t a, uint64_t e) {
    size_t pages = large_len(large_size(e)) >> OSCAR_PAGE_SHIFT;
    for (uintptr_t p = a + (pages << OSCAR_PAGE_SHIFT); region_contains(p); p += OSCAR_PAGE) {
        uint64_t f = region_load(p);
        if (entry_kind(f) != PK_LARGE_TAIL || entry_payload(f) != pages)
            break;
        pages++;
    }
    return pages << OSCAR_PAGE_SHIFT;
}

size_t large_growth_len(size_t size, size_t cap) {
    size_t room = cap < (64UL << 20) ? 2 * cap : cap + (64UL << 20);
    return room > large_len(size) ? room : large_len(size);
}

#define HUGE_MIN (2UL << 20)
#define POPULATE_MAX (64UL << 10)

/* Objects of up to CARVE_MAX bytes of pages are carved one after the other from a slab of
 * CARVE_SLAB bytes of private pages that the thread maps (and, after its first, prefaults)
 * in one call, instead of one mmap and a fault per page each. Needs guard markers: they
 * revoke one object inside the slab's mapping without splitting it. */
#define CARVE_MAX (64UL << 10)
#define CARVE_SLAB (256UL << 10)

static void retire_dead_stretch(uintptr_t a, size_t len);

/* Map fresh private pages at [a, a + len) (prefaulted if populate) and count the kernel
 * mapping; near the mapping limit (ENOMEM) tell maplimit and try once more. */
static bool map_fresh(uintptr_t a, size_t len, bool populate) {
    long delta = mapview_delta(a, a + len - OSCAR_PAGE, VIEW_ANON, 0);
    int err = os_map_private((void *)a, len, populate);
    if (err == ENOMEM) {
        maplimit_on_enomem();
        err = os_map_private((void *)a, len, populate);
    }
    if (err)
        return false;
    maplimit_add(delta);
    return true;
}

/* A new slab for tc. The rest of the old one (never handed out) is guarded, its
 * prefaulted memory goes back and a stray access faults; it is marked as a dead large
 * object of size 0 (no object has that size: object.c describes it as never allocated), so
 * that the slab can become PROT_NONE with its dead neighbours (retire_dead_stretch) and
 * does not stay a mapping of its own. */
static bool carve_refill(struct thread_cache *tc) {
    uintptr_t rest = tc->carve_next;
    size_t rest_len = tc->carve_end - rest;
    if (rest_len) {
        if (os_guard((void *)rest, rest_len) != 0)
            return false;
        set_entries(rest, 0, rest_len);
        region_store(rest, entry_large(PK_LARGE_GUARDED, 0));
        retire_dead_stretch(rest, rest_len);
    }
    tc->carve_next = tc->carve_end = 0;
    uintptr_t a = region_take(CARVE_SLAB, OSCAR_PAGE);
    if (!a)
        return false;
    /* A thread's first slab faults in as used: a thread with one large object does not pay
     * for the whole slab. */
    if (!map_fresh(a, CARVE_SLAB, tc->carve_slabs > 0))
        return false; /* (the addresses stay unused: never handed out twice) */
    tc->carve_slabs++;
    tc->carve_next = a;
    tc->carve_end = a + CARVE_SLAB;
    return true;
}

bool large_extend_in_slab(uintptr_t a, size_t cap, size_t len) {
    struct thread_cache *tc = oscar_tc;
    if (tc->state != TS_LIVE || a + cap != tc->carve_next || a < tc->carve_end - CARVE_SLAB ||
        len > CARVE_MAX || len > tc->carve_end - a)
        return false;
    for (size_t i = cap >> OSCAR_PAGE_SHIFT; i < len >> OSCAR_PAGE_SHIFT; i++)
        region_store(a + (i << OSCAR_PAGE_SHIFT), entry_large(PK_LARGE_TAIL, i));
    tc->carve_next = a + len;
    stats_gauge_add(STAT_LARGE_BYTES, STAT_PEAK_LARGE_BYTES, (int64_t)(len - cap));
    return true;
}

/* len bytes of mapped pages from the calling thread's slab, or 0 (then: one mmap). */
static uintptr_t carve(size_t len) {
    struct thread_cache *tc = thread_live_cache();
    if (!tc)
        return 0;
    if (tc->carve_end - tc->carve_next < len && !carve_refill(tc))
        return 0;
    uintptr_t a = tc->carve_next;
    tc->carve_next += len;
    return a;
}

/* Pages of their own for an object of *len bytes of pages: a freed object's kept pages if
 * any fit and the caller needs no zeros (*len grows when they come with room to spare),
 * else fresh ones. 0 when out of addresses or memory. */
static uintptr_t map_own_pages(size_t *len, size_t align, bool zero) {
    struct keep_claim kept;
    bool from_keep = !zero && keep_claim(*len, &kept);
    size_t room = from_keep ? kept.len : *len;
    /* Objects of 2 MiB and more are 2 MiB-aligned and asked for transparent huge pages: one
     * fault per 2 MiB instead of 512. */
    bool huge = *len >= HUGE_MIN;
    uintptr_t a = region_take(room, huge && align < HUGE_MIN ? HUGE_MIN : align);
    if (from_keep && !a)
        keep_release(&kept);
    if (from_keep && a) {
        long delta = mapview_delta(a, a + room - OSCAR_PAGE, VIEW_OTHER, 0);
        if (keep_move(&kept, a)) {
            maplimit_add(delta); /* (a moved mapping merges with none of its neighbours) */
            *len = room;
            return a;
        }
    }
    /* Objects up to POPULATE_MAX are prefaulted in the mmap call: a fault taken one page at
     * a time costs ~8 us here, a page populated ~0.5 us, and a small object is used whole. */
    if (!a || !map_fresh(a, *len, *len <= POPULATE_MAX))
        return 0;
    if (huge) /* (its flag keeps it from merging with its neighbours while it lives: up to
               * two mappings the estimate misses; maplimit recounts near the limit) */
        os_advise_huge((void *)a, *len);
    return a;
}

static void *alloc_pages(size_t size, size_t len, size_t align, bool zero) {
    if (atomic_load_explicit(&oscar_init_state, memory_order_acquire) != 2)
        return NULL; /* not initialised: modes/alloc.c initialises and asks again */
    if (size > LARGE_MAX || len > LARGE_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t a = len <= CARVE_MAX && align <= OSCAR_PAGE && os_guards_usable() ? carve(len) : 0;
    if (!a)
        a = map_own_pages(&len, align, zero);
    if (!a) {
        errno = ENOMEM;
        return NULL;
    }
    set_entries(a, size, len);
    stats_gauge_add(STAT_LARGE_BYTES, STAT_PEAK_LARGE_BYTES, (int64_t)len);
    count_alloc();
    return (void *)a;
}

void *large_alloc(size_t size, size_t align) {
    return alloc_pages(size, large_len(size), align, false);
}

void *large_alloc_zeroed(size_t size) {
    return alloc_pages(size, large_len(size), OSCAR_PAGE, true);
}

void *large_alloc_room(size_t size, size_t len) {
    return alloc_pages(size, len, OSCAR_PAGE, false);
}

/* Is e the first page's entry of a settled freed large object that is still guarded (large.h)?
 * Its pages, large_capacity's, are all its own: a chunk holding some of them is never
 * reclaimed before it is PK_LARGE_FREED. (Not so for a PK_LARGE_FREED one: its pages in a
 * chunk reclaimed and handed out again since may be a new object's.) */
static bool settled_guarded(uint64_t e) {
    return entry_kind(e) == PK_LARGE_GUARDED && !(e & LARGE_FREEING);
}

/* The first page of the large object that page p belongs to (p if it is not a tail). */
static uintptr_t head_of(uintptr_t p) {
    uint64_t e = region_load(p);
    return entry_kind(e) == PK_LARGE_TAIL ? p - (entry_payload(e) << OSCAR_PAGE_SHIFT) : p;
}

/* The first page of the settled guarded large object that page p belongs to, or 0. */
static uintptr_t dead_head(uintptr_t p) {
    if (!region_contains(p))
        return 0;
    p = head_of(p);
    return region_contains(p) && settled_guarded(region_load(p)) ? p : 0;
}

/* Replace the settled guarded objects of [lo, hi) by PROT_NONE memory and mark them so. Any
 * thread may do this at any time, and two may at once (a free's dead stretch and the
 * sweep): the pages are nobody's, PROT_NONE twice is PROT_NONE, and each mark is a CAS from
 * the entry read, so none lands on an entry that changed since. */
static bool make_none(uintptr_t lo, uintptr_t hi) {
    long delta = shadow_revoke_delta(lo, hi - OSCAR_PAGE);
    if (maplimit_defer(delta) || os_revoke((void *)lo, hi - lo) != 0)
        return false;
    maplimit_add(delta);
    for (uintptr_t p = lo; p < hi;) {
        uint64_t e = region_load(p);
        if (settled_guarded(e))
            atomic_compare_exchange_strong(region_entry(p), &e, entry_with_kind(e, PK_LARGE_FREED));
        p += large_capacity(p, e);
    }
    return true;
}

/* Guarded pages stay in their private mapping, with page-table entries of their own. Once
 * the dead objects around [a, a + len) make a stretch that can become PROT_NONE without a
 * new mapping (or is big enough to be worth one), replace it, so long-dead large objects
 * never pile up as mappings and page tables. */
static void retire_dead_stretch(uintptr_t a, size_t len) {
    uintptr_t lo = a, hi = a + len, h;
    for (int i = 0; i < 64 && (h = dead_head(lo - OSCAR_PAGE)) != 0; i++)
        lo = h;
    for (int i = 0; i < 64 && region_contains(hi); i++) {
        uint64_t e = region_load(hi);
        if (!settled_guarded(e))
            break;
        hi += large_capacity(hi, e);
    }
    /* Worth a call when it saves a mapping, or once the stretch is big: a stretch that
     * costs a new mapping waits for 2 MiB, one that costs none for 256 KiB (else every
     * free at the end of a mapping would pay a second system call). */
    long delta = shadow_revoke_delta(lo, hi - OSCAR_PAGE);
    if ((delta > 0 && hi - lo < (2UL << 20)) || (delta == 0 && hi - lo < (256UL << 10)))
        return;
    make_none(lo, hi);
}

/* A chunk of carved objects seldom becomes a dead stretch above (a free looks at 64 objects
 * each way, and a stretch inside a slab's mapping splits it, so it waits for 2 MiB): the
 * sweep retires it. It holds the reclaim lock, for its own state; what makes this safe is
 * that it touches only settled guarded objects, which their freeing threads let go of. */
bool large_retire_chunk(uintptr_t lo, uintptr_t hi) {
    /* (From the head of a settled guarded object that begins in the chunk before; a tail of
     * any other object is not ours to touch: left as it is below.) */
    uintptr_t p = dead_head(lo), run = 0;
    if (!p)
        p = lo;
    bool ok = true;
    while (p < hi || run) {
        uint64_t e = p < hi ? region_load(p) : 0;
        if (p < hi && settled_guarded(e)) {
            run = run ? run : p;
            p += large_capacity(p, e); /* (may end past hi: the object goes whole) */
            continue;
        }
        if (run)
            ok &= make_none(run, p);
        run = 0;
        p += OSCAR_PAGE;
    }
    return ok;
}

#define FAST_BATCH_MAX (32UL << 10)

/* The freed object at a (its entry marked LARGE_FREEING by us) now carries its guard
 * markers (len bytes of pages): settled. */
void large_batch_revoked(uintptr_t a, size_t len) {
    region_store(a, entry_with_kind(region_load(a) & ~LARGE_FREEING, PK_LARGE_GUARDED));
    stats_gauge_add(STAT_LARGE_BYTES, STAT_PEAK_LARGE_BYTES, -(int64_t)len);
    retire_dead_stretch(a, len);
}

/* The freed object at a (entry e, marked PK_LARGE_FREED and LARGE_FREEING by us, len bytes
 * of pages) becomes PROT_NONE, and settled; delta: the mappings that adds, counted before
 * it was marked. */
static void revoke_freed(uintptr_t a, uint64_t e, size_t len, long delta) {
    if (os_revoke((void *)a, len) != 0) {
        /* Cannot split the mapping: the pages stay, never reused; still a double free
         * if freed again. */
        maplimit_on_enomem();
    } else {
        maplimit_add(delta);
        stats_gauge_add(STAT_LARGE_BYTES, STAT_PEAK_LARGE_BYTES, -(int64_t)len);
    }
    region_store(a, entry_with_kind(e, PK_LARGE_FREED));
}

/* A freed object with a mapping of its own (carved ones share their slab's): its pages go
 * to the keep for the next large objects, then its addresses are revoked. Marked
 * LARGE_FREEING while they move: a dead stretch or the reclaim sweep that made them
 * PROT_NONE now would hand that to the next object that takes them from the keep. */
static bool free_to_keep(uintptr_t a, uint64_t e, size_t len) {
    long delta = shadow_revoke_delta(a, a + len - OSCAR_PAGE);
    if (!atomic_compare_exchange_strong(region_entry(a), &e,
                                        entry_with_kind(e, PK_LARGE_FREED) | LARGE_FREEING))
        return false;
    keep_put(a, len);
    if (os_guards_usable() && os_guard((void *)a, len) == 0)
        large_batch_revoked(a, len);
    else
        revoke_freed(a, e, len, delta);
    return true;
}

/* large_free; keep: the object still has its pages (not moved away by a realloc). */
static bool free_object(uintptr_t a, uint64_t e, bool keep) {
    size_t len = large_capacity(a, e);
    if (keep && len > CARVE_MAX && !maplimit_degraded())
        return free_to_keep(a, e, len);
    if (os_guards_usable()) {
        /* Fast mode: up to FAST_BATCH_MAX, poisoned like packed objects (a dangling read
         * learns nothing) and revoked with the thread's next batch; a second free is
         * reported at once. Bigger ones are revoked now: poisoning them would cost more
         * than the call it saves and touch pages the program never used. Poisoned while
         * still live: once marked freed, another thread's free may revoke it any time. */
        bool batch = packed_mode && entry_payload(e) <= FAST_BATCH_MAX;
        if (batch)
            packed_poison(a, (entry_payload(e) + 7) & ~7UL);
        /* Guard markers drop the pages and fault every access, without a new mapping. Marked
         * LARGE_FREEING until they are installed (now, or with the retire queue). */
        uint64_t freeing = entry_with_kind(e, PK_LARGE_GUARDED) | LARGE_FREEING;
        if (!atomic_compare_exchange_strong(region_entry(a), &e, freeing))
            return false;
        if (batch && packed_retire_later(a, freeing, len))
            return true;
        if (os_guard((void *)a, len) == 0) {
            large_batch_revoked(a, len);
            return true;
        }
        region_store(a, e); /* refused: the mmap path (the marked entry was ours alone) */
    }
    long delta = shadow_revoke_delta(a, a + len - OSCAR_PAGE);
    if (maplimit_degraded()) {
        /* Near the limit, PROT_NONE here would split a mapping now or leave a gap that
         * isolates the next large object: drop the memory and keep the pages mapped
         * (never reused; a late access reads zeros instead of faulting). */
        uint64_t guarded = entry_with_kind(e, PK_LARGE_GUARDED);
        if (!atomic_compare_exchange_strong(region_entry(a), &e, guarded | LARGE_FREEING))
            return false;
        if (os_drop((void *)a, len) != 0)
            memset((void *)a, 0, len); /* (refused: zeros all the same) */
        region_store(a, guarded);
        stats_gauge_add(STAT_LARGE_BYTES, STAT_PEAK_LARGE_BYTES, -(int64_t)len);
        return true;
    }
    if (!atomic_compare_exchange_strong(region_entry(a), &e,
                                        entry_with_kind(e, PK_LARGE_FREED) | LARGE_FREEING))
        return false;
    revoke_freed(a, e, len, delta);
    return true;
}

bool large_free(uintptr_t a, uint64_t e) { return free_object(a, e, true); }

void large_revoke_now(uintptr_t a, uint64_t e) {
    size_t len = large_capacity(a, e);
    if (os_guard((void *)a, len) == 0) {
        large_batch_revoked(a, len);
        return;
    }
    e &= ~LARGE_FREEING;
    long delta = shadow_revoke_delta(a, a + len - OSCAR_PAGE);
    if (maplimit_defer(delta) || os_revoke((void *)a, len) != 0) {
        /* never reused; a late access reads zeros, not old data (refused: zeroed here) */
        if (os_drop((void *)a, len) != 0)
            memset((void *)a, 0, len);
        region_store(a, e);
    } else {
        maplimit_add(delta);
        region_store(a, entry_with_kind(e, PK_LARGE_FREED));
    }
    stats_gauge_add(STAT_LARGE_BYTES, STAT_PEAK_LARGE_BYTES, -(int64_t)len);
}

void *large_grow_by_moving(uintptr_t a, uint64_t e, size_t new_size) {
    size_t old_len = large_capacity(a, e), new_len = large_growth_len(new_size, old_len);
    /* (A carved object is copied: cheaper than moving it out of its slab's mapping.) */
    if (new_size > LARGE_MAX || new_len <= old_len || old_len <= CARVE_MAX)
        return NULL;
    uintptr_t b = region_take(new_len, OSCAR_PAGE);
    if (!b)
        return NULL;
    /* Move the old pages without copying; the old range stays mapped (empty) until we
     * revoke it below, so no hole ever opens in our region. */
    if (os_move_pages((void *)a, (void *)b, old_len) != 0)
        return NULL;
    if (os_map_private((void *)(b + old_len), new_len - old_len, false) != 0) {
        /* Put the pages back where they were; the caller copies instead. */
        os_move_pages((void *)b, (void *)a, old_len);
        return NULL;
    }
    set_entries(b, new_size, new_len);
    maplimit_add(1);
    stats_gauge_add(STAT_LARGE_BYTES, STAT_PEAK_LARGE_BYTES, (int64_t)new_len);
    /* If another thread freed a at the same moment, its free reports the double free. */
    free_object(a, e, false);
    return (void *)b;
}
