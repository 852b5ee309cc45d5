/* alloc: initialisation and the dispatch between small and large objects. */
#define _GNU_SOURCE
#include "modes/alloc.h"
#include "modes/protect.h"
#include "modes/protect_reports.h"
#include "modes/off.h"
#include "mem/canon.h"
#include "report/fault.h"
#include "heap/keep.h"
#include "heap/kinds.h"
#include "heap/large.h"
#include "mem/maplimit.h"
#include "heap/object.h"
#include "modes/foreign.h"
#include "base/options.h"
#include "os/os.h"
#include "os/nopark.h"
#include "os/filters.h"
#include "os/procroot.h"
#include "base/messages.h"
#include "base/fmt.h"
#include "heap/packed.h"
#include "heap/deferred.h"
#include "heap/reclaim.h"
#include "scan/recycle.h"
#include "scan/world.h"
#include "heap/views.h"
#include "mem/region.h"
#include "report/report.h"
#include "base/size_class.h"
#include "heap/small.h"
#include "report/stack.h"
#include "base/stats.h"
#include "heap/thread.h"

#include <errno.h>
#include <string.h>

extern char **environ;

/* The strict and fast modes' state. */
static struct {
    oscar_lock init_lock; /* one oscar_init at a time (rank INIT) */
    /* OSCAR_ALLOC_DEALLOC_MISMATCH, OSCAR_NEW_DELETE_TYPE_MISMATCH: set once by oscar_init,
     * under init_lock, before oscar_init_state is 2; read by free without a lock. */
    bool check_kind, check_size;
} alloc_state = {.init_lock = OSCAR_LOCK_INIT(INIT)};

/* os/filters.h's hook: the first call of Oscar's that the program's seccomp filter would
 * have killed for (any thread, any lock held: formats on the stack and writes). */
static void warn_filter_refused(long nr) {
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_SECCOMP_REFUSED);
    fmt_i64(&f, nr);
    fmt_str(&f, ": Oscar goes on without it and without every later call the filter would "
                "stop (protect mode: freed memory is handed out again only by marks that can "
                "still run)\n");
    fmt_flush(&f, 2);
}

/* Strict and fast modes' reservations and tables. false: one could not be made, and Oscar is
 * off (modes/off.h): the tables made are unmapped (os_meta_log), the reservations without
 * memory (the region's, the canonical heap's window: no object lies in them) stay. */
static bool shadow_init(void) {
    if (!options_int(OPT_GUARDS))
        os_guards_disable();
    os_nopark_spin_ns = (uint64_t)options_int(OPT_TEST_REVOKE_SPIN_US) * 1000;
    packed_mode = options_int(OPT_MODE) == 1;
    int err;
    world_reserve(); /* (before the reservations sized by RLIMIT_AS: scan/world.h) */
    os_meta_log(true);
    if ((err = region_init()) != 0) {
        os_meta_log_release();
        off_enter("cannot reserve address space for shadow pages (a smaller OSCAR_VA_GIB may "
                  "fit)", err);
        return false;
    }
    object_register_hooks(); /* (reports name objects from here on) */
    views_register_hooks();
    reclaim_init(); /* (before the first region_take: alignment gaps are marked in it) */
    recycle_init(); /* (recycled addresses are proven unreferenced first) */
    packed_init();
    const char *failed = NULL;
    if ((err = canon_init()) != 0)
        failed = "cannot create the canonical heap (memfd)";
    else if (kinds_init() == 0) { /* (else no mismatch is reported: not worth stopping for) */
        alloc_state.check_kind = options_int(OPT_ALLOC_DEALLOC_MISMATCH) != 0;
        alloc_state.check_size = options_int(OPT_NEW_DELETE_TYPE_MISMATCH) != 0;
    }
    if (!failed && (err = deferred_init()) != 0)
        failed = "cannot reserve the list of deferred revocations";
    if (!failed && (err = thread_init()) != 0)
        failed = "cannot set up per-thread caches";
    if (!failed && (err = stack_init()) != 0)
        failed = "cannot reserve the stack store";
    if (failed) {
        os_meta_log_release();
        off_enter(failed, err);
    } else {
        os_meta_log(false);
    }
    return !failed;
}

