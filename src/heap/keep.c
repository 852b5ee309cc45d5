/* keep: see keep.h. The area is KEEP_SLOTS windows of `window` bytes, each holding at most
 * one run of kept pages (its front is taken first). Syscalls run outside the lock: a slot
 * being moved into or out of is marked busy. */
#include "heap/keep.h"
#include "mem/maplimit.h"
#include "base/options.h"
#include "os/os.h"
#include "base/stats.h"

#define KEEP_SLOTS 16
/* Bigger objects are never kept: one would take most of a budget others could share. */
#define KEEP_OBJECT_MAX (256UL << 20)
/* Smaller objects are carved from their thread's chunk (large.c), never kept. */
#define KEEP_MIN (64UL << 10)
/* Windows are 2 MiB-aligned, so an object's transparent huge pages move as they are. */
#define KEEP_ALIGN (2UL << 20)

struct keep_slot {
    uintptr_t at; /* the kept run: [at, at + len) */
    size_t len;
    bool busy;
};

/* The keep's state. area, window and max_bytes are set once by keep_init; the rest is
 * under lock (a slot marked busy is its claimer's until slot_done, which takes the lock). */
static struct {
    oscar_lock lock;  /* rank KEEP; fork holds it */
    uintptr_t area;   /* 0: keeping is off */
    size_t window;    /* bytes of address space per slot, the largest object kept */
    size_t max_bytes; /* OSCAR_KEEP_FREED_MIB */
    size_t kept;      /* bytes in slots, or being moved into them: under lock */
    struct keep_slot slot[KEEP_SLOTS]; /* under lock */
} keep_state = {.lock = OSCAR_LOCK_INIT(KEEP)};

void keep_init(void) {
    keep_state.max_bytes = (size_t)options_int(OPT_KEEP_FREED_MIB) << 20;
    size_t w = keep_state.max_bytes < KEEP_OBJECT_MAX ? keep_state.max_bytes : KEEP_OBJECT_MAX;
    keep_state.window = (w + KEEP_ALIGN - 1) & ~(KEEP_ALIGN - 1);
    if (!keep_state.window)
        return;
    int err;
    uintptr_t r = (uintptr_t)os_reserve(keep_state.window * KEEP_SLOTS + KEEP_ALIGN, &err);
    if (!r)
        return; /* no keep: freed large objects give their memory back, as before */
    keep_state.area = (r + KEEP_ALIGN - 1) & ~(KEEP_ALIGN - 1);
    /* The reservation, and at most a kept run and an emptied remnant per slot. */
    maplimit_add(1 + 2 * KEEP_SLOTS);
}

void keep_lock(void) { oscar_lock_acquire(&keep_state.lock); }
void keep_unlock(void) { oscar_lock_release(&keep_state.lock); }

void keep_after_fork_child(void) {
    keep_state.kept = 0;
    for (unsigned i = 0; i < KEEP_SLOTS; i++) {
        struct keep_slot *s = &keep_state.slot[i];
        if (s->busy)
            *s = (struct keep_slot){0}; /* (a later put replaces whatever it left there) */
        keep_state.kept += s->len;
    }
    keep_unlock();
}

static void slot_done(struct keep_slot *s, uintptr_t at, size_t len, int64_t kept_change) {
    keep_lock();
    s->at = at;
    s->len = len;
    s->busy = false;
    keep_state.kept += kept_change;
    keep_unlock();
}

/* The slot a run of len bytes goes to, busy and counted, or NULL: an empty one while the
 * budget lasts, else the one with the smallest run smaller than len, whose pages are
 * evicted (*victim: its run, to drop unless the new run covers it). */
