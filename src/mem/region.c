/* region: see region.h. */
#include "mem/region.h"
#include "base/options.h"
#include "base/fmt.h"
#include "base/messages.h"
#include "os/os.h"

#include <sys/resource.h>

/* Gaps of 64 MiB and more that will never be handed out (the alignment gap before a 4 GiB-
 * aligned window, the random gap after it): region_shrink gives them back too. */
#define BIG_GAP (64UL << 20)
#define MAX_BIG_GAPS 8

/* The region's own state (the region itself, oscar_region, is read by every layer above). */
static struct {
    /* The reclaim sweep's calls: set once by heap/reclaim.c at init (region_set_hooks),
     * before the first region_take. */
    struct region_hooks hooks;
    /* Address space Oscar may reserve under a finite RLIMIT_AS: three quarters of what the
     * process has left at initialisation (the heap is most of a program's memory; the
     * program keeps a quarter for its own mappings, stacks and libraries). UINT64_MAX when
     * unlimited. Set once by region_init. */
    uint64_t as_budget;
    /* A finite RLIMIT_DATA at initialisation (set once by region_init): the metadata sized by
     * the region counts toward it, touched or not. */
    bool data_limited;
    /* The end of what the bump pointer may hand out: the region's end (set by region_init),
     * lowered by region_shrink (maplimit.c's relief, one at a time); atomic, lock-free. */
    _Atomic uintptr_t region_top;
    /* The big gaps: an entry is claimed by fetch-add on n_big_gaps (note_gap, from
     * region_take, lock-free) and read by region_unused and region_shrink. */
    struct {
        uintptr_t lo, hi;
    } big_gaps[MAX_BIG_GAPS];
    _Atomic unsigned n_big_gaps;
    /* Hooks of the layers above that size a table by the region (report/stack.c's
     * records): set once at init (region_set_shrink_hook). */
    void (*shrink_hook)(uintptr_t new_end);
    /* The big gaps were given back: set once by the first region_shrink (test-and-set). */
    atomic_flag gaps_given_back;
} region_state = {.as_budget = UINT64_MAX, .gaps_given_back = ATOMIC_FLAG_INIT};

void region_set_hooks(const struct region_hooks *h) { region_state.hooks = *h; }

struct region oscar_region;

uint64_t region_as_budget(void) { return region_state.as_budget; }
bool region_sized_by_limit(void) {
    return region_state.as_budget != UINT64_MAX || region_state.data_limited;
}

/* After a window aligned to 1 GiB or more (packed.c's poison window, 4 GiB-aligned), the
 * bump pointer skips a random number of 2 MiB steps (up to 4 GiB): otherwise that alignment
 * would fix bits 21-31 of every address handed out after it. */
#define GAP_AFTER_ALIGN (1UL << 30)
#define GAP_MAX (4UL << 30)

#define MIN_REGION (64UL << 20)
#define HUGE_ALIGN (2UL << 20)

static void warn_limit(enum msg_id id, uint64_t limit, size_t size) {
    char buf[400];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, id);
    fmt_i64(&f, (int64_t)(limit >> 20));
    fmt_str(&f, " MiB: the heap's address space is ");
    fmt_i64(&f, (int64_t)(size >> 20));
    fmt_str(&f, " MiB (OSCAR_VA_GIB=");
    fmt_i64(&f, options_int(OPT_VA_GIB));
    fmt_str(&f, " GiB asked); addresses of freed objects are handed out again once it is "
                "used up\n");
    fmt_flush(&f, 2);
}

