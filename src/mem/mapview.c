/* mapview: see mapview.h. */
#include "mem/mapview.h"
#include "mem/region.h"

static struct {
    /* Arena and view pages: the custom-allocator layer knows (heap/views.c registers it,
     * once, at its init). */
    enum page_view (*arena_view_hook)(uintptr_t page, uint64_t e, uint64_t *canon);
} mapview_state;

void mapview_set_arena_hook(enum page_view (*hook)(uintptr_t page, uint64_t e, uint64_t *canon)) {
    mapview_state.arena_view_hook = hook;
}

static enum page_view page_view(uintptr_t page, uint64_t *canon) {
    *canon = 0;
    if (!region_contains(page))
        return VIEW_OTHER;
    uint64_t e = region_load(page);
    switch (entry_kind(e)) {
    case PK_NONE:
    case PK_SMALL_FREED:
    case PK_LARGE_FREED:
    case PK_PACKED_FREED:
    case PK_POISON:
        return VIEW_NONE;
    case PK_READY:
    case PK_SMALL:
    case PK_DEFERRED:
    case PK_PACKED:
    case PK_SMALL_GUARDED:
    case PK_PACKED_GUARDED:
        *canon = entry_canon(e);
        return VIEW_SHARED;
    case PK_LARGE:
    case PK_LARGE_GUARDED:
        return VIEW_ANON;
    case PK_ARENA:
    case PK_VIEW:
        return mapview_state.arena_view_hook ? mapview_state.arena_view_hook(page, e, canon) : VIEW_OTHER;
    case PK_LARGE_TAIL: {
        uintptr_t head = page - (entry_payload(e) << OSCAR_PAGE_SHIFT);
        enum page_kind k = entry_kind(region_load(head));
        return k == PK_LARGE || k == PK_LARGE_GUARDED ? VIEW_ANON : VIEW_NONE;
    }
    }
    return VIEW_OTHER;
}

/* Are two neighbouring pages (a just below b) in one kernel mapping? */
static bool joined(enum page_view a, uint64_t ca, enum page_view b, uint64_t cb) {
    if (a != b || a == VIEW_OTHER)
        return false;
    return a != VIEW_SHARED || ca + 1 == cb;
}

long mapview_delta(uintptr_t first, uintptr_t last, enum page_view to, uint64_t canon) {
    /* Count the mappings that cover [first - 1 page, last + 1 page] before and after; a
     * mapping that reaches beyond that window is cut, never removed, so it counts once on
     * both sides. Inside the range, the new pages are all joined to each other. */
    uint64_t c, pc, lc;
    enum page_view left = page_view(first - OSCAR_PAGE, &pc), pv = left, v;
    lc = pc;
    long before = 1;
    for (uintptr_t p = first; p <= last + OSCAR_PAGE; p += OSCAR_PAGE) {
        v = page_view(p, &c);
        before += !joined(pv, pc, v, c);
        pv = v;
        pc = c;
    }
    uint64_t to_last = canon + ((last - first) >> OSCAR_PAGE_SHIFT);
    long after = 1 + !joined(left, lc, to, canon) + !joined(to, to_last, pv, pc);
    return after - before;
}

