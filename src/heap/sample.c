/* sample: see sample.h.
 *
 * Slot i is the page at sample_lo + 2 i pages, its guard the page after it. Slots are handed
 * out in order by one atomic counter, so no lock; chunk c holds slots [c, c + 1) *
 * SAMPLE_CHUNK_SLOTS. A chunk is made usable ("ready") ahead of time, by the thread that takes
 * the first slot of the chunk before it: with guard markers, one read-write mapping over the
 * chunk (it merges with the ready chunk below into one kernel mapping) and a guard marker on
 * each guard page (one process_madvise). A slot's life: handed out -> LIVE (its page fresh
 * and zero) -> FREED (a guard marker on its page, or, without guards, the page replaced by
 * PROT_NONE: its memory goes back to the system, every access faults) -> its chunk retired
 * once every slot of the chunk is done (freed, or skipped: the chunk was not ready, the
 * record still held by a live object). A slot is never handed out twice.
 *
 * A slot's record (state, size, stacks) lives in a ring of SAMPLE_RECORDS entries, at i %
 * SAMPLE_RECORDS, with the slot it belongs to: a later slot takes the entry over (unless its
 * object is still live: then that slot is skipped), and a fault on the older slot is still
 * reported as a use after free, without the size and stacks. */
#include "heap/sample.h"
#include "base/options.h"
#include "base/stats.h"
#include "os/os.h"
#include "report/fault.h"
#include "report/report.h"

#include <errno.h>
#include <sys/resource.h>

enum { SLOT_NEVER = 0, SLOT_CLAIMED = 1, SLOT_LIVE = 2, SLOT_FREED = 3 };

struct sample_record {
    _Atomic uint32_t state;
    uint32_t size;          /* requested bytes */
    _Atomic uint8_t kind;   /* enum alloc_kind operator new recorded (0: malloc's) */
    _Atomic uint64_t slot;  /* the slot this record belongs to (+ 1; 0: none yet) */
    struct obj_record rec;  /* its allocation and free stacks */
};

#define CHUNK_DONE_MASK 0xffffu /* chunk word: slots done (freed or skipped) */
#define CHUNK_READY (1u << 16)  /* chunk word: its pages may be handed out */
#define CHUNK_TAKEN (1u << 17)  /* chunk word: a thread is making it ready, or has */

int64_t sample_rate;           /* set once by sample_init, at init */
uintptr_t sample_lo, sample_hi; /* set once by sample_init, at init */
uintptr_t sample_reserved_lo, sample_reserved_hi;
/* The sampled objects' state (per thread: rng, below, TLS). */
static struct {
    /* The ring of records (SAMPLE_RECORDS), allocated once by sample_init; an entry is taken
     * by CAS of its state (NEVER or FREED -> CLAIMED), then published LIVE. */
    struct sample_record *records;
    /* One word per chunk (CHUNK_DONE_MASK, CHUNK_READY), allocated once by sample_init,
     * updated by atomic or/add. */
    _Atomic uint32_t *chunks;
    size_t nslots;              /* set once by sample_init */
    bool guards;                /* set once by sample_init: free installs a guard marker */
    _Atomic size_t next_slot;   /* the next slot to hand out: fetch-add */
    _Atomic int64_t live;       /* sampled objects live now: atomic add */
    _Atomic int64_t first_left; /* OSCAR_SAMPLE_FIRST's allocations not yet taken: atomic */
} sample_state;
static __thread uint64_t rng __attribute__((tls_model("initial-exec")));

#define SLOT_BYTES (2 * OSCAR_PAGE)
#define CHUNK_BYTES ((size_t)SAMPLE_CHUNK_SLOTS * SLOT_BYTES)

static inline size_t slot_of(uintptr_t a) { return (a - sample_lo) / SLOT_BYTES; }
static inline uintptr_t page_of(size_t i) { return sample_lo + i * SLOT_BYTES; }
static inline struct sample_record *record_of(size_t i) {
    return &sample_state.records[i % SAMPLE_RECORDS];
}
/* The object sits at the end of its page: an overflow runs into the guard. */
static inline uintptr_t start_of(size_t i, size_t size) {
    return page_of(i) + OSCAR_PAGE - align_up(size ? size : 1, 16);
}
/* Is slot i's record in the ring (not yet taken over by a later slot)? */
static inline bool record_is(const struct sample_record *r, size_t i) {
    return atomic_load_explicit(&r->slot, memory_order_acquire) == i + 1;
}

