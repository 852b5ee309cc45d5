/* sample: OSCAR_SAMPLE_RATE=N (protect mode) gives about one allocation in N a page of its
 * own, the object at the page's end and a guard page after it. free revokes the page, so a
 * later access to the object faults at once and is reported as a use-after-free with its
 * allocation and free stacks: protect mode makes a dangling pointer harmless, sampling makes
 * some of them seen, in production (GWP-ASan's idea on Oscar's revocation).
 *
 * The pages come from one reservation (SAMPLE_SLOTS pages and their guards) and a freed page
 * stays revoked: no slot is ever handed out twice (a dangling pointer to it keeps faulting).
 * When every slot has been used, sampling stops (stat sample_pool_full) and the program goes
 * on unsampled. Objects over a page, and aligned allocations, are never sampled. */
#ifndef OSCAR_SAMPLE_H
#define OSCAR_SAMPLE_H
#include "base/core.h"
#include "report/stack.h"

#define SAMPLE_SLOTS 16384

extern int64_t sample_rate;          /* OSCAR_SAMPLE_RATE; 0: off */
extern uintptr_t sample_lo, sample_hi; /* the reservation, [lo, hi); 0, 0 when off */

/* Reserve the pool; 0 or an errno (sampling then stays off). */
int sample_init(void);
static inline bool sample_owns(const void *p) {
    return (uintptr_t)p - sample_lo < sample_hi - sample_lo;
}
/* The number of allocations until the next sample (random, mean sample_rate). */
int64_t sample_interval(void);
/* A sampled object of size bytes (zeroed), or NULL (too big, the pool used up, no memory). */
void *sample_alloc(size_t size);
/* p is sample_owns: free it (revoke its page), or report a bad free (who: enum
 * report_caller) and abort. */
void sample_free(void *p, int who);
/* malloc_usable_size of a sampled object (a bad pointer is reported). */
size_t sample_usable_size(void *p, int who);
#endif