int region_init(void) {
    size_t size = (size_t)options_int(OPT_VA_GIB) << 30;
    uint64_t limit;
    bool limited = false;
    if (os_rlimit(RLIMIT_AS, &limit) == 0 && limit != UINT64_MAX) {
        uint64_t vm = 0;
        os_status_bytes("VmSize:", &vm);
        region_state.as_budget = limit > vm ? (limit - vm) / 4 * 3 : 0;
        /* The region and its page table, the canonical heap's window (a quarter of the
         * region: mem/canon.c) and the per-page metadata fit in the budget. */
        size_t cap = (size_t)(region_state.as_budget / 8 * 5) & ~(HUGE_ALIGN - 1);
        if (size > cap) {
            size = cap < MIN_REGION ? MIN_REGION : cap;
            limited = true;
        }
    }
    /* A finite RLIMIT_DATA counts every private read-write mapping, touched or not: the
     * region's page table (8 bytes a page) and the other per-page metadata sized from the
     * region (stack records, entries) get an eighth of it. */
    uint64_t data;
    enum msg_id said = MSG_AS_LIMIT;
    region_state.data_limited = os_rlimit(RLIMIT_DATA, &data) == 0 && data != UINT64_MAX;
    if (region_state.data_limited) {
        size_t cap = (size_t)(data / 8 / 16 * OSCAR_PAGE) & ~(HUGE_ALIGN - 1);
        if (size > cap) {
            size = cap < MIN_REGION ? MIN_REGION : cap;
            limited = true;
            said = MSG_DATA_LIMIT;
            limit = data;
        }
    }
    int err = 0;
    for (; size >= MIN_REGION; size = (size / 2) & ~(HUGE_ALIGN - 1)) {
        /* Placed by the kernel, then moved up by a random number of 2 MiB steps within
         * `slack` (up to 32 TiB, twice the region; a quarter of it under RLIMIT_AS, where the
         * slack counts until it is unmapped): heap addresses vary in bits 21 to 44 (runs are
         * 2 MiB-aligned), where the kernel's own placement of the region varies in about 19.
         * Over-reserved by 2 MiB so the base can be aligned: runs then start on 2 MiB
         * boundaries, which keeps page-table pages from being shared between regions. */
        size_t slack = limited || region_state.as_budget != UINT64_MAX ? size / 4 : 2 * size;
        slack = (slack < (32UL << 40) ? slack : 32UL << 40) & ~(HUGE_ALIGN - 1);
        size_t total = size + slack + HUGE_ALIGN;
        char *p = os_reserve(total, &err);
        if (!p && slack) {
            slack = 0;
            total = size + HUGE_ALIGN;
            p = os_reserve(total, &err);
        }
        if (!p)
            continue;
        size_t pages = size >> OSCAR_PAGE_SHIFT;
        void *table = os_alloc_meta(pages * sizeof(uint64_t), &err);
        if (!table) {
            os_unmap(p, total);
            continue;
        }
        uintptr_t off = slack ? (uintptr_t)(os_random() % (slack / HUGE_ALIGN + 1)) * HUGE_ALIGN : 0;
        uintptr_t base = align_up((uintptr_t)p, HUGE_ALIGN) + off;
        /* Only the region stays reserved (a finite RLIMIT_AS counts every reservation). */
        if (base > (uintptr_t)p)
            os_unmap(p, base - (uintptr_t)p);
        if ((uintptr_t)p + total > base + size)
            os_unmap((void *)(base + size), (uintptr_t)p + total - (base + size));
        oscar_region.base = base;
        oscar_region.end = base + size;
        oscar_region.table = table;
        atomic_store(&oscar_region.bump, oscar_region.base);
        atomic_store(&region_state.region_top, oscar_region.end);
        if (limited)
            warn_limit(said, limit, size);
        return 0;
    }
    return err ? err : 12;
}

static void note_gap(uintptr_t lo, uintptr_t hi) {
    if (hi - lo < BIG_GAP)
        return;
    unsigned i = atomic_fetch_add(&region_state.n_big_gaps, 1);
    if (i < MAX_BIG_GAPS) {
        region_state.big_gaps[i].lo = lo;
        region_state.big_gaps[i].hi = hi;
    }
}

/* Skip a random gap after `from` if nobody took addresses since. */
static void random_gap(uintptr_t from) {
    size_t room = (oscar_region.end - from) / 16, max = room < GAP_MAX ? room : GAP_MAX;
    uintptr_t gap = max >= HUGE_ALIGN ? (uintptr_t)(os_random() % (max / HUGE_ALIGN)) * HUGE_ALIGN : 0;
    uintptr_t cur = from;
    if (gap && atomic_compare_exchange_strong(&oscar_region.bump, &cur, from + gap)) {
        region_abandon(from, from + gap);
        note_gap(from, from + gap);
        if (region_state.hooks.note_bump)
            region_state.hooks.note_bump(from + gap);
    }
}

