/* packed: see packed.h. */
#include "packed.h"
#include "canon.h"
#include "maplimit.h"
#include "os.h"
#include "region.h"
#include "mapview.h"
#include "stats.h"

bool packed_mode;
static uint64_t poison_word;

#define POISON_WINDOW (1UL << 20)

void packed_init(void) {
    uintptr_t w = region_take(POISON_WINDOW, OSCAR_PAGE);
    if (!w)
        return; /* no poison: freed objects keep their bytes (still never reused) */
    for (uintptr_t p = w; p < w + POISON_WINDOW; p += OSCAR_PAGE)
        region_store(p, entry_large(PK_POISON, 0));
    /* Mid-window, so the pointer plus or minus a field offset still lands inside. */
    poison_word = w + POISON_WINDOW / 2;
}

bool packed_refill(struct thread_cache *tc, unsigned cls) {
    struct class_cache *c = &tc->cls[cls];
    struct span *s = canon_span_acquire_packed(cls);
    if (!s)
        return false;
    unsigned pages = oscar_canon.span_pages;
    uint64_t first = canon_span_first_page(s);
    size_t len = (size_t)pages << OSCAR_PAGE_SHIFT;
    uintptr_t sh = thread_take_shadow(tc, pages);
    long delta = sh ? mapview_delta(sh, sh + len - OSCAR_PAGE, VIEW_SHARED, first) : 0;
    int err = sh ? os_map_shadow((void *)sh, len, oscar_canon.fd, first << OSCAR_PAGE_SHIFT, true)
                 : 12;
    if (err == 12 && sh) {
        maplimit_on_enomem();
        err = os_map_shadow((void *)sh, len, oscar_canon.fd, first << OSCAR_PAGE_SHIFT, true);
    }
    if (err) {
        /* Nothing was handed out: the span goes back whole. (Shadow addresses taken from
         * the slice stay unused: addresses are never handed out twice.) */
        canon_packed_release(s, atomic_load(&s->claimed));
        canon_span_release_memory(s);
        return false;
    }
    s->packed_shadow = sh;
    for (unsigned i = 0; i < pages; i++)
        region_store(sh + ((uintptr_t)i << OSCAR_PAGE_SHIFT),
                     entry_small(PK_PACKED, first + i, cls, 0, 0));
    maplimit_add(delta);
    stats_add(STAT_RUNS_MAPPED, 1);
    stats_add(STAT_SHADOWS_CREATED, pages);
    stats_add(STAT_PACKED_PAGES, pages);
    c->packed_next = sh;
    c->packed_end = sh + len;
    return true;
}

uintptr_t packed_take(struct class_cache *c, unsigned cls) {
    uintptr_t a = c->packed_next, page = a & ~(OSCAR_PAGE - 1);
    uintptr_t next = a + class_size[cls];
    if ((a - page) / class_size[cls] + 1 >= class_slots(cls))
        next = page + OSCAR_PAGE;
    if (next >= c->packed_end)
        next = c->packed_end = 0;
    c->packed_next = next;
    return a;
}

/* The slot a starts, or -1 when a is not the start of one. */
static int slot_of(uintptr_t a, uint64_t e) {
    unsigned size = class_size[entry_class(e)];
    uintptr_t off = a & (OSCAR_PAGE - 1);
    if (off % size || off / size >= class_slots(entry_class(e)))
        return -1;
    return (int)(off / size);
}

bool packed_is_live(uintptr_t a, uint64_t e) {
    int slot = slot_of(a, e);
    return slot >= 0 && !canon_slot_is_free(entry_canon(e), (unsigned)slot);
}

/* Every object of packed span s is freed: revoke its shadows at once, give its memory back.
 * If the kernel refuses, the span stays as it is (still never reused). */
static void span_done(struct span *s) {
    uintptr_t first = s->packed_shadow;
    uintptr_t last = first + ((uintptr_t)(oscar_canon.span_pages - 1) << OSCAR_PAGE_SHIFT);
    long delta = shadow_revoke_delta(first, last);
    if (os_revoke((void *)first, last - first + OSCAR_PAGE) != 0) {
        maplimit_on_enomem();
        return;
    }
    maplimit_add(delta);
    for (uintptr_t p = first; p <= last; p += OSCAR_PAGE) {
        uint64_t e = region_load(p);
        if (entry_kind(e) == PK_PACKED) {
            region_store(p, entry_with_kind(e, PK_PACKED_FREED));
            stats_add(STAT_SHADOWS_REVOKED, 1);
        }
    }
    canon_span_release_memory(s);
}

/* Every object on the packed shadow page is freed: revoke it unless that would cost a
 * mapping we cannot afford (then the whole span's revocation catches it later). */
static void page_done(uintptr_t page, uint64_t e) {
    long delta = shadow_revoke_delta(page, page);
    if (maplimit_defer(delta))
        return;
    region_store(page, entry_with_kind(e, PK_PACKED_FREED));
    if (os_revoke((void *)page, OSCAR_PAGE) != 0) {
        region_store(page, e);
        maplimit_on_enomem();
        return;
    }
    maplimit_add(delta);
    stats_add(STAT_SHADOWS_REVOKED, 1);
    /* Nothing can reach the canonical page now: give its memory back at once, so a
     * long-lived object pins one page, not its whole span. */
    os_punch_hole(oscar_canon.fd, entry_canon(e) << OSCAR_PAGE_SHIFT, OSCAR_PAGE);
}

static bool release_slot(uintptr_t a, uint64_t e, unsigned slot) {
    uint64_t canon = entry_canon(e);
    int r = canon_packed_free_slot(canon, slot);
    if (r < 0)
        return false;
    if (r > 0)
        page_done(a & ~(OSCAR_PAGE - 1), e);
    struct span *s = canon_span_of(canon);
    if (canon_packed_release(s, 1))
        span_done(s);
    return true;
}

bool packed_free(uintptr_t a, uint64_t e) {
    int slot = slot_of(a, e);
    if (slot < 0)
        return false;
    /* The slot stays readable until its whole page is freed: overwrite what the program
     * left there (secrets, function and vtable pointers) with pointers into the poison
     * window, so a dangling read learns nothing and a followed pointer faults. */
    if (poison_word) {
        uint64_t *w = (uint64_t *)a;
        for (unsigned i = 0; i < class_size[entry_class(e)] / 8; i++)
            w[i] = poison_word;
    }
    return release_slot(a, e, (unsigned)slot);
}
