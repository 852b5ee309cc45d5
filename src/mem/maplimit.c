/* maplimit: see maplimit.h. */
#include "mem/maplimit.h"
#include "base/fmt.h"
#include "base/core.h"
#include "base/options.h"
#include "os/os.h"
#include "base/stats.h"

/* Called when the count is below the soft limit again (heap/deferred.c revokes what it
 * deferred). Set once at init. */
static void (*relief_hook)(void);

static long max_map_count = 65530, soft_limit;
static _Atomic long estimate, next_recount;
static atomic_int degraded, warned;
static atomic_flag recounting = ATOMIC_FLAG_INIT;

#define HYSTERESIS 1024
#define RECOUNT_STEP 512

/* The estimate can drift (mappings made by the program, merges we do not predict), so we
 * recount at half the distance to the soft limit each time: a handful of recounts (a few ms
 * each at 60,000 mappings) over a process's life, and never a surprise at the limit. */
static long next_check(long lines) {
    long half = (soft_limit - lines) / 2;
    return lines + (half > RECOUNT_STEP ? half : RECOUNT_STEP);
}

void maplimit_init(void) {
    long v;
    if (os_read_long("/proc/sys/vm/max_map_count", &v) == 0 && v > 0)
        max_map_count = v;
    long reserve = options_int(OPT_MAP_RESERVE);
    soft_limit = max_map_count - reserve;
    if (soft_limit < max_map_count / 2)
        soft_limit = max_map_count / 2;
    long lines = 0;
    os_count_lines("/proc/self/maps", &lines);
    atomic_store(&estimate, lines);
    atomic_store(&next_recount, next_check(lines));
    atomic_store(&oscar_stats[STAT_MAPPINGS_ESTIMATE], (uint64_t)lines);
}

static void warn_once(long count) {
    if (atomic_exchange(&warned, 1))
        return;
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    fmt_str(&f, "oscar: warning: near the kernel mapping limit (vm.max_map_count=");
    fmt_i64(&f, max_map_count);
    fmt_str(&f, ", ");
    fmt_i64(&f, count);
    fmt_str(&f, " mappings in use): small objects now share shadow pages and freed ones are "
                "kept unrevoked, never reused; a use after free is caught once its page is "
                "empty; raise the limit with: sysctl -w vm.max_map_count=");
    fmt_i64(&f, max_map_count * 4);
    fmt_char(&f, '\n');
    fmt_flush(&f, 2);
}

static void recount(void) {
    if (atomic_flag_test_and_set(&recounting))
        return; /* another thread is counting */
    long lines;
    if (os_count_lines("/proc/self/maps", &lines) == 0) {
        stats_add(STAT_MAPPING_RECOUNTS, 1);
        atomic_store(&estimate, lines);
        atomic_store(&oscar_stats[STAT_MAPPINGS_ESTIMATE], (uint64_t)lines);
        stats_raise_peak(STAT_PEAK_MAPPINGS_ESTIMATE, (uint64_t)lines);
        int was = atomic_load(&degraded);
        if (lines >= soft_limit) {
            atomic_store(&degraded, 1);
            atomic_store(&oscar_stats[STAT_MAPPING_LIMIT_DEGRADED], 1);
            warn_once(lines);
            atomic_store(&next_recount, lines + RECOUNT_STEP);
        } else if (was && lines >= soft_limit - HYSTERESIS) {
            atomic_store(&next_recount, lines + RECOUNT_STEP);
        } else {
            atomic_store(&degraded, 0);
            atomic_store(&next_recount, next_check(lines));
        }
    }
    atomic_flag_clear(&recounting);
    if (!atomic_load(&degraded) && relief_hook)
        relief_hook();
}

void maplimit_set_relief_hook(void (*hook)(void)) { relief_hook = hook; }

void maplimit_add(long delta) {
    if (!delta)
        return;
    long now = atomic_fetch_add_explicit(&estimate, delta, memory_order_relaxed) + delta;
    atomic_store_explicit(&oscar_stats[STAT_MAPPINGS_ESTIMATE], (uint64_t)now,
                          memory_order_relaxed);
    if (delta > 0)
        stats_raise_peak(STAT_PEAK_MAPPINGS_ESTIMATE, (uint64_t)now);
    if (now >= atomic_load_explicit(&next_recount, memory_order_relaxed) ||
        (delta < 0 && atomic_load_explicit(&degraded, memory_order_relaxed) &&
         now < soft_limit - HYSTERESIS))
        recount();
}

bool maplimit_defer(long delta) {
    return delta > 0 && atomic_load_explicit(&degraded, memory_order_relaxed);
}

bool maplimit_degraded(void) { return atomic_load_explicit(&degraded, memory_order_relaxed); }

bool maplimit_plenty(void) {
    return atomic_load_explicit(&estimate, memory_order_relaxed) < soft_limit / 2;
}

void maplimit_on_enomem(void) {
    atomic_store(&next_recount, 0);
    recount();
}
