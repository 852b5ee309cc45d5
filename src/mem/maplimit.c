/* maplimit: see maplimit.h. */
#include "mem/maplimit.h"
#include "base/fmt.h"
#include "base/messages.h"
#include "base/core.h"
#include "base/options.h"
#include "mem/canon.h"
#include "mem/region.h"
#include "os/kept.h"
#include "os/os.h"
#include "base/stats.h"

#include <errno.h>
#include <sys/resource.h>

/* The mapping-count limit's state. */
static struct {
    /* Called when the count is below the soft limit again (heap/deferred.c revokes what it
     * deferred). Set once at init. */
    void (*relief_hook)(void);
    long max_map_count, soft_limit; /* set once by maplimit_init */
    /* The count of our mappings as predicted, and the count at which it is next recounted:
     * atomic, lock-free (maplimit_add from any thread; the recount stores both). */
    _Atomic long estimate, next_recount;
    /* Mappings added and removed (sum of |delta|) since the last recount: atomic, lock-free. */
    _Atomic long changes;
    /* degraded: set and cleared by the recount (one at a time: recounting); warned: set once
     * by the first warning. Both atomic. */
    atomic_int degraded, warned;
    atomic_flag recounting; /* a recount is running: taken with test-and-set, never waited on */
    atomic_int told_lowered; /* set once by the first "address space lowered" line (exchange) */
    /* RLIMIT_AS when last looked at (maplimit_init, then maplimit_fit_if_lowered's exchange;
     * UINT64_MAX: unlimited) */
    _Atomic uint64_t seen_as;
    /* /proc/self/maps, kept open (os/kept.h): opened by maplimit_init, read and opened again
     * only by the recount (holding `recounting`) and by maplimit_fork_child (one thread). */
    struct os_kept maps;
    /* Stop and resume the program's other threads, for opening /proc/self/maps again once
     * the program closed ours (scan/world.h's world_try_stop and world_resume). Set once at
     * init (maplimit_set_stop_hooks). */
    int (*stop)(void);
    void (*resume)(void);
} maplimit_state = {.max_map_count = 65530, .recounting = ATOMIC_FLAG_INIT,
                    .maps = OS_KEPT_INIT("/proc/self/maps")};

#define HYSTERESIS 1024
/* The predictions (mapview.h) miss some of the kernel's merges: a large object moved in from
 * the keep merges or not with its neighbours once its pages move out again, depending on
 * the kernel. So the estimate is recounted once this many mappings were added or removed
 * since the last count: a recount reads as many lines as there are mappings, so its cost
 * per change stays constant (a few per cent of the system calls that made the changes),
 * and the estimate never drifts by more than a small share of it. */
#define DRIFT_CHANGES(n) (64 + (n) / 16)
#define RECOUNT_STEP 512

/* The estimate can drift (mappings made by the program, merges we do not predict), so we
 * recount at half the distance to the soft limit each time: a handful of recounts (a few ms
 * each at 60,000 mappings) over a process's life, and never a surprise at the limit. */
static long next_check(long lines) {
    long half = (maplimit_state.soft_limit - lines) / 2;
    return lines + (half > RECOUNT_STEP ? half : RECOUNT_STEP);
}

static int count_maps(long *lines);

void maplimit_init(void) {
    long v;
    if (os_read_long("/proc/sys/vm/max_map_count", &v) == 0 && v > 0)
        maplimit_state.max_map_count = v;
    long reserve = options_int(OPT_MAP_RESERVE);
    maplimit_state.soft_limit = maplimit_state.max_map_count - reserve;
    if (maplimit_state.soft_limit < maplimit_state.max_map_count / 2)
        maplimit_state.soft_limit = maplimit_state.max_map_count / 2;
    uint64_t as;
    atomic_store(&maplimit_state.seen_as, os_rlimit(RLIMIT_AS, &as) == 0 ? as : UINT64_MAX);
    long lines = 0;
    count_maps(&lines);
    atomic_store(&maplimit_state.estimate, lines);
    atomic_store(&maplimit_state.next_recount, next_check(lines));
    atomic_store(&oscar_stats[STAT_MAPPINGS_ESTIMATE], (uint64_t)lines);
}