/* Runs on the first allocation of the process (often inside ld.so or libc start-up), so it
 * uses only system calls: nothing here may call malloc. */
void oscar_init(void) {
    if (atomic_load_explicit(&oscar_init_state, memory_order_acquire) >= 2)
        return;
    oscar_lock_acquire(&alloc_state.init_lock);
    if (atomic_load(&oscar_init_state) >= 2) {
        oscar_lock_release(&alloc_state.init_lock);
        return;
    }
    atomic_store(&oscar_init_state, 1);
    options_init(environ);
    os_filters_refused_hook = warn_filter_refused;
    world_test_park_spin_ns = (uint64_t)options_int(OPT_TEST_PARK_SPIN_US) * 1000;
    if (protect_select()) { /* OSCAR_MODE=protect: its own heap, none of the structures below */
        if (!off_now()) {
            os_proc_root_take(); /* (else marks cannot run once the program chroots) */
            protect_reports_init();
        }
        atomic_store_explicit(&oscar_init_state, off_now() ? 3 : 2, memory_order_release);
        oscar_lock_release(&alloc_state.init_lock);
        return;
    }
    if (off_for_limits() || !shadow_init()) { /* (Oscar off: modes/off.h) */
        atomic_store_explicit(&oscar_init_state, 3, memory_order_release);
        oscar_lock_release(&alloc_state.init_lock);
        return;
    }
    os_proc_root_take(); /* (the mapping count and reports read /proc/self) */
    maplimit_init();
    maplimit_set_stop_hooks(world_try_stop, world_resume);
    keep_init(); /* (after maplimit_init: it counts its mappings) */
    fault_init();
    if (options_int(OPT_STATS_SIGNAL))
        fault_init_stats_signal((int)options_int(OPT_STATS_SIGNAL));
    atomic_store_explicit(&oscar_init_state, 2, memory_order_release);
    oscar_lock_release(&alloc_state.init_lock);
}

__attribute__((destructor)) static void oscar_destructor(void) {
    if (atomic_load(&oscar_init_state) != 2 || off_now())
        return;
    if (protect_on())
        protect_fold_stats();
    else
        thread_fold_all_stats();
    stats_emit();
}

/* Requested bytes now live; per thread, folded into stats with the other counters. */
static void account_bytes(int64_t delta) {
    struct thread_cache *tc = oscar_tc;
    if (tc->state == TS_LIVE)
        tc->live_bytes += delta;
    else
        stats_gauge_add(STAT_LIVE_BYTES, STAT_PEAK_LIVE_BYTES, delta);
}

/* Remember who allocated p (not for packed objects: they share their page). */
static void *noted(void *p, size_t size) {
    if (!p)
        return p;
    uintptr_t page = (uintptr_t)p & ~(OSCAR_PAGE - 1);
    uint64_t e = region_load(page);
    if (entry_kind(e) == PK_PACKED) {
        account_bytes(class_size[entry_class(e)]); /* packed objects keep no size */
        return p;
    }
    account_bytes((int64_t)size);
    if (stack_depth)
        stack_note_alloc(page);
    return p;
}

/* The requested size the free of a live object (entry e) gives back. */
static size_t live_size(uint64_t e) {
    switch (entry_kind(e)) {
    case PK_SMALL:
        return entry_small_size(e);
    case PK_PACKED:
        return class_size[entry_class(e)];
    default:
        return entry_payload(e);
    }
}

/* The heap's slow paths return NULL until the allocator is initialised (the process's
 * first allocation, often inside ld.so): then initialise, and the caller tries once more.
 * False when there is nothing new to try. */
static bool initialised_now(void) {
    if (likely(atomic_load_explicit(&oscar_init_state, memory_order_acquire) == 2))
        return false;
    oscar_init();
    return atomic_load(&oscar_init_state) == 2;
}

static void *malloc_once(size_t size) {
    if (likely(size <= OSCAR_SMALL_MAX))
        return small_alloc(size_class_of(size), size);
    return large_alloc(size, OSCAR_PAGE);
}

static void *malloc_unnoted(size_t size) {
    void *p = malloc_once(size);
    if (unlikely(!p) && initialised_now())
        p = malloc_once(size);
    return p;
}

