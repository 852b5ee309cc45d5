/* sample: see sample.h.
 *
 * Slot i is the page at sample_lo + 2 i pages, its guard the page after it (left PROT_NONE
 * from the reservation). A slot's life: NEVER -> LIVE (its page mapped read-write, fresh and
 * zero) -> FREED (the page replaced by PROT_NONE again: its memory goes back to the system,
 * every access faults). Slots are taken in order by one atomic counter, so no lock. */
#include "heap/sample.h"
#include "base/options.h"
#include "base/stats.h"
#include "os/os.h"
#include "report/fault.h"
#include "report/report.h"

#include <errno.h>

enum { SLOT_NEVER = 0, SLOT_LIVE = 1, SLOT_FREED = 2 };

struct sample_slot {
    _Atomic uint32_t state;
    uint32_t size;          /* requested bytes */
    struct obj_record rec;  /* its allocation and free stacks */
};

int64_t sample_rate;           /* set once by sample_init, at init */
uintptr_t sample_lo, sample_hi; /* set once by sample_init, at init */
/* The sampled objects' state (per thread: rng, below, TLS). */
static struct {
    /* One slot per sampled object, allocated once by sample_init; a slot is claimed by
     * fetch-add on next_slot (never handed out again), its state moved by CAS. */
    struct sample_slot *slots;
    _Atomic size_t next_slot;
} sample_state;
static __thread uint64_t rng __attribute__((tls_model("initial-exec")));

#define SLOT_BYTES (2 * OSCAR_PAGE)

static inline size_t slot_of(uintptr_t a) { return (a - sample_lo) / SLOT_BYTES; }
static inline uintptr_t page_of(size_t i) { return sample_lo + i * SLOT_BYTES; }
/* The object sits at the end of its page: an overflow runs into the guard. */
static inline uintptr_t start_of(size_t i, size_t size) {
    return page_of(i) + OSCAR_PAGE - align_up(size ? size : 1, 16);
}

/* For reports (report.h's hooks). */
static struct object_info sample_describe(uintptr_t a) {
    struct object_info o = {.state = OBJ_NOT_OURS, .start = a};
    if (!sample_owns((void *)a))
        return o;
    size_t i = slot_of(a);
    uint32_t st = atomic_load_explicit(&sample_state.slots[i].state, memory_order_acquire);
    o.state = OBJ_NEVER; /* a guard page, or a slot never used */
    if ((st == SLOT_LIVE || st == SLOT_FREED) && a - page_of(i) < OSCAR_PAGE) {
        o.state = st == SLOT_LIVE ? OBJ_LIVE : OBJ_FREED;
        o.size = sample_state.slots[i].size;
        o.start = start_of(i, o.size);
    }
    return o;
}

static struct obj_record *sample_record(uintptr_t start) {
    return sample_owns((void *)start) ? &sample_state.slots[slot_of(start)].rec : NULL;
}

static bool sample_claims(uintptr_t a) { return sample_owns((void *)a); }

int sample_init(void) {
    sample_rate = options_int(OPT_SAMPLE_RATE);
    if (!sample_rate)
        return 0;
    int err = 0;
    void *lo = os_reserve((size_t)SAMPLE_SLOTS * SLOT_BYTES, &err);
    struct sample_slot *s = lo ? os_alloc_meta(SAMPLE_SLOTS * sizeof *s, &err) : NULL;
    if (!s || (err = stack_store_init()) != 0) {
        sample_rate = 0;
        return err ? err : ENOMEM;
    }
    sample_state.slots = s;
    report_set_describe_hook(sample_describe);
    report_set_record_hook(sample_record);
    fault_set_claim_hook(sample_claims);
    sample_lo = (uintptr_t)lo;
    sample_hi = sample_lo + (size_t)SAMPLE_SLOTS * SLOT_BYTES;
    return 0;
}

int64_t sample_interval(void) {
    if (!rng) /* (a thread's own seed: its TLS address and the time) */
        rng = ((uintptr_t)&rng * 0x9E3779B97F4A7C15ULL) ^ os_monotonic_ns() ^ 1;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return 1 + (int64_t)(rng % (uint64_t)(2 * sample_rate - 1)); /* mean: sample_rate */
}

void *sample_alloc(size_t size) {
    if (size > OSCAR_PAGE || !sample_state.slots)
        return NULL;
    size_t i = atomic_fetch_add_explicit(&sample_state.next_slot, 1, memory_order_relaxed);
    if (i >= SAMPLE_SLOTS) {
        if (i == SAMPLE_SLOTS)
            stats_add(STAT_SAMPLE_POOL_FULL, 1);
        return NULL;
    }
    if (os_map_private((void *)page_of(i), OSCAR_PAGE, false) != 0)
        return NULL; /* (the slot stays NEVER) */
    sample_state.slots[i].size = (uint32_t)size;
    stack_record_alloc(&sample_state.slots[i].rec);
    atomic_store_explicit(&sample_state.slots[i].state, SLOT_LIVE, memory_order_release);
    stats_add(STAT_SAMPLED_OBJECTS, 1);
    return (void *)start_of(i, size);
}

__attribute__((noreturn)) static void bad_pointer(uintptr_t a, int who) {
    report_bad_pointer(a, sample_describe(a), (enum report_caller)who);
}

void sample_free(void *p, int who) {
    uintptr_t a = (uintptr_t)p;
    size_t i = slot_of(a);
    uint32_t st = atomic_load_explicit(&sample_state.slots[i].state, memory_order_acquire);
    if (st != SLOT_LIVE || a != start_of(i, sample_state.slots[i].size) ||
        !atomic_compare_exchange_strong(&sample_state.slots[i].state, &st, SLOT_FREED))
        bad_pointer(a, who); /* (a double free: the exchange lets only one free through) */
    stack_record_free(&sample_state.slots[i].rec);
    os_revoke((void *)page_of(i), OSCAR_PAGE);
}

size_t sample_usable_size(void *p, int who) {
    uintptr_t a = (uintptr_t)p;
    size_t i = slot_of(a);
    uint32_t st = atomic_load_explicit(&sample_state.slots[i].state, memory_order_acquire);
    if (st != SLOT_LIVE || a != start_of(i, sample_state.slots[i].size))
        bad_pointer(a, who);
    return align_up(sample_state.slots[i].size ? sample_state.slots[i].size : 1, 16);
}