static void warn_once(long count) {
    if (atomic_exchange(&maplimit_state.warned, 1))
        return;
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_MAPPING_LIMIT);
    fmt_i64(&f, maplimit_state.max_map_count);
    fmt_str(&f, ", ");
    fmt_i64(&f, count);
    fmt_str(&f, " mappings in use): small objects now share shadow pages and freed ones are "
                "kept unrevoked, never reused; a use after free is caught once its page is "
                "empty; raise the limit with: sysctl -w vm.max_map_count=");
    fmt_i64(&f, maplimit_state.max_map_count * 4);
    fmt_char(&f, '\n');
    fmt_flush(&f, 2);
}

/* The count of the process's mappings. /proc/self/maps stays open (os/kept.h): an open
 * while the program runs would take the lowest free descriptor for a moment, and a thread of
 * the program that closed everything and opens one would get the next (lowest_descriptor).
 * If the program closed ours (closefrom), it is opened again with the program's threads
 * parked; where they cannot be (a stop under way, this thread's own: fork), not now. The
 * caller holds `recounting` (or is init, or a fork's child: one thread). */
static int count_maps(long *lines) {
    struct os_kept *k = &maplimit_state.maps;
    if (!os_kept_usable(k)) {
        int stopped = maplimit_state.stop ? maplimit_state.stop() : -ENOSYS;
        if (stopped != 0 && stopped != -ENOSYS) /* (no world to stop yet: init) */
            return EAGAIN;
        int err = os_kept_open(k);
        if (stopped == 0)
            maplimit_state.resume();
        if (err)
            return err;
    }
    return os_kept_count_lines(k, lines);
}

void maplimit_set_stop_hooks(int (*stop)(void), void (*resume)(void)) {
    maplimit_state.resume = resume;
    maplimit_state.stop = stop;
}

/* relieve: call the relief hook when below the soft limit (a drift recount, which comes
 * often, calls it only when degraded mode just ended). */
static void recount(bool relieve) {
    if (atomic_flag_test_and_set(&maplimit_state.recounting))
        return; /* another thread is counting */
    long lines;
    int was = atomic_load(&maplimit_state.degraded);
    if (count_maps(&lines) == 0) {
        stats_add(STAT_MAPPING_RECOUNTS, 1);
        atomic_store(&maplimit_state.changes, 0);
        atomic_store(&maplimit_state.estimate, lines);
        atomic_store(&oscar_stats[STAT_MAPPINGS_ESTIMATE], (uint64_t)lines);
        stats_raise_peak(STAT_PEAK_MAPPINGS_ESTIMATE, (uint64_t)lines);
        if (lines >= maplimit_state.soft_limit) {
            atomic_store(&maplimit_state.degraded, 1);
            atomic_store(&oscar_stats[STAT_MAPPING_LIMIT_DEGRADED], 1);
            warn_once(lines);
            atomic_store(&maplimit_state.next_recount, lines + RECOUNT_STEP);
        } else if (was && lines >= maplimit_state.soft_limit - HYSTERESIS) {
            atomic_store(&maplimit_state.next_recount, lines + RECOUNT_STEP);
        } else {
            atomic_store(&maplimit_state.degraded, 0);
            atomic_store(&maplimit_state.next_recount, next_check(lines));
        }
    } else {
        /* Not counted (the program's threads could not be parked to open the file again,
         * or no descriptor is left): the estimate stands, tried again a step later rather
         * than at the next change. */
        atomic_store(&maplimit_state.changes, 0);
        atomic_store(&maplimit_state.next_recount,
                     atomic_load(&maplimit_state.estimate) + RECOUNT_STEP);
    }
    atomic_flag_clear(&maplimit_state.recounting);
    if (!atomic_load(&maplimit_state.degraded) && maplimit_state.relief_hook && (relieve || was))
        maplimit_state.relief_hook();
}