static struct keep_slot *slot_for(size_t len, uintptr_t *victim_at, size_t *victim_len) {
    struct keep_slot *s = NULL, *small = NULL;
    for (unsigned i = 0; i < KEEP_SLOTS; i++) {
        struct keep_slot *t = &keep_state.slot[i];
        if (t->busy)
            continue;
        if (!t->len && !s)
            s = t;
        if (t->len && t->len < len && (!small || t->len < small->len))
            small = t;
    }
    *victim_len = 0;
    if (!s || keep_state.kept + len > keep_state.max_bytes) {
        /* Full: a bigger run serves more objects (they take its front) than a small one. */
        if (!small || keep_state.kept - small->len + len > keep_state.max_bytes)
            return NULL;
        s = small;
        *victim_at = s->at;
        *victim_len = s->len;
        keep_state.kept -= s->len;
        s->len = 0;
    }
    s->busy = true;
    keep_state.kept += len;
    return s;
}

/* Kept pages come to a new object as a mapping of its own (a moved mapping merges with
 * none of its neighbours): only while mappings are plenty. Guard markers are needed too:
 * without them every freed object already costs a PROT_NONE mapping. */
static bool keep_usable(size_t len) {
    return keep_state.area && len > KEEP_MIN && len <= keep_state.window && os_guards_usable() &&
           maplimit_plenty();
}

bool keep_put(uintptr_t a, size_t len) {
    if (!keep_usable(len))
        return false;
    uintptr_t victim_at;
    size_t victim_len;
    keep_lock();
    struct keep_slot *s = slot_for(len, &victim_at, &victim_len);
    keep_unlock();
    if (!s)
        return false;
    uintptr_t to = keep_state.area + (uintptr_t)(s - keep_state.slot) * keep_state.window;
    /* The move replaces whatever lies at [to, to + len): a victim beyond it is dropped. */
    if (victim_len && victim_at + victim_len > to + len)
        os_drop((void *)victim_at, victim_len);
    /* Refused when the object is not one mapping (a realloc grew it by moving): not kept. */
    if (os_move_pages((void *)a, (void *)to, len) != 0) {
        if (victim_len)
            os_drop((void *)victim_at, victim_len);
        slot_done(s, 0, 0, -(int64_t)len);
        return false;
    }
    slot_done(s, to, len, 0);
    stats_add(STAT_LARGE_KEPT, 1);
    return true;
}

bool keep_claim(size_t len, struct keep_claim *c) {
    if (!keep_usable(len))
        return false;
    keep_lock();
    struct keep_slot *best = NULL;
    for (unsigned i = 0; i < KEEP_SLOTS; i++) {
        struct keep_slot *s = &keep_state.slot[i];
        if (!s->busy && s->len >= len && (!best || s->len < best->len))
            best = s; /* the smallest run that fits: big runs stay for big objects */
    }
    if (best)
        best->busy = true;
    keep_unlock();
    if (!best)
        return false;
    c->slot = best;
    /* A rest too small for any object kept goes with this one (as room to grow). */
    c->len = best->len - len < KEEP_MIN ? best->len : len;
    return true;
}

void keep_release(const struct keep_claim *c) {
    struct keep_slot *s = c->slot;
    slot_done(s, s->at, s->len, 0);
}

bool keep_move(const struct keep_claim *c, uintptr_t a) {
    struct keep_slot *s = c->slot;
    if (os_move_pages((void *)s->at, (void *)a, c->len) != 0) {
        keep_release(c);
        return false;
    }
    slot_done(s, s->at + c->len, s->len - c->len, -(int64_t)c->len);
    stats_add(STAT_LARGE_REUSED, 1);
    return true;
}

size_t keep_trim(void) {
    if (!keep_state.area)
        return 0;
    struct keep_slot *taken[KEEP_SLOTS];
    unsigned n = 0;
    keep_lock();
    for (unsigned i = 0; i < KEEP_SLOTS; i++) {
        struct keep_slot *s = &keep_state.slot[i];
        if (!s->busy && s->len) {
            s->busy = true; /* (no claim can take it while its pages are dropped) */
            taken[n++] = s;
        }
    }
    keep_unlock();
    size_t bytes = 0;
    for (unsigned i = 0; i < n; i++) {
        struct keep_slot *s = taken[i];
        if (os_drop((void *)s->at, s->len) == 0)
            bytes += s->len;
        slot_done(s, 0, 0, -(int64_t)s->len);
    }
    return bytes;
}
