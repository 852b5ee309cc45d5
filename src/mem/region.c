/* region: see region.h. */
#include "mem/region.h"
#include "base/options.h"
#include "os/os.h"

/* The reclaim sweep's calls (heap/reclaim.c registers them at init, before the first
 * region_take). */
static struct region_hooks hooks;

void region_set_hooks(const struct region_hooks *h) { hooks = *h; }

struct region oscar_region;

int region_init(void) {
    size_t size = (size_t)options_int(OPT_VA_GIB) << 30;
    int err = 0;
    for (; size >= (1UL << 30); size >>= 1) {
        /* Over-reserve by 2 MiB so the base can be aligned: runs then start on 2 MiB
         * boundaries, which keeps page-table pages from being shared between regions. */
        void *p = os_reserve(size + (2UL << 20), &err);
        if (!p)
            continue;
        size_t pages = size >> OSCAR_PAGE_SHIFT;
        void *table = os_alloc_meta(pages * sizeof(uint64_t), &err);
        if (!table) {
            os_unmap(p, size + (2UL << 20));
            continue;
        }
        oscar_region.base = align_up((uintptr_t)p, 2UL << 20);
        oscar_region.end = oscar_region.base + size;
        oscar_region.table = table;
        atomic_store(&oscar_region.bump, oscar_region.base);
        return 0;
    }
    return err ? err : 12;
}

uintptr_t region_take(size_t len, size_t align) {
    uintptr_t cur = atomic_load_explicit(&oscar_region.bump, memory_order_relaxed);
    for (;;) {
        uintptr_t start = align_up(cur, align < OSCAR_PAGE ? OSCAR_PAGE : align);
        if (start + len < start || start + len > oscar_region.end)
            return hooks.recycle ? hooks.recycle(len, align) : 0; /* used up: old addresses, or 0 */
        if (atomic_compare_exchange_weak_explicit(&oscar_region.bump, &cur, start + len,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            if (start > cur)
                region_abandon(cur, start); /* the alignment gap */
            if (hooks.note_bump)
                hooks.note_bump(start + len);
            return start;
        }
    }
}

static void abandon_pages(uintptr_t lo, uintptr_t hi) {
    for (uintptr_t p = lo; p < hi; p += OSCAR_PAGE)
        region_store(p, ENTRY_ABANDONED);
}

void region_abandon(uintptr_t lo, uintptr_t hi) {
    uintptr_t a = align_up(lo, REGION_CHUNK), b = hi & ~(REGION_CHUNK - 1);
    if (a >= b) {
        abandon_pages(lo, hi); /* less than two chunks: no whole one inside */
        return;
    }
    abandon_pages(lo, a);
    if (hooks.mark_never)
        hooks.mark_never(a, b);
    abandon_pages(b, hi);
}

uintptr_t region_used(void) {
    return atomic_load_explicit(&oscar_region.bump, memory_order_relaxed) - oscar_region.base;
}