uintptr_t region_take(size_t len, size_t align) {
    uintptr_t cur = atomic_load_explicit(&oscar_region.bump, memory_order_relaxed);
    for (;;) {
        uintptr_t start = align_up(cur, align < OSCAR_PAGE ? OSCAR_PAGE : align);
        uintptr_t end = atomic_load_explicit(&region_state.region_top, memory_order_relaxed);
        if (start + len < start || start + len > end)
            /* used up: old addresses, or 0 */
            return region_state.hooks.recycle ? region_state.hooks.recycle(len, align) : 0;
        if (atomic_compare_exchange_strong_explicit(&oscar_region.bump, &cur, start + len,
                                                    memory_order_seq_cst, memory_order_relaxed)) {
            /* region_shrink lowered the top meanwhile: these addresses are not ours. */
            if (start + len > atomic_load(&region_state.region_top))
                return 0;
            if (start > cur) {
                region_abandon(cur, start); /* the alignment gap */
                note_gap(cur, start);
            }
            if (region_state.hooks.note_bump)
                region_state.hooks.note_bump(start + len);
            if (align >= GAP_AFTER_ALIGN)
                random_gap(start + len);
            return start;
        }
    }
}

void region_set_shrink_hook(void (*hook)(uintptr_t new_end)) { region_state.shrink_hook = hook; }

uint64_t region_unused(void) {
    uintptr_t t = atomic_load(&region_state.region_top),
              b = align_up(atomic_load(&oscar_region.bump), HUGE_ALIGN);
    uint64_t gaps = 0;
    for (unsigned i = 0; i < atomic_load(&region_state.n_big_gaps) && i < MAX_BIG_GAPS; i++)
        gaps += region_state.big_gaps[i].hi - region_state.big_gaps[i].lo;
    return (t > b ? t - b : 0) + gaps;
}

void region_shrink(uint64_t keep) {
    /* The big gaps below the bump pointer first: they hold nothing and never will (a
     * mapping the kernel later places there is not ours; nothing of ours maps there). */
    if (!atomic_flag_test_and_set(&region_state.gaps_given_back)) {
        unsigned n = atomic_load(&region_state.n_big_gaps);
        for (unsigned i = 0; i < n && i < MAX_BIG_GAPS; i++) {
            uintptr_t lo = align_up(region_state.big_gaps[i].lo, REGION_CHUNK),
                      hi = region_state.big_gaps[i].hi & ~(REGION_CHUNK - 1);
            if (hi > lo)
                os_unmap((void *)lo, hi - lo);
        }
    }
    uintptr_t old = atomic_load(&region_state.region_top), t;
    do {
        uintptr_t b = align_up(atomic_load(&oscar_region.bump), HUGE_ALIGN);
        t = b + (keep & ~(HUGE_ALIGN - 1));
        if (t >= old)
            return;
        atomic_store(&region_state.region_top, t);
        /* A region_take that read the old top and moved the bump above t after this load
         * reads t after its move, and gives the addresses up. */
    } while (align_up(atomic_load(&oscar_region.bump), HUGE_ALIGN) > t);
    oscar_region.end = t;
    os_unmap((void *)t, old - t);
    /* The page table's entries for [t, old), whole pages of it. */
    uintptr_t lo = align_up((uintptr_t)&oscar_region.table[(t - oscar_region.base) >> OSCAR_PAGE_SHIFT], OSCAR_PAGE);
    uintptr_t hi = (uintptr_t)&oscar_region.table[(old - oscar_region.base) >> OSCAR_PAGE_SHIFT] & ~(OSCAR_PAGE - 1);
    if (hi > lo)
        os_unmap((void *)lo, hi - lo);
    if (region_state.shrink_hook)
        region_state.shrink_hook(t);
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
    if (region_state.hooks.mark_never)
        region_state.hooks.mark_never(a, b);
    abandon_pages(b, hi);
}

uintptr_t region_used(void) {
    return atomic_load_explicit(&oscar_region.bump, memory_order_relaxed) - oscar_region.base;
}

const char *page_kind_name(enum page_kind k) {
    static const char *const names[1 << ENTRY_KIND_BITS] = {
#define PAGE_KIND(id, value, name, what) [value] = name,
#include "mem/page_kinds.def"
#undef PAGE_KIND
    };
    return (unsigned)k < (1u << ENTRY_KIND_BITS) && names[k] ? names[k] : "?";
}