void *alloc_malloc(size_t size) {
    if (protect_on())
        return protect_malloc(size);
    if (unlikely(off_now()))
        return off_malloc(size);
    void *p = malloc_unnoted(size);
    if (unlikely(!p) && off_now())
        return off_malloc(size); /* (another thread's initialisation ended off meanwhile) */
    return noted(p, size);
}

void *alloc_calloc(size_t size) {
    if (protect_on())
        return protect_calloc(size);
    if (unlikely(off_now()))
        return off_calloc(size);
    if (size > OSCAR_SMALL_MAX) {
        void *p = large_alloc_zeroed(size);
        if (unlikely(!p) && initialised_now())
            p = large_alloc_zeroed(size);
        if (unlikely(!p) && off_now())
            return off_calloc(size); /* (as in alloc_malloc) */
        return noted(p, size);
    }
    void *p = alloc_malloc(size); /* (small slots are reused: zero them) */
    if (p)
        memset(p, 0, size);
    return p;
}

static void *aligned_once(size_t size, size_t align) {
    if (align <= OSCAR_MIN_ALIGN)
        return malloc_unnoted(size);
    if (size <= OSCAR_SMALL_MAX) {
        int cls = size_class_aligned(size, align);
        if (cls >= 0)
            return small_alloc((unsigned)cls, size);
        if (size > OSCAR_SMALL_MAX)
            size = OSCAR_SMALL_MAX + 1;
    }
    return large_alloc(size, align);
}

void *alloc_aligned(size_t size, size_t align) {
    if (protect_on())
        return protect_aligned(size, align);
    if (unlikely(off_now()))
        return off_aligned(size, align);
    void *p = aligned_once(size, align);
    if (unlikely(!p) && initialised_now())
        p = aligned_once(size, align);
    if (unlikely(!p) && off_now())
        return off_aligned(size, align); /* (as in alloc_malloc) */
    return noted(p, size);
}

static void count_free(void) {
    struct thread_cache *tc = oscar_tc;
    if (tc->state == TS_LIVE)
        tc->n_free++;
    else
        stats_fold(0, 1, 0, 0, 0);
}

/* The live object that starts exactly at p, or a report. Returns its page entry. */
static uint64_t live_entry_or_report(uintptr_t a, enum report_caller who) {
    if (region_contains(a)) {
        uint64_t e = region_load(a & ~(OSCAR_PAGE - 1));
        enum page_kind k = entry_kind(e);
        if (k == PK_SMALL &&
            (a & (OSCAR_PAGE - 1)) == (uintptr_t)entry_slot(e) * class_size[entry_class(e)])
            return e;
        if (k == PK_LARGE && (a & (OSCAR_PAGE - 1)) == 0)
            return e;
        if (k == PK_PACKED && packed_is_live(a, e))
            return e;
    }
    report_bad_pointer(a, object_describe(a), who);
}

/* Who allocated the live object at a (entry e), checked against the deallocation `as` (and a
 * sized delete's size), then forgotten: the object is being freed. */
static void check_and_forget_kind(uintptr_t a, uint64_t e, enum report_caller who,
                                  enum alloc_kind as, bool sized, size_t size, size_t align) {
    enum alloc_kind k = alloc_state.check_kind ? kinds_get(a, e) : as;
    if (k != as)
        report_kind_mismatch(a, object_describe(a), k, as, who);
    if (sized && alloc_state.check_size) {
        size_t want = 0;
        bool exact = true, bad = false;
        switch (entry_kind(e)) {
        case PK_SMALL:
            want = entry_small_size(e);
            bad = size != want;
            break;
        case PK_LARGE:
            want = entry_payload(e);
            bad = size != want;
            break;
        case PK_PACKED: /* (no requested size is kept: its class must fit) */
            want = class_size[entry_class(e)];
            exact = false;
            bad = size > want || (!align && size_class_of(size) != entry_class(e));
            break;
        default:
            break;
        }
        if (bad)
            report_size_mismatch(a, object_describe(a), want, size, exact);
    }
    if (alloc_state.check_kind && k != KIND_MALLOC)
        kinds_take(a, e);
}

