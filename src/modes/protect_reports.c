/* protect_reports: see protect_reports.h. */
#include "modes/protect_reports.h"
#include "heap/protect_heap.h"
#include "report/fault.h"
#include "report/report.h"
#include "report/stack.h"

/* Protect mode's report hooks' state. */
static struct {
    /* The hooks these replace (heap/sample.c's, or NULL when sampling is off): set once by
     * protect_reports_init, at init, under the init lock; read by the hooks, lock-free. */
    report_describe_fn next_describe;
    fault_claim_fn next_claims;
} protect_reports_state;

/* Within a page below the heap's first page, where an object starts: the memory there is not
 * the heap's (the reservation's alignment slack, or nothing), so an access faults. */
static bool just_below_heap(uintptr_t a) {
    if (a >= ph.lo || ph.lo - a > OSCAR_PAGE)
        return false;
    struct object_info o = ph_describe(ph.lo);
    return o.state == OBJ_LIVE || o.state == OBJ_FREED;
}

/* (Signal-safe: ph_describe reads the page descriptors and slot words, no lock.) */
static struct object_info describe(uintptr_t a) {
    if (ph_contains(a))
        return ph_describe(a);
    if (just_below_heap(a))
        return (struct object_info){.state = OBJ_NEVER, .start = a};
    if (protect_reports_state.next_describe)
        return protect_reports_state.next_describe(a);
    return (struct object_info){.state = OBJ_NOT_OURS, .start = a};
}

static bool claims(uintptr_t a) {
    return ph_contains(a) || just_below_heap(a) ||
           (protect_reports_state.next_claims && protect_reports_state.next_claims(a));
}

void protect_reports_init(void) {
    stack_image_init();
    protect_reports_state.next_describe = report_set_describe_hook(describe);
    protect_reports_state.next_claims = fault_set_claim_hook(claims);
}