void maplimit_set_relief_hook(void (*hook)(void)) { maplimit_state.relief_hook = hook; }

void maplimit_fork_child(void) {
    /* (The child is one thread: a recount the fork interrupted in another thread of the
     * parent will never clear its flag here.) */
    atomic_flag_clear(&maplimit_state.recounting);
    if (maplimit_state.maps.pid) /* (opened: strict and fast mode) */
        os_kept_open(&maplimit_state.maps);
}

void maplimit_add(long delta) {
    if (!delta)
        return;
    long now = atomic_fetch_add_explicit(&maplimit_state.estimate, delta, memory_order_relaxed) + delta;
    atomic_store_explicit(&oscar_stats[STAT_MAPPINGS_ESTIMATE], (uint64_t)now,
                          memory_order_relaxed);
    if (delta > 0)
        stats_raise_peak(STAT_PEAK_MAPPINGS_ESTIMATE, (uint64_t)now);
    long abs_delta = delta < 0 ? -delta : delta;
    long changed =
        atomic_fetch_add_explicit(&maplimit_state.changes, abs_delta, memory_order_relaxed) + abs_delta;
    if (now >= atomic_load_explicit(&maplimit_state.next_recount, memory_order_relaxed) ||
        (delta < 0 && atomic_load_explicit(&maplimit_state.degraded, memory_order_relaxed) &&
         now < maplimit_state.soft_limit - HYSTERESIS))
        recount(true);
    else if (changed >= DRIFT_CHANGES(now))
        recount(false);
}

bool maplimit_defer(long delta) {
    return delta > 0 && atomic_load_explicit(&maplimit_state.degraded, memory_order_relaxed);
}

bool maplimit_degraded(void) { return atomic_load_explicit(&maplimit_state.degraded, memory_order_relaxed); }

bool maplimit_plenty(void) {
    return atomic_load_explicit(&maplimit_state.estimate, memory_order_relaxed) < maplimit_state.soft_limit / 2;
}

/* The program lowered RLIMIT_AS below what Oscar reserved at initialisation (a shell's
 * `ulimit -v`): give back the never-used tops of the region and of the canonical heap, down
 * to a share of what is left, so that the program's own mappings and ours fit again. One
 * warning. True when something was given back. */
static bool fit_address_space_limit(void) {
    uint64_t limit, vm;
    if (os_rlimit(RLIMIT_AS, &limit) != 0 || limit == UINT64_MAX ||
        os_status_bytes("VmSize:", &vm) != 0 || vm + (64ULL << 20) < limit)
        return false;
    /* (with their metadata: 8 bytes of page table and 16 of stack records per region page,
     * about 40 bytes per canonical page) */
    uint64_t spare = region_unused() / 4096 * (4096 + 24) + canon_unused() / 4096 * (4096 + 40);
    if (spare < (64ULL << 20))
        return false;
    uint64_t rest = vm > spare ? vm - spare : 0, room = limit > rest ? (limit - rest) / 4 * 3 : 0;
    region_shrink(room / 8 * 5);
    canon_shrink(room / 8);
    if (!atomic_exchange(&maplimit_state.told_lowered, 1)) {
        char buf[256];
        struct fmt f = FMT_INIT(buf);
        msg_start(&f, MSG_AS_LOWERED);
        fmt_i64(&f, (int64_t)(limit >> 20));
        fmt_str(&f, " MiB: the heap's unused address space is given back; addresses of freed "
                    "objects are handed out again once the rest is used up\n");
        fmt_flush(&f, 2);
    }
    return true;
}

bool maplimit_fit_if_lowered(void) {
    uint64_t limit;
    if (os_rlimit(RLIMIT_AS, &limit) != 0)
        return false;
    uint64_t seen = atomic_exchange(&maplimit_state.seen_as, limit);
    return limit < seen && fit_address_space_limit();
}

void maplimit_on_enomem(void) {
    if (fit_address_space_limit())
        return;
    atomic_store(&maplimit_state.next_recount, 0);
    recount(true);
}