/* For reports (report.h's hooks). */
static struct object_info sample_describe(uintptr_t a) {
    struct object_info o = {.state = OBJ_NOT_OURS, .start = a};
    if (!sample_owns((void *)a))
        return o;
    size_t i = slot_of(a);
    o.state = OBJ_NEVER; /* a guard page, or a slot never used */
    if (a - page_of(i) >= OSCAR_PAGE ||
        i >= atomic_load_explicit(&sample_state.next_slot, memory_order_acquire))
        return o;
    struct sample_record *r = record_of(i);
    uint32_t st = atomic_load_explicit(&r->state, memory_order_acquire);
    if (!record_is(r, i)) {
        /* The record went to a later slot: this one was freed long ago (or skipped). */
        o.state = OBJ_RECLAIMED;
        return o;
    }
    if (st == SLOT_LIVE || st == SLOT_FREED) {
        o.state = st == SLOT_LIVE ? OBJ_LIVE : OBJ_FREED;
        o.size = r->size;
        o.start = start_of(i, o.size);
    }
    return o;
}

static struct obj_record *sample_record(uintptr_t start) {
    if (!sample_owns((void *)start))
        return NULL;
    size_t i = slot_of(start);
    struct sample_record *r = record_of(i);
    return record_is(r, i) ? &r->rec : NULL;
}

static bool sample_claims(uintptr_t a) { return sample_owns((void *)a); }

/* Chunk c's pages made usable, once (the first caller does it): with guards, read-write with
 * a guard marker on every guard page. False: not usable, or not yet (its slots are then
 * skipped). */
static bool make_ready(size_t c) {
    uint32_t w = atomic_fetch_or_explicit(&sample_state.chunks[c], CHUNK_TAKEN,
                                          memory_order_acq_rel);
    if (w & CHUNK_TAKEN) /* (another thread's: done, or under way) */
        return (w & CHUNK_READY) != 0;
    uintptr_t base = page_of(c * SAMPLE_CHUNK_SLOTS);
    if (sample_state.guards) {
        if (os_map_private((void *)base, CHUNK_BYTES, false) != 0)
            return false;
        /* (64 ranges a call: 1 KiB of the allocating thread's stack, which may be small) */
        struct iovec guards[64];
        int err = 0;
        for (unsigned k = 0; k < SAMPLE_CHUNK_SLOTS && !err; k += 64) {
            for (unsigned j = 0; j < 64; j++)
                guards[j] = (struct iovec){(void *)(base + (k + j) * SLOT_BYTES + OSCAR_PAGE),
                                           OSCAR_PAGE};
            if (os_guard_ranges(guards, 64) != 0) /* (no process_madvise: a madvise a page) */
                for (unsigned j = 0; j < 64 && !err; j++)
                    err = os_guard(guards[j].iov_base, OSCAR_PAGE);
        }
        if (err) {
            os_revoke((void *)base, CHUNK_BYTES);
            return false;
        }
    }
    atomic_fetch_or_explicit(&sample_state.chunks[c], CHUNK_READY, memory_order_release);
    return true;
}

/* Slot i will not be used again: the last of its chunk retires the chunk. */
static void slot_done(size_t i) {
    size_t c = i / SAMPLE_CHUNK_SLOTS;
    uint32_t w = atomic_fetch_add_explicit(&sample_state.chunks[c], 1, memory_order_acq_rel) + 1;
    if ((w & CHUNK_DONE_MASK) == SAMPLE_CHUNK_SLOTS && (w & CHUNK_READY) && sample_state.guards)
        os_revoke((void *)page_of(c * SAMPLE_CHUNK_SLOTS), CHUNK_BYTES); /* (page tables too) */
}