/* Not Oscar's but glibc's own (modes/foreign.h): *usable is its room. */
static bool libcs(uintptr_t a, size_t *usable) {
    return unlikely(!region_contains(a)) && foreign_is_libcs((const void *)a, usable);
}

static void free_as(void *p, enum report_caller who, enum alloc_kind as, bool sized, size_t size,
                    size_t align) {
    uintptr_t a = (uintptr_t)p;
    size_t usable;
    if (libcs(a, &usable)) {
        foreign_free(p);
        return;
    }
    for (;;) {
        uint64_t e = live_entry_or_report(a, who);
        enum page_kind k = entry_kind(e);
        if ((as != KIND_MALLOC && alloc_state.check_kind) || (sized && alloc_state.check_size) ||
            atomic_load_explicit(&kinds_used, memory_order_relaxed))
            check_and_forget_kind(a, e, who, as, sized, size, align);
        if (stack_depth && k != PK_PACKED)
            stack_note_free(a & ~(OSCAR_PAGE - 1));
        bool done = k == PK_SMALL    ? small_free(a, e)
                    : k == PK_PACKED ? packed_free(a, e)
                                     : large_free(a, e);
        if (done) {
            account_bytes(-(int64_t)live_size(e));
            break;
        }
        /* The entry changed under us: another thread freed it too; look again. */
    }
    count_free();
}

void alloc_free(void *p, enum report_caller who) {
    if (protect_on()) {
        protect_free(p, who);
        return;
    }
    if (unlikely(off_now())) {
        off_free(p);
        return;
    }
    if (!p)
        return;
    free_as(p, who, KIND_MALLOC, false, 0, 0);
}

void alloc_delete(void *p, enum alloc_kind kind, bool sized, size_t size, size_t align) {
    if (protect_on()) {
        protect_delete(p, kind, sized, size);
        return;
    }
    if (unlikely(off_now())) {
        off_free(p);
        return;
    }
    if (!p)
        return;
    free_as(p, CALL_FREE, kind, sized, size, align);
}

void alloc_note_kind(void *p, enum alloc_kind kind) {
    if (protect_on()) {
        protect_note_kind(p, kind);
        return;
    }
    if (unlikely(off_now()))
        return;
    if (!p || !alloc_state.check_kind)
        return;
    uintptr_t a = (uintptr_t)p;
    kinds_set(a, region_load(a & ~(OSCAR_PAGE - 1)), kind);
}

int alloc_trim(void) {
    if (protect_on())
        return protect_trim();
    if (unlikely(off_now()))
        return 0;
    if (atomic_load_explicit(&oscar_init_state, memory_order_acquire) != 2)
        return 0;
    bool released = keep_trim() != 0;
    if (packed_trim())
        released = true;
    return released;
}

static size_t usable_of(uint64_t e) {
    if (entry_kind(e) == PK_SMALL || entry_kind(e) == PK_PACKED)
        return class_size[entry_class(e)];
    return large_len(entry_payload(e));
}

/* Does a small object of class cls keep its address when realloc'd to size? Yes in its
 * own class, and while it fits and uses more than a quarter of its slot (a realloc that
 * grew it left room). */
static bool fits_in_place(size_t size, unsigned cls) {
    return size <= OSCAR_SMALL_MAX &&
           (size_class_of(size) == cls || (size <= class_size[cls] && 4 * size > class_size[cls]));
}

#define MOVE_THRESHOLD (256UL << 10) /* grow large objects by moving pages from here on */

/* Are the pages of [a, a + len) all the large object's at a (room left by an earlier growth)?
 * Its last page says: a tail entry holds the distance to its object's first page. */
static bool has_room(uintptr_t a, size_t len) {
    uintptr_t last = a + len - OSCAR_PAGE;
    if (last == a)
        return true;
    if (!region_contains(last))
        return false;
    uint64_t f = region_load(last);
    return entry_kind(f) == PK_LARGE_TAIL && entry_payload(f) == (len >> OSCAR_PAGE_SHIFT) - 1;
}

