/* deferred: see deferred.h. */
#include "heap/deferred.h"
#include "mem/maplimit.h"
#include "base/core.h"
#include "os/os.h"
#include "heap/small.h"
#include "base/stats.h"

#define QUARANTINE_CAPACITY (4UL << 20) /* entries; 32 MiB of address space, touched lazily */

/* The deferred pages' state. */
static struct {
    oscar_lock lock;   /* guards entries[] and count (rank DEFERRED; fork holds it) */
    uintptr_t *entries; /* allocated once by deferred_init; the pages, under lock */
    size_t count;       /* under lock */
    atomic_flag draining; /* one drain at a time: test-and-set, never waited on */
} deferred_state = {.lock = OSCAR_LOCK_INIT(DEFERRED), .draining = ATOMIC_FLAG_INIT};

int deferred_init(void) {
    int err;
    deferred_state.entries = os_alloc_meta(QUARANTINE_CAPACITY * sizeof(uintptr_t), &err);
    if (!deferred_state.entries)
        return err;
    maplimit_set_relief_hook(deferred_drain);
    return 0;
}

bool deferred_push(uintptr_t page) {
    stats_add(STAT_DEFERRED_REVOCATIONS, 1);
    oscar_lock_acquire(&deferred_state.lock);
    bool ok = deferred_state.count < QUARANTINE_CAPACITY;
    if (ok)
        deferred_state.entries[deferred_state.count++] = page;
    oscar_lock_release(&deferred_state.lock);
    return ok;
}

void deferred_drain(void) {
    /* Revoking calls back into maplimit, which may call us: one drainer at a time. */
    if (atomic_flag_test_and_set(&deferred_state.draining))
        return;
    oscar_lock_acquire(&deferred_state.lock);
    size_t kept = 0;
    for (size_t i = 0; i < deferred_state.count; i++) {
        if (small_revoke_deferred(deferred_state.entries[i]))
            stats_add(STAT_DEFERRED_REVOCATIONS, -1);
        else
            deferred_state.entries[kept++] = deferred_state.entries[i];
    }
    deferred_state.count = kept;
    oscar_lock_release(&deferred_state.lock);
    atomic_flag_clear(&deferred_state.draining);
}

void deferred_lock(void) { oscar_lock_acquire(&deferred_state.lock); }
void deferred_unlock(void) { oscar_lock_release(&deferred_state.lock); }
