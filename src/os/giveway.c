/* giveway: see giveway.h. */
#include "os/giveway.h"
#include "os/os.h"

void os_giveway_wait_begins(struct os_giveway *g) {
    atomic_fetch_add_explicit(&g->begun, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g->waiting, 1, memory_order_release);
}

void os_giveway_wait_ends(struct os_giveway *g) {
    atomic_fetch_sub_explicit(&g->waiting, 1, memory_order_release);
}

void os_giveway_yield(struct os_giveway *g) {
    if (!atomic_load_explicit(&g->waiting, memory_order_acquire))
        return;
    uint32_t begun = atomic_load_explicit(&g->begun, memory_order_relaxed);
    if (atomic_load_explicit(&g->stale_at, memory_order_relaxed) == begun + 1)
        return; /* (the same count timed out before: a wait that never ended) */
    for (uint64_t until = os_monotonic_ns() + OS_GIVEWAY_NS;
         atomic_load_explicit(&g->waiting, memory_order_acquire);) {
        if (os_monotonic_ns() >= until) {
            atomic_store_explicit(&g->stale_at, begun + 1, memory_order_relaxed);
            return;
        }
        os_yield();
    }
}

void os_giveway_fork_child(struct os_giveway *g) {
    atomic_store_explicit(&g->waiting, 0, memory_order_relaxed);
}
