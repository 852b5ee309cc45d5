/* fork: the canonical heap is MAP_SHARED, so a forked child would share every small object
 * with its parent. Before fork we copy the memfd in the kernel (holes stay holes); in the
 * child we remap every run of shadows onto the copy, one mmap per kernel mapping (runs of
 * consecutive canonical pages at consecutive addresses), not one per object.
 *
 * Lock order (prepare takes them top to bottom, parent and child release bottom to top):
 *   1. thread registry, 2. fallback cache, 3. class pools in class order, 4. empty-span
 *   pool, 5. packed reuse pools in class order, 6. quarantine, 7. kept large pages,
 *   8. the reclaim sweep (reclaim.h).
 * vfork and posix_spawn run no atfork handlers and need none: the child only execs. */
#include "export/fork.h"
#include "heap/keep.h"
#include "export/api.h"
#include "mem/canon.h"
#include "os/os.h"
#include "heap/quarantine.h"
#include "heap/reclaim.h"
#include "mem/region.h"
#include "report/report.h"
#include "report/stack.h"
#include "base/stats.h"
#include "heap/thread.h"

#include <errno.h>
#include <pthread.h>

static int child_fd = -1;
static int copy_err;

static void prepare(void) {
    api_fork_prepare(); /* first: its operations in flight may take the locks below */
    thread_lock_registry();
    canon_lock_all();
    quarantine_lock();
    keep_lock();
    reclaim_lock();
    copy_err = canon_copy_for_child(&child_fd);
}

static void parent(void) {
    if (!copy_err)
        os_close(child_fd);
    child_fd = -1;
    reclaim_unlock();
    keep_unlock();
    quarantine_unlock();
    canon_unlock_all();
    thread_unlock_registry();
    api_fork_parent();
}

static bool maps_canonical(uint64_t e) {
    enum page_kind k = entry_kind(e);
    return k == PK_READY || k == PK_SMALL || k == PK_QUARANTINED || k == PK_PACKED ||
           k == PK_SMALL_GUARDED || k == PK_PACKED_GUARDED;
}

static bool guarded(uintptr_t p) {
    enum page_kind k = entry_kind(region_load(p));
    return k == PK_SMALL_GUARDED || k == PK_PACKED_GUARDED;
}

/* Remapping a run clears its guard markers: put them back, a stretch at a time. */
static void reguard(uintptr_t p, uintptr_t q) {
    while (p < q) {
        if (!guarded(p)) {
            p += OSCAR_PAGE;
            continue;
        }
        uintptr_t r = p + OSCAR_PAGE;
        while (r < q && guarded(r))
            r += OSCAR_PAGE;
        if (os_guard((void *)p, r - p) != 0)
            report_fatal("fork: cannot revoke freed objects in the child", ENOMEM);
        p = r;
    }
}

static void child(void) {
    if (copy_err)
        report_fatal("fork: cannot copy the canonical heap for the child", copy_err);
    uintptr_t end = oscar_region.base + region_used();
    for (uintptr_t p = oscar_region.base; p < end;) {
        uint64_t e = region_load(p);
        if (!maps_canonical(e)) {
            p = reclaim_next_page(p);
            continue;
        }
        uintptr_t q = p + OSCAR_PAGE;
        uint64_t canon = entry_canon(e), next = canon + 1;
        while (q < end) {
            uint64_t f = region_load(q);
            if (!maps_canonical(f) || entry_canon(f) != next)
                break;
            next++;
            q += OSCAR_PAGE;
        }
        int err = os_map_shadow((void *)p, q - p, child_fd, canon << OSCAR_PAGE_SHIFT, 0);
        if (err)
            report_fatal("fork: cannot remap the heap in the child", err);
        reguard(p, q);
        p = q;
    }
    api_fork_child(); /* custom-allocator arenas and views (api.h) */
    os_close(oscar_canon.fd);
    oscar_canon.fd = child_fd;
    child_fd = -1;
    stats_add(STAT_FORKS, 1);
    stack_after_fork();
    thread_after_fork_child();
    keep_after_fork_child();
    reclaim_unlock();
    quarantine_unlock();
    canon_unlock_all();
    thread_unlock_registry();
}

void fork_init(void) { pthread_atfork(prepare, parent, child); }