/* Does /proc/self/pagemap tell a guard marker from a page swapped out (bit 58, Linux 6.15+)?
 * The mark reads the pool's read-write pages as roots, by pagemap: were the freed pages to
 * look swapped out, it would fault on each. Without a pagemap the mark asks mincore, which
 * calls them absent. */
static bool guards_seen_by_pagemap(uintptr_t guard_page) {
    long fd = os_open_read("/proc/self/pagemap");
    if (fd < 0)
        return true;
    uint64_t entry = 0;
    long got = os_pread((int)fd, &entry, sizeof entry, guard_page / OSCAR_PAGE * sizeof entry);
    os_close((int)fd);
    return got != (long)sizeof entry || ((entry >> 58) & 1) || !((entry >> 62) & 1);
}

int sample_init(void) {
    sample_rate = options_int(OPT_SAMPLE_RATE);
    if (!sample_rate)
        return 0;
    int err = 0;
    void *lo = NULL;
    size_t bytes = (size_t)SAMPLE_POOL_GIB << 30;
    uint64_t limit;
    if (os_rlimit(RLIMIT_AS, &limit) == 0) /* (a finite RLIMIT_AS: a 64th of it at most) */
        while (bytes / 2 >= CHUNK_BYTES * 4 && bytes > limit / 64)
            bytes /= 2;
    for (; bytes >= CHUNK_BYTES * 4; bytes /= 2)
        if ((lo = os_reserve(bytes + CHUNK_BYTES, &err)) != NULL)
            break;
    size_t nslots = lo ? bytes / SLOT_BYTES : 0, nchunks = nslots / SAMPLE_CHUNK_SLOTS;
    struct sample_record *r =
        lo ? os_alloc_meta(SAMPLE_RECORDS * sizeof *r, &err) : NULL;
    _Atomic uint32_t *chunks = r ? os_alloc_meta(nchunks * sizeof *chunks, &err) : NULL;
    if (!chunks || (err = stack_store_init()) != 0) {
        sample_rate = 0;
        return err ? err : ENOMEM;
    }
    sample_state.records = r;
    sample_state.chunks = chunks;
    sample_state.nslots = nslots;
    sample_lo = align_up((uintptr_t)lo, CHUNK_BYTES); /* (chunks on 2 MiB: whole page tables) */
    sample_hi = sample_lo + bytes;
    sample_reserved_lo = (uintptr_t)lo;
    sample_reserved_hi = (uintptr_t)lo + bytes + CHUNK_BYTES;
    sample_state.guards = os_guards_usable() && options_int(OPT_GUARDS);
    if (sample_state.guards && make_ready(0) &&
        !guards_seen_by_pagemap(page_of(0) + OSCAR_PAGE)) {
        os_revoke((void *)sample_lo, CHUNK_BYTES);
        atomic_store(&sample_state.chunks[0], 0);
        sample_state.guards = false;
    }
    if (sample_state.guards && !(atomic_load(&sample_state.chunks[0]) & CHUNK_READY))
        sample_state.guards = false; /* (no guard markers here: mmap per sampled page) */
    if (!sample_state.guards)
        make_ready(0);
    atomic_store(&sample_state.first_left, options_int(OPT_SAMPLE_FIRST));
    report_set_describe_hook(sample_describe);
    report_set_record_hook(sample_record);
    fault_set_claim_hook(sample_claims);
    return 0;
}

bool sample_first_open(void) {
    return atomic_load_explicit(&sample_state.first_left, memory_order_relaxed) > 0;
}

