/* deferred: see deferred.h. */
#include "heap/deferred.h"
#include "mem/maplimit.h"
#include "base/core.h"
#include "os/os.h"
#include "heap/small.h"
#include "base/stats.h"

#define QUARANTINE_CAPACITY (4UL << 20) /* entries; 32 MiB of address space, touched lazily */

static oscar_lock lock = OSCAR_LOCK_INIT(DEFERRED);
static uintptr_t *entries;
static size_t count;
static atomic_flag draining = ATOMIC_FLAG_INIT;

int deferred_init(void) {
    int err;
    entries = os_alloc_meta(QUARANTINE_CAPACITY * sizeof(uintptr_t), &err);
    if (!entries)
        return err;
    maplimit_set_relief_hook(deferred_drain);
    return 0;
}

bool deferred_push(uintptr_t page) {
    stats_add(STAT_DEFERRED_REVOCATIONS, 1);
    oscar_lock_acquire(&lock);
    bool ok = count < QUARANTINE_CAPACITY;
    if (ok)
        entries[count++] = page;
    oscar_lock_release(&lock);
    return ok;
}

void deferred_drain(void) {
    /* Revoking calls back into maplimit, which may call us: one drainer at a time. */
    if (atomic_flag_test_and_set(&draining))
        return;
    oscar_lock_acquire(&lock);
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        if (small_revoke_deferred(entries[i]))
            stats_add(STAT_DEFERRED_REVOCATIONS, -1);
        else
            entries[kept++] = entries[i];
    }
    count = kept;
    oscar_lock_release(&lock);
    atomic_flag_clear(&draining);
}

void deferred_lock(void) { oscar_lock_acquire(&lock); }
void deferred_unlock(void) { oscar_lock_release(&lock); }