void *alloc_realloc(void *p, size_t size) {
    if (protect_on())
        return protect_realloc(p, size);
    if (unlikely(off_now()))
        return off_realloc(p, size);
    if (!p)
        return alloc_malloc(size);
    uintptr_t a = (uintptr_t)p;
    size_t room;
    if (libcs(a, &room)) { /* glibc's: moved to Oscar, then given back to glibc */
        void *q = size ? alloc_malloc(size) : NULL;
        if (q)
            memcpy(q, p, room < size ? room : size);
        if (q || !size)
            foreign_free(p);
        return q;
    }
    uint64_t e = live_entry_or_report(a, CALL_REALLOC);
    if (atomic_load_explicit(&kinds_used, memory_order_relaxed))
        check_and_forget_kind(a, e, CALL_REALLOC, KIND_MALLOC, false, 0, 0);
    struct thread_cache *tc = oscar_tc;
    if (tc->state == TS_LIVE)
        tc->n_realloc++;
    if (size == 0) { /* glibc: realloc(p, 0) frees p and returns NULL */
        alloc_free(p, CALL_REALLOC);
        return NULL;
    }
    /* Same size class or same pages: keep the address, record the new size. */
    if (entry_kind(e) == PK_SMALL && fits_in_place(size, entry_class(e))) {
        if (atomic_compare_exchange_strong(region_entry(a), &e, entry_with_size(e, size))) {
            account_bytes((int64_t)size - (int64_t)entry_small_size(e));
            return p;
        }
        return alloc_realloc(p, size); /* raced with a free: report it */
    }
    if (entry_kind(e) == PK_PACKED && fits_in_place(size, entry_class(e)))
        return p; /* packed objects do not record their requested size */
    bool grow = entry_kind(e) == PK_LARGE && size > entry_payload(e); /* a large one */
    /* Same pages, growth into the room an earlier growth left (one entry says: issue 18,
     * defect 15, walking the room on every call made appends quadratic), or into the free
     * rest of the slab it was carved from (large.c): keep the address. */
    if (entry_kind(e) == PK_LARGE && size > OSCAR_SMALL_MAX && size <= LARGE_MAX &&
        (large_len(size) == large_len(entry_payload(e)) || (grow && has_room(a, large_len(size))) ||
         (grow && large_extend_in_slab(a, large_capacity(a, e), large_len(size))))) {
        if (atomic_compare_exchange_strong(region_entry(a), &e, entry_large(PK_LARGE, size))) {
            account_bytes((int64_t)size - (int64_t)entry_payload(e));
            return p;
        }
        return alloc_realloc(p, size);
    }
    if (grow && entry_payload(e) >= MOVE_THRESHOLD) {
        if (stack_depth)
            stack_note_free(a);
        void *q = large_grow_by_moving(a, e, size);
        if (q) {
            account_bytes((int64_t)size - (int64_t)entry_payload(e));
            if (stack_depth)
                stack_note_alloc((uintptr_t)q);
            return q;
        }
    }
    /* A growing object moves to at least twice its room, so a buffer grown by small
     * appends moves O(log n) times, not once per size class or page (each move costs a
     * new shadow and a revocation). Small objects keep their exact size in reports. */
    size_t old = usable_of(e), cap = entry_kind(e) == PK_LARGE ? large_capacity(a, e) : 0;
    void *q;
    if (size > old && size <= OSCAR_SMALL_MAX)
        q = noted(small_alloc(size_class_of(2 * old > size && 2 * old <= OSCAR_SMALL_MAX ? 2 * old : size),
                              size), size);
    else if (size > old && size <= LARGE_MAX)
        q = noted(large_alloc_room(size, large_growth_len(size, cap ? cap : old)), size);
    else
        q = alloc_malloc(size);
    if (!q)
        return NULL; /* errno is ENOMEM; p is untouched, as the standard requires */
    memcpy(q, p, old < size ? old : size);
    alloc_free(p, CALL_REALLOC);
    return q;
}

size_t alloc_usable_size(void *p) {
    if (protect_on())
        return protect_usable_size(p);
    if (unlikely(off_now()))
        return off_usable_size(p);
    if (!p)
        return 0;
    size_t room;
    if (libcs((uintptr_t)p, &room))
        return room;
    return usable_of(live_entry_or_report((uintptr_t)p, CALL_USABLE_SIZE));
}