bool sample_first_take(void) {
    return atomic_fetch_sub_explicit(&sample_state.first_left, 1, memory_order_relaxed) > 0;
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
    if (size > OSCAR_PAGE || !sample_state.records ||
        atomic_load_explicit(&sample_state.live, memory_order_relaxed) >= SAMPLE_LIVE_MAX)
        return NULL;
    size_t i = atomic_fetch_add_explicit(&sample_state.next_slot, 1, memory_order_relaxed);
    if (i >= sample_state.nslots) {
        if (i == sample_state.nslots)
            stats_add(STAT_SAMPLE_POOL_FULL, 1);
        return NULL;
    }
    size_t c = i / SAMPLE_CHUNK_SLOTS;
    if (i % SAMPLE_CHUNK_SLOTS == 0 && (c + 2) * SAMPLE_CHUNK_SLOTS <=
                                                                sample_state.nslots)
        make_ready(c + 1); /* (the next chunk, ahead of its first slot) */
    struct sample_record *r = record_of(i);
    uint32_t st = atomic_load_explicit(&r->state, memory_order_acquire);
    if (!(atomic_load_explicit(&sample_state.chunks[c], memory_order_acquire) & CHUNK_READY ||
          make_ready(c)) || /* (the thread readying it ahead was slow) */
        (st != SLOT_NEVER && st != SLOT_FREED) ||
        !atomic_compare_exchange_strong(&r->state, &st, SLOT_CLAIMED)) {
        slot_done(i); /* (its chunk not ready yet, or its record held by a live object) */
        return NULL;
    }
    if (!sample_state.guards && os_map_private((void *)page_of(i), OSCAR_PAGE, false) != 0) {
        atomic_store_explicit(&r->state, st, memory_order_release); /* (no memory) */
        slot_done(i);
        return NULL;
    }
    r->size = (uint32_t)size;
    atomic_store_explicit(&r->kind, 0, memory_order_relaxed);
    atomic_store_explicit(&r->slot, i + 1, memory_order_release);
    stack_record_alloc(&r->rec);
    atomic_store_explicit(&r->state, SLOT_LIVE, memory_order_release);
    atomic_fetch_add_explicit(&sample_state.live, 1, memory_order_relaxed);
    stats_add(STAT_SAMPLED_OBJECTS, 1);
    stats_fold(1, 0, 1, 0, 0); /* (an allocation like any other: objects of 4 KiB at most) */
    return (void *)start_of(i, size);
}

__attribute__((noreturn)) static void bad_pointer(uintptr_t a, int who) {
    report_bad_pointer(a, sample_describe(a), (enum report_caller)who);
}

/* Slot i's record while its object is live, or NULL. */
static struct sample_record *live_record(uintptr_t a, size_t i) {
    struct sample_record *r = record_of(i);
    if (!record_is(r, i) || atomic_load_explicit(&r->state, memory_order_acquire) != SLOT_LIVE ||
        a != start_of(i, r->size))
        return NULL;
    return r;
}

void sample_free(void *p, int who) {
    uintptr_t a = (uintptr_t)p;
    size_t i = slot_of(a);
    struct sample_record *r = live_record(a, i);
    uint32_t st = SLOT_LIVE;
    if (!r || !atomic_compare_exchange_strong(&r->state, &st, SLOT_FREED))
        bad_pointer(a, who); /* (a double free: the exchange lets only one free through) */
    stack_record_free(&r->rec);
    if (!sample_state.guards || os_guard((void *)page_of(i), OSCAR_PAGE) != 0)
        os_revoke((void *)page_of(i), OSCAR_PAGE);
    atomic_fetch_sub_explicit(&sample_state.live, 1, memory_order_relaxed);
    stats_fold(0, 1, 0, 0, 0);
    slot_done(i);
}

void sample_set_kind(void *p, unsigned kind) {
    uintptr_t a = (uintptr_t)p;
    struct sample_record *r = live_record(a, slot_of(a));
    if (r)
        atomic_store_explicit(&r->kind, (uint8_t)kind, memory_order_relaxed);
}

bool sample_take_kind(void *p, unsigned *kind, size_t *size) {
    uintptr_t a = (uintptr_t)p;
    struct sample_record *r = live_record(a, slot_of(a));
    if (!r)
        return false;
    *kind = atomic_exchange_explicit(&r->kind, 0, memory_order_relaxed);
    *size = r->size;
    return true;
}

struct object_info sample_object(uintptr_t a) { return sample_describe(a); }

size_t sample_usable_size(void *p, int who) {
    uintptr_t a = (uintptr_t)p;
    struct sample_record *r = live_record(a, slot_of(a));
    if (!r)
        bad_pointer(a, who);
    return align_up(r->size ? r->size : 1, 16);
}
