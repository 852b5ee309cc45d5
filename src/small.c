/* small: see small.h. */
#include "small.h"
#include "canon.h"
#include "maplimit.h"
#include "os.h"
#include "quarantine.h"
#include "stats.h"

#include <errno.h>

/* What a page looks like to the kernel, for predicting mapping merges and splits. */
enum page_view { VIEW_NONE, VIEW_SHARED, VIEW_ANON, VIEW_OTHER };

static enum page_view page_view(uintptr_t page, uint64_t *canon) {
    if (!region_contains(page))
        return VIEW_OTHER;
    uint64_t e = region_load(page);
    switch (entry_kind(e)) {
    case PK_NONE:
    case PK_SMALL_FREED:
    case PK_LARGE_FREED:
        return VIEW_NONE;
    case PK_READY:
    case PK_SMALL:
    case PK_QUARANTINED:
        *canon = entry_canon(e);
        return VIEW_SHARED;
    case PK_LARGE:
        return VIEW_ANON;
    case PK_LARGE_TAIL: {
        uintptr_t head = page - (entry_payload(e) << OSCAR_PAGE_SHIFT);
        return entry_kind(region_load(head)) == PK_LARGE ? VIEW_ANON : VIEW_NONE;
    }
    }
    return VIEW_OTHER;
}

long shadow_revoke_delta(uintptr_t first, uintptr_t last) {
    uint64_t c_first = 0, c_last = 0, c_left = 0, c_right = 0;
    enum page_view v_first = page_view(first, &c_first);
    enum page_view v_last = page_view(last, &c_last);
    enum page_view v_left = page_view(first - OSCAR_PAGE, &c_left);
    enum page_view v_right = page_view(last + OSCAR_PAGE, &c_right);
    /* Is the range joined to its neighbour in one kernel mapping today? */
    bool joined_left = v_left == v_first &&
                       (v_first == VIEW_ANON || (v_first == VIEW_SHARED && c_left + 1 == c_first));
    bool joined_right = v_right == v_last &&
                        (v_last == VIEW_ANON || (v_last == VIEW_SHARED && c_last + 1 == c_right));
    long none_left = v_left == VIEW_NONE, none_right = v_right == VIEW_NONE;
    if (joined_left && joined_right)
        return 2;
    if (joined_left)
        return 1 - none_right;
    if (joined_right)
        return 1 - none_left;
    return -none_left - none_right;
}

/* Map one group of consecutive canonical pages [first, first+n) with a claimed slot each
 * and push the new shadows on c's list. Returns 0 or an errno. */
static int map_group(struct thread_cache *tc, struct class_cache *c, unsigned cls,
                     uint64_t first, const int *slots, unsigned n) {
    uintptr_t sh = thread_take_shadow(tc, n);
    if (!sh)
        return ENOMEM;
    int err = os_map_shadow((void *)sh, (size_t)n << OSCAR_PAGE_SHIFT, oscar_canon.fd,
                            first << OSCAR_PAGE_SHIFT, true);
    if (err == ENOMEM) {
        maplimit_on_enomem();
        err = os_map_shadow((void *)sh, (size_t)n << OSCAR_PAGE_SHIFT, oscar_canon.fd,
                            first << OSCAR_PAGE_SHIFT, true);
    }
    if (err)
        return err;
    stats_add(STAT_RUNS_MAPPED, 1);
    stats_add(STAT_SHADOWS_CREATED, n);
    maplimit_add(1);
    /* Push in descending order so the fast path hands out ascending addresses. */
    for (unsigned k = n; k-- > 0;) {
        uintptr_t page = sh + ((uintptr_t)k << OSCAR_PAGE_SHIFT);
        region_store(page, entry_small(PK_READY, first + k, cls, (unsigned)slots[k], 0));
        c->objs[c->count++] = page + (uintptr_t)slots[k] * class_size[cls];
    }
    return 0;
}

