/* deferred: see deferred.h. */
#include "heap/deferred.h"
#include "mem/maplimit.h"
#include "base/core.h"
#include "os/os.h"
#include "heap/small.h"
#include "base/stats.h"

#define QUARANTINE_CAPACITY (4UL << 20) /* entries; 32 MiB of address space, touched lazily */

/* The deferred pages' state. The lock is a leaf: nothing else is taken while it is held
 * (fork's prepare takes it after the pools' locks, which a drain's revocations take). */
static struct {
    oscar_lock lock;     /* guards list[cur][] and count (rank DEFERRED; fork holds it) */
    uintptr_t *list[2];  /* allocated once by deferred_init: the pages, and a drain's batch */
    unsigned cur;        /* the list pages go to (under lock); the other is the drainer's */
    size_t count;        /* under lock */
    atomic_flag draining; /* one drain at a time: test-and-set, never waited on */
} deferred_state = {.lock = OSCAR_LOCK_INIT(DEFERRED), .draining = ATOMIC_FLAG_INIT};

int deferred_init(void) {
    int err;
    for (int i = 0; i < 2; i++) {
        deferred_state.list[i] = os_alloc_meta(QUARANTINE_CAPACITY * sizeof(uintptr_t), &err);
        if (!deferred_state.list[i])
            return err;
    }
    maplimit_set_relief_hook(deferred_drain);
    return 0;
}

bool deferred_push(uintptr_t page) {
    stats_add(STAT_DEFERRED_REVOCATIONS, 1);
    oscar_lock_acquire(&deferred_state.lock);
    bool ok = deferred_state.count < QUARANTINE_CAPACITY;
    if (ok)
        deferred_state.list[deferred_state.cur][deferred_state.count++] = page;
    oscar_lock_release(&deferred_state.lock);
    return ok;
}

void deferred_drain(void) {
    /* Revoking calls back into maplimit, which may call us: one drainer at a time. The
     * pages are taken out under the lock (the lists swapped) and revoked without it: a
     * revocation gives the slot back to its size class's pool, whose lock ranks below this
     * one (the drain held this one then, and deadlocked with a fork's prepare, which holds
     * the pools' and waits for it: degraded_fork_threads under load). */
    if (atomic_flag_test_and_set(&deferred_state.draining))
        return;
    oscar_lock_acquire(&deferred_state.lock);
    uintptr_t *batch = deferred_state.list[deferred_state.cur];
    size_t n = deferred_state.count;
    deferred_state.cur ^= 1;
    deferred_state.count = 0;
    oscar_lock_release(&deferred_state.lock);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (small_revoke_deferred(batch[i]))
            stats_add(STAT_DEFERRED_REVOCATIONS, -1);
        else
            batch[kept++] = batch[i];
    }
    /* Those still waiting go back (pages pushed meanwhile may have filled the list: the rest
     * then stay unrevoked for good, as deferred_push says of a full list). */
    oscar_lock_acquire(&deferred_state.lock);
    uintptr_t *list = deferred_state.list[deferred_state.cur];
    for (size_t i = 0; i < kept && deferred_state.count < QUARANTINE_CAPACITY; i++)
        list[deferred_state.count++] = batch[i];
    oscar_lock_release(&deferred_state.lock);
    atomic_flag_clear(&deferred_state.draining);
}

void deferred_fork_child(void) {
    /* A drain that another thread of the parent was running: its batch stays unrevoked
     * here, never reused (safe); the next drain is this process's. */
    atomic_flag_clear(&deferred_state.draining);
}

void deferred_lock(void) { oscar_lock_acquire(&deferred_state.lock); }
void deferred_unlock(void) { oscar_lock_release(&deferred_state.lock); }
