/* stats: see stats.h. */
#include "base/stats.h"
#include "base/messages.h"
#include "base/fmt.h"
#include "base/options.h"
#include "os/os.h"

#include <errno.h>

_Atomic uint64_t oscar_stats[STAT_COUNT];

static const char *const stat_names[STAT_COUNT] = {
#define STAT(id, name) [STAT_##id] = name,
#include "base/stats.def"
#undef STAT
};

void stats_raise_peak(enum stat_id peak, uint64_t value) {
    uint64_t cur = atomic_load_explicit(&oscar_stats[peak], memory_order_relaxed);
    while (value > cur &&
           !atomic_compare_exchange_weak_explicit(&oscar_stats[peak], &cur, value,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

/* A gauge's counts are folded thread by thread: a thread that only frees may fold before the
 * one whose allocations it freed, and the gauge then dips below zero for a while. Such a
 * value is no peak (read unsigned it would be the largest of all). */
void stats_gauge_add(enum stat_id gauge, enum stat_id peak, int64_t n) {
    int64_t now = (int64_t)(atomic_fetch_add_explicit(&oscar_stats[gauge], (uint64_t)n,
                                                      memory_order_relaxed) +
                            (uint64_t)n);
    if (n > 0 && now > 0)
        stats_raise_peak(peak, (uint64_t)now);
}

void stats_fold(uint64_t allocs, uint64_t frees, uint64_t small, uint64_t large,
                uint64_t reallocs) {
    stats_add(STAT_ALLOCATIONS, (int64_t)allocs);
    stats_add(STAT_FREES, (int64_t)frees);
    stats_add(STAT_SMALL_ALLOCATIONS, (int64_t)small);
    stats_add(STAT_LARGE_ALLOCATIONS, (int64_t)large);
    stats_add(STAT_REALLOCS, (int64_t)reallocs);
    stats_gauge_add(STAT_LIVE_OBJECTS, STAT_PEAK_LIVE_OBJECTS, (int64_t)(allocs - frees));
}

/* The statistics' own state (the counters are oscar_stats, above: atomic, relaxed). */
static struct {
    /* how many bytes the canonical heap holds resident: set once by mem/canon.c's init
     * (stats_set_resident_hook), before the first report reads it */
    int (*resident_hook)(uint64_t *bytes);
} stats_state;

void stats_set_resident_hook(int (*hook)(uint64_t *bytes)) { stats_state.resident_hook = hook; }

/* The system calls os/ counted, by kind, into their counters. */
static void stats_sample_syscalls(void) {
    static const enum stat_id kind_stat[OS_CALL_KINDS] = {
        [OS_CALL_MMAP] = STAT_SYSCALLS_MMAP,           [OS_CALL_MUNMAP] = STAT_SYSCALLS_MUNMAP,
        [OS_CALL_MREMAP] = STAT_SYSCALLS_MREMAP,       [OS_CALL_FALLOCATE] = STAT_SYSCALLS_FALLOCATE,
        [OS_CALL_MADVISE] = STAT_SYSCALLS_MADVISE,     [OS_CALL_OTHER] = STAT_SYSCALLS_OTHER,
    };
    uint64_t total = 0;
    for (int k = 0; k < OS_CALL_KINDS; k++) {
        uint64_t n = atomic_load_explicit(&os_calls[k], memory_order_relaxed);
        atomic_store_explicit(&oscar_stats[kind_stat[k]], n, memory_order_relaxed);
        total += n;
    }
    atomic_store_explicit(&oscar_stats[STAT_SYSCALLS_TOTAL], total, memory_order_relaxed);
}

/* Figures only the kernel knows, read when the statistics are printed. Physical memory
 * is counted once: the canonical heap's resident bytes (through the hook mem/canon.c
 * registers), not every shadow alias of it. */
static void stats_sample(void) {
    uint64_t a, b;
    stats_sample_syscalls();
    if (stats_state.resident_hook && stats_state.resident_hook(&a) == 0)
        atomic_store(&oscar_stats[STAT_CANONICAL_RESIDENT_BYTES], a);
    if (os_status_bytes("VmPTE:", &a) == 0)
        atomic_store(&oscar_stats[STAT_PAGE_TABLE_BYTES], a);
    if (os_page_faults(&a, &b) == 0) {
        atomic_store(&oscar_stats[STAT_PAGE_FAULTS_MINOR], a);
        atomic_store(&oscar_stats[STAT_PAGE_FAULTS_MAJOR], b);
    }
}

void stats_emit(void) {
    const char *path = options_string(OPT_STATS_FILE);
    if (!options_int(OPT_STATS) && !path)
        return;
    stats_sample();
    uint64_t v[STAT_COUNT];
    for (int i = 0; i < STAT_COUNT; i++)
        v[i] = atomic_load_explicit(&oscar_stats[i], memory_order_relaxed);
    char buf[8192];
    struct fmt f = FMT_INIT(buf);
    if (options_int(OPT_STATS)) {
        for (int i = 0; i < STAT_COUNT; i++) {
            fmt_str(&f, "oscar-stats: ");
            fmt_str(&f, stat_names[i]);
            fmt_char(&f, ' ');
            fmt_i64(&f, (int64_t)v[i]);
            fmt_char(&f, '\n');
        }
        fmt_flush(&f, 2);
    }
    if (path) {
        char name[4096];
        fmt_path_with_pid(path, name, sizeof name);
        int fd, err = *name ? os_open_write(name, &fd) : ENOENT;
        if (!err) {
            fmt_char(&f, '{');
            for (int i = 0; i < STAT_COUNT; i++) {
                fmt_str(&f, i ? ", \"" : "\"");
                fmt_str(&f, stat_names[i]);
                fmt_str(&f, "\": ");
                fmt_i64(&f, (int64_t)v[i]);
            }
            fmt_str(&f, "}\n");
            err = os_write_all(fd, buf, f.len); /* (a full disk, /dev/full: said too) */
            f.len = 0;
            os_close(fd);
        }
        if (err) {
            msg_start(&f, MSG_STATS_FILE);
            fmt_str(&f, *name ? name : "(empty)");
            fmt_str(&f, ": errno ");
            fmt_i64(&f, err);
            fmt_char(&f, '\n');
            fmt_flush(&f, 2);
        }
    }
}