/* Build runs from the active span until c has ready shadows. */
static bool refill(struct thread_cache *tc, unsigned cls) {
    struct class_cache *c = &tc->cls[cls];
    unsigned pages = oscar_canon.span_pages;
    int slots[OSCAR_MAX_RUN_PAGES];
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
            slots[i] = canon_claim_slot(first + i);
            claimed += slots[i] >= 0;
        }
        if (!claimed) {
            canon_span_detach(s);
            c->active = NULL;
            continue;
        }
        atomic_fetch_add(&s->claimed, claimed);
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

void *small_alloc_slow(unsigned cls, size_t size) {
    struct thread_cache *tc = thread_attach();
    if (tc)
        return alloc_in(tc, cls, size);
    thread_fallback_lock();
    void *p = alloc_in(thread_fallback, cls, size);
    thread_fallback_unlock();
    return p;
}

static void quarantine_object(uintptr_t page) {
    if (!quarantine_push(page))
        return; /* list full: the object simply stays quarantined */
}

bool small_free(uintptr_t a, uint64_t e) {
    uintptr_t page = a & ~(OSCAR_PAGE - 1);
    _Atomic uint64_t *ep = region_entry(page);
    long delta = shadow_revoke_delta(page, page);
    if (maplimit_defer(delta)) {
        if (!atomic_compare_exchange_strong(ep, &e, entry_with_kind(e, PK_QUARANTINED)))
            return false;
        quarantine_object(page);
        return true;
    }
    if (!atomic_compare_exchange_strong(ep, &e, entry_with_kind(e, PK_SMALL_FREED)))
        return false;
    int err = os_revoke((void *)page, OSCAR_PAGE);
    if (err) {
        /* Cannot split the mapping: keep the object quarantined (never reused). */
        maplimit_on_enomem();
        region_store(page, entry_with_kind(e, PK_QUARANTINED));
        quarantine_object(page);
        return true;
    }
    maplimit_add(delta);
    stats_add(STAT_SHADOWS_REVOKED, 1);
    canon_release_slot(entry_canon(e), entry_slot(e));
    return true;
}

bool small_revoke_quarantined(uintptr_t page) {
    uint64_t e = region_load(page);
    if (entry_kind(e) != PK_QUARANTINED)
        return true; /* not ours any more (cannot happen; drop it) */
    long delta = shadow_revoke_delta(page, page);
    if (maplimit_defer(delta))
        return false;
    region_store(page, entry_with_kind(e, PK_SMALL_FREED));
    if (os_revoke((void *)page, OSCAR_PAGE) != 0) {
        region_store(page, e);
        return false;
    }
    maplimit_add(delta);
    stats_add(STAT_SHADOWS_REVOKED, 1);
    canon_release_slot(entry_canon(e), entry_slot(e));
    return true;
}

void small_flush_thread(struct thread_cache *tc) {
    for (unsigned cls = 0; cls < NUM_CLASSES; cls++) {
        struct class_cache *c = &tc->cls[cls];
        /* Ready shadows were never handed out: revoke them, runs of pages at a time. */
        for (uint32_t i = 0; i < c->count;) {
            uintptr_t first = c->objs[i] & ~(OSCAR_PAGE - 1), last = first;
            uint32_t j = i + 1;
            while (j < c->count && (c->objs[j] & ~(OSCAR_PAGE - 1)) == last - OSCAR_PAGE) {
                last -= OSCAR_PAGE;
                j++;
            }
            uintptr_t lo = last, hi = first; /* objs run downwards within a group */
            long delta = shadow_revoke_delta(lo, hi);
            uint64_t entries[OSCAR_MAX_RUN_PAGES];
            uint32_t n = j - i;
            for (uint32_t k = 0; k < n; k++) {
                entries[k] = region_load(c->objs[i + k]);
                region_store(c->objs[i + k], 0); /* PK_NONE: never handed out */
            }
            if (os_revoke((void *)lo, hi - lo + OSCAR_PAGE) == 0) {
                maplimit_add(delta);
                for (uint32_t k = 0; k < n; k++)
                    canon_release_slot(entry_canon(entries[k]), entry_slot(entries[k]));
            }
            /* On failure the pages stay mapped but unreachable: their slots are lost. */
            i = j;
        }
        c->count = 0;
        if (c->active) {
            canon_span_detach(c->active);
            c->active = NULL;
        }
    }
}
