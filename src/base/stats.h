/* stats: counters kept by the allocator, printed at exit (OSCAR_STATS=1) or written as JSON
 * (OSCAR_STATS_FILE). Slow-path events are global relaxed atomics; the malloc/free counts are
 * kept per thread (thread.c) and folded in here in batches, so the fast path has no shared
 * cache line. */
#ifndef OSCAR_STATS_H
#define OSCAR_STATS_H
#include <stdatomic.h>
#include <stdint.h>

enum stat_id {
#define STAT(id, name) STAT_##id,
#include "base/stats.def"
#undef STAT
    STAT_COUNT
};

/* Written by any thread with relaxed atomics (stats_add, stats_gauge_add), no lock. */
extern _Atomic uint64_t oscar_stats[STAT_COUNT];

static inline void stats_add(enum stat_id id, int64_t n) {
    atomic_fetch_add_explicit(&oscar_stats[id], (uint64_t)n, memory_order_relaxed);
}
/* Raise `peak` to at least `value`. */
void stats_raise_peak(enum stat_id peak, uint64_t value);
/* Add n to a gauge and keep its peak (a gauge below zero, folded early, is none). */
void stats_gauge_add(enum stat_id gauge, enum stat_id peak, int64_t n);
/* Fold one thread's local malloc/free counts into the globals. */
void stats_fold(uint64_t allocs, uint64_t frees, uint64_t small, uint64_t large,
                uint64_t reallocs);
/* The canonical heap's resident bytes (mem/canon.c registers it at init). */
void stats_set_resident_hook(int (*hook)(uint64_t *bytes));
/* Print / write the statistics as the settings ask. Called at exit. */
void stats_emit(void);
#endif
