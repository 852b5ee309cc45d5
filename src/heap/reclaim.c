/* reclaim: see reclaim.h. */
#include "heap/reclaim.h"
#include "base/messages.h"
#include "heap/views.h"
#include "heap/large.h"
#include "base/fmt.h"
#include "os/os.h"
#include "mem/region.h"
#include "report/stack.h"
#include "base/stats.h"

#define CHUNK_PAGES (REGION_CHUNK >> OSCAR_PAGE_SHIFT)
/* A sweep every 64 MiB of region handed out (16,384 strict-mode objects), looking at up to
 * 256 chunks: four times the chunks handed out meanwhile, so the cycle over chunks that
 * are still in use keeps up, and at most 131,072 entries read per sweep. */
#define SWEEP_EVERY (64UL << 20)
#define SWEEP_CHUNKS 256
/* Chunks reclaimed per sweep at most (the ranges of one system call, on the stack). */
#define DROP_MAX 64

enum chunk_state {
    CHUNK_UNKNOWN = 0,   /* in use, or not looked at yet */
    CHUNK_SEEN_DEAD = 1, /* dead at the last visit: reclaimed if still dead at the next */
    CHUNK_RECLAIMED = 2, /* its objects were all freed; entries, records, page table gone */
    CHUNK_NEVER = 3,     /* inside an alignment gap or slice rest: never handed out */
};
#define STATE_MASK 3
#define PENDING 4 /* (a flag with the state) on the pending list: never recycled */
#define PROVEN 8  /* (a flag with CHUNK_RECLAIMED) no pointer into it was left at a proof */
/* A proof looks at up to PROVE_BATCH reclaimed chunks (4 GiB of addresses: one stop of the
 * world for up to a million strict-mode objects). */
#define PROVE_BATCH 2048

/* The reclaim sweep's state. */
static struct {
    _Atomic uint8_t *state; /* one byte per chunk of the region: allocated once by reclaim_init;
                             * each byte moved by CAS, lock-free */
    size_t chunks;          /* chunks of the region: set once by reclaim_init */
    oscar_lock busy;        /* a sweep or a recycle is running (rank RECLAIM) */
    _Atomic uintptr_t next_sweep; /* the bump address that triggers the next sweep: atomic */
    /* Only touched by the sweeping thread (under busy): the chunks below frontier that are
     * neither reclaimed nor never used, pending[0, n_pending), visited in passes that
     * compact the list as they go (read at r, survivors written back at w <= r), so a pass
     * costs the chunks still in use, however many were reclaimed before them. */
    uint32_t *pending;
    size_t n_pending, r, w, frontier, passes;
    /* Once the region is used up (region_take), the addresses of reclaimed chunks are
     * handed out again, oldest first, from a window of consecutive ones (under busy). */
    uintptr_t window_cur, window_end;
    size_t recycle_next;
    /* Chunks that became recyclable so far (reclaimed, or marked never used: atomic), and
     * its value and the window size asked for when recycling last found nothing (under
     * busy). */
    _Atomic size_t freed_chunks;
    size_t failed_at, failed_need, hopeless_calls;
    /* Set once not even one chunk could be found: live objects fill the region. */
    atomic_bool short_of_addresses;
    atomic_int warned_recycling, warned_short; /* each set once, by its warning (exchange) */
    /* The proof (reclaim.h): its hook (set once at init), a bit per chunk of the batch being
     * proven (allocated once by reclaim_init), and freed_chunks when the last proof ran
     * (under busy); warned_kept: its warning was said (exchange, once). */
    reclaim_prove_fn prove;
    uint64_t *cand;
    size_t proved_at;
    bool proved_once;
    atomic_int warned_kept;
    /* A sweep's chunks to drop and the ranges it gives back (under busy): kept here, not on
     * the stack of the thread whose allocation crossed next_sweep (4.6 KiB, which a program
     * run under a small RLIMIT_STACK may not have left). */
    size_t drop[DROP_MAX];
    struct iovec drop_ranges[4 * DROP_MAX];
} reclaim_state = {.busy = OSCAR_LOCK_INIT(RECLAIM), .failed_at = SIZE_MAX};

void reclaim_set_prove_hook(reclaim_prove_fn prove) { reclaim_state.prove = prove; }

void reclaim_init(void) {
    reclaim_state.chunks = (oscar_region.end - oscar_region.base) / REGION_CHUNK;
    int err;
    reclaim_state.state = os_alloc_meta(reclaim_state.chunks, &err);
    reclaim_state.pending = os_alloc_meta(reclaim_state.chunks * sizeof *reclaim_state.pending, &err);
    reclaim_state.cand = os_alloc_meta((reclaim_state.chunks + 63) / 64 * 8, &err); /* (NULL: no
                                                                                     * proof, no recycling of reclaimed chunks) */
    if (!reclaim_state.state || !reclaim_state.pending) {
        reclaim_state.state = NULL;
        return; /* no reclaiming: metadata simply stays */
    }
    static const struct region_hooks hooks = {
        .note_bump = reclaim_note_bump,
        .mark_never = reclaim_mark_never,
        .recycle = reclaim_recycle,
    };
    region_set_hooks(&hooks);
    atomic_store(&reclaim_state.next_sweep, oscar_region.base + SWEEP_EVERY);
}

static size_t chunk_of(uintptr_t a) { return (a - oscar_region.base) / REGION_CHUNK; }
static uintptr_t chunk_base(size_t i) { return oscar_region.base + i * REGION_CHUNK; }

static enum chunk_state chunk_state(size_t i) {
    return atomic_load_explicit(&reclaim_state.state[i], memory_order_relaxed) & STATE_MASK;
}
/* (Keeps the PENDING flag: threads marking slice rests never race the list.) */
static void set_state(size_t i, enum chunk_state s) {
    uint8_t old = atomic_load_explicit(&reclaim_state.state[i], memory_order_relaxed);
    while (!atomic_compare_exchange_weak(&reclaim_state.state[i], &old, (uint8_t)((old & PENDING) | s)))
        ;
}
static void add_pending(size_t i) {
    reclaim_state.pending[reclaim_state.n_pending++] = (uint32_t)i;
    atomic_fetch_or(&reclaim_state.state[i], PENDING);
}

bool reclaim_is_reclaimed(uintptr_t a) {
    return reclaim_state.state && region_contains(a) && chunk_state(chunk_of(a)) == CHUNK_RECLAIMED;
}

void reclaim_mark_never(uintptr_t lo, uintptr_t hi) {
    if (!reclaim_state.state)
        return;
    for (uintptr_t c = lo; c + REGION_CHUNK <= hi; c += REGION_CHUNK) {
        set_state(chunk_of(c), CHUNK_NEVER);
        atomic_fetch_add(&reclaim_state.freed_chunks, 1);
    }
}

uintptr_t reclaim_next_page(uintptr_t p) {
    if (reclaim_state.state && !(p & (REGION_CHUNK - 1)) && chunk_state(chunk_of(p)) >= CHUNK_RECLAIMED)
        return p + REGION_CHUNK;
    return p + OSCAR_PAGE;
}

/* What a page, or a whole chunk, is to the sweep: revoked for good (its entries will never
 * change again but for a late report), or dead but for settled guarded large objects
 * (large.h: carved ones stay in their slab's mapping; large_retire_chunk makes them
 * PROT_NONE), or still in use (a large object's free still under way counts as in use). */
enum chunk_look { CHUNK_IS_LIVE, CHUNK_IS_GUARDED, CHUNK_IS_DEAD };

static enum chunk_look page_dead(uintptr_t p, uint64_t e) {
    switch (entry_kind(e)) {
    case PK_NONE:
        return e == ENTRY_ABANDONED ? CHUNK_IS_DEAD : CHUNK_IS_LIVE;
    case PK_SMALL_FREED:
    case PK_PACKED_FREED:
        return CHUNK_IS_DEAD;
    case PK_LARGE_FREED:
        return e & LARGE_FREEING ? CHUNK_IS_LIVE : CHUNK_IS_DEAD;
    case PK_LARGE_GUARDED:
        return e & LARGE_FREEING ? CHUNK_IS_LIVE : CHUNK_IS_GUARDED;
    case PK_ARENA:
    case PK_VIEW: /* a freed arena, a revoked view: PROT_NONE */
        return entry_api_dead(e) ? CHUNK_IS_DEAD : CHUNK_IS_LIVE;
    case PK_LARGE_TAIL: {
        uintptr_t head = p - (entry_payload(e) << OSCAR_PAGE_SHIFT);
        if (!region_contains(head))
            return CHUNK_IS_LIVE;
        uint64_t h = region_load(head);
        if (h == 0 && reclaim_is_reclaimed(head))
            return CHUNK_IS_DEAD; /* a long object's reclaimed head */
        return entry_kind(h) == PK_LARGE_FREED || entry_kind(h) == PK_LARGE_GUARDED
                   ? page_dead(head, h)
                   : CHUNK_IS_LIVE;
    }
    default:
        return CHUNK_IS_LIVE;
    }
}

static enum chunk_look chunk_dead(size_t i) {
    uintptr_t base = chunk_base(i);
    enum chunk_look look = CHUNK_IS_DEAD;
    for (size_t k = 0; k < CHUNK_PAGES && look != CHUNK_IS_LIVE; k++) {
        uintptr_t p = base + (k << OSCAR_PAGE_SHIFT);
        enum chunk_look l = page_dead(p, region_load(p));
        look = l < look ? l : look;
    }
    return look;
}

/* The entries and records (stacks, custom-allocator side records) of chunks [i, i + n), as
 * three ranges. */
static unsigned meta_ranges(struct iovec *r, size_t i, size_t n) {
    size_t pages = n * CHUNK_PAGES;
    unsigned m = 0;
    r[m++] = (struct iovec){(void *)region_entry(chunk_base(i)), pages * sizeof(uint64_t)};
    r[m++] = (struct iovec){stack_record(chunk_base(i)), pages * sizeof(struct obj_record)};
    uintptr_t at;
    size_t len;
    if (views_records_range(chunk_base(i), pages, &at, &len))
        r[m++] = (struct iovec){(void *)at, len};
    return m;
}

/* Drop the page tables, entries and records of the chunks in drop[0, n), in one call (at
 * most 4 ranges per chunk). */
static void drop_chunks(const size_t *drop, unsigned n) {
    struct iovec *r = reclaim_state.drop_ranges, meta[3];
    unsigned m = 0;
    for (unsigned j = 0; j < n; j++)
        m = os_ranges_add(r, m, chunk_base(drop[j]), REGION_CHUNK);
    for (unsigned j = 0; j < n; j++) {
        unsigned k = meta_ranges(meta, drop[j], 1);
        for (unsigned q = 0; q < k; q++)
            m = os_ranges_add(r, m, (uintptr_t)meta[q].iov_base, meta[q].iov_len);
    }
    /* Marked first: a report racing with the drop then says "reclaimed", never "wild".
     * (Off the pending list now.) */
    for (unsigned j = 0; j < n; j++)
        atomic_store_explicit(&reclaim_state.state[drop[j]], CHUNK_RECLAIMED, memory_order_relaxed);
    atomic_fetch_add(&reclaim_state.freed_chunks, n);
    if (os_drop_ranges(r, m) != 0)
        return; /* whatever was not dropped stays as it was: only memory is lost */
    stats_add(STAT_CHUNKS_RECLAIMED, n);
}

static void sweep(uintptr_t bump) {
    size_t limit = chunk_of(bump); /* chunks wholly handed out */
    for (; reclaim_state.frontier < limit; reclaim_state.frontier++)
        if (chunk_state(reclaim_state.frontier) < CHUNK_RECLAIMED)
            add_pending(reclaim_state.frontier);
    size_t *drop = reclaim_state.drop;
    unsigned n = 0;
    for (unsigned looked = 0; looked < SWEEP_CHUNKS && n < DROP_MAX; looked++) {
        if (reclaim_state.r == reclaim_state.n_pending) {
            /* The pass is over; the next sweep starts the next one (never this one: a
             * chunk's two visits must be apart in time). */
            reclaim_state.n_pending = reclaim_state.w;
            reclaim_state.r = reclaim_state.w = 0;
            reclaim_state.passes++;
            break;
        }
        size_t i = reclaim_state.pending[reclaim_state.r++];
        enum chunk_state s = chunk_state(i);
        if (s >= CHUNK_RECLAIMED) {
            atomic_fetch_and(&reclaim_state.state[i], (uint8_t)~PENDING); /* a slice rest left unused */
            continue;
        }
        enum chunk_look look = chunk_dead(i);
        if (look == CHUNK_IS_GUARDED &&
            large_retire_chunk(chunk_base(i), chunk_base(i) + REGION_CHUNK))
            look = chunk_dead(i); /* (again: what it did, and what changed meanwhile) */
        if (look != CHUNK_IS_DEAD) {
            set_state(i, CHUNK_UNKNOWN);
            reclaim_state.pending[reclaim_state.w++] = (uint32_t)i;
        } else if (s == CHUNK_SEEN_DEAD) {
            drop[n++] = i; /* (leaves the list) */
        } else {
            set_state(i, CHUNK_SEEN_DEAD);
            reclaim_state.pending[reclaim_state.w++] = (uint32_t)i;
        }
    }
    if (n)
        drop_chunks(drop, n);
}

void reclaim_note_bump(uintptr_t bump) {
    uintptr_t mark = atomic_load_explicit(&reclaim_state.next_sweep, memory_order_relaxed);
    if (likely(bump < mark) || !reclaim_state.state || oscar_init_state != 2)
        return;
    if (!atomic_compare_exchange_strong(&reclaim_state.next_sweep, &mark, bump + SWEEP_EVERY))
        return; /* another thread crossed it */
    if (!oscar_lock_try(&reclaim_state.busy))
        return; /* a sweep is running: the next mark gets the next one */
    sweep(bump);
    reclaim_unlock();
}

void reclaim_lock(void) { oscar_lock_acquire(&reclaim_state.busy); /* a sweep or a recycle: both bounded */ }

void reclaim_unlock(void) { oscar_lock_release(&reclaim_state.busy); }

/* Never handed out, or reclaimed and proven (or no proof in this build: no scan module). */
static bool recyclable(size_t i) {
    uint8_t s = atomic_load_explicit(&reclaim_state.state[i], memory_order_relaxed);
    if (s & PENDING)
        return false;
    return (s & STATE_MASK) == CHUNK_NEVER ||
           ((s & STATE_MASK) == CHUNK_RECLAIMED && ((s & PROVEN) || !reclaim_state.prove));
}

/* Reclaimed, not proven yet: a candidate of the next proof. */
static bool unproven(size_t i) {
    uint8_t s = atomic_load_explicit(&reclaim_state.state[i], memory_order_relaxed);
    return (s & (STATE_MASK | PENDING | PROVEN)) == CHUNK_RECLAIMED;
}

/* One warning line, once per flag: "oscar: warning: <what> (N GiB): <then>". */
static void warn_once(atomic_int *warned, enum msg_id what, const char *then) {
    if (atomic_exchange(warned, 1))
        return;
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, what);
    fmt_str(&f, " (");
    fmt_u64(&f, (oscar_region.end - oscar_region.base) >> 30);
    fmt_str(&f, " GiB): ");
    fmt_str(&f, then);
    fmt_str(&f, "; raise OSCAR_VA_GIB (up to 65536)\n");
    fmt_flush(&f, 2);
}

/* The next run of consecutive recyclable chunks, at least need long (up to 16, a thread
 * slice), oldest first, made the window; false when there is none. Its metadata is dropped
 * once more, so it starts from zero entries whatever a racing late store left there. */
static bool next_window(size_t need) {
    size_t want = need > 16 ? need : 16;
    for (size_t scanned = 0; scanned < reclaim_state.chunks;) {
        size_t i = reclaim_state.recycle_next < reclaim_state.chunks ? reclaim_state.recycle_next : 0, n = 0;
        while (i + n < reclaim_state.chunks && n < want && recyclable(i + n))
            n++;
        scanned += n + 1;
        reclaim_state.recycle_next = i + n + 1;
        if (n < need)
            continue;
        struct iovec r[3];
        if (os_drop_ranges(r, meta_ranges(r, i, n)) != 0)
            return false;
        for (size_t j = i; j < i + n; j++) {
            set_state(j, CHUNK_UNKNOWN);
            add_pending(j); /* reclaimed again once dead again */
        }
        stats_add(STAT_CHUNKS_RECYCLED, n);
        reclaim_state.window_cur = chunk_base(i);
        reclaim_state.window_end = chunk_base(i + n);
        return true;
    }
    return false;
}

/* A proof (reclaim.h) over up to PROVE_BATCH unproven chunks, from the recycling cursor on
 * (oldest first, as next_window takes them): those nothing points to become PROVEN. Only when
 * no window is left (find_window), and not again before some chunk became recyclable since
 * the last proof: a chunk kept by one proof is looked at again by the next, and a program
 * that pins every old chunk does not stop the world on every allocation. The number proven.
 * (Under busy: no chunk's state changes meanwhile but by reclaim_mark_never, which never
 * touches a reclaimed one.) */
static size_t prove_batch(void) {
    size_t chunks = reclaim_state.chunks;
    size_t freed = atomic_load(&reclaim_state.freed_chunks);
    if (!reclaim_state.prove || !reclaim_state.cand ||
        (reclaim_state.proved_once && freed == reclaim_state.proved_at))
        return 0;
    size_t start = reclaim_state.recycle_next < chunks ? reclaim_state.recycle_next : 0, n = 0;
    for (size_t k = 0; k < chunks && n < PROVE_BATCH; k++) {
        size_t i = (start + k) % chunks;
        if (unproven(i)) {
            reclaim_state.cand[i / 64] |= 1ULL << (i % 64);
            n++;
        }
    }
    if (!n)
        return 0;
    reclaim_state.proved_once = true;
    reclaim_state.proved_at = freed;
    stats_add(STAT_RECYCLE_MARKS, 1);
    int err = reclaim_state.prove(reclaim_state.cand, chunks);
    size_t proven = 0;
    for (size_t w = 0; w < (chunks + 63) / 64; w++) {
        uint64_t b = reclaim_state.cand[w];
        reclaim_state.cand[w] = 0;
        for (; b && !err; b &= b - 1) {
            atomic_fetch_or(&reclaim_state.state[w * 64 + (size_t)__builtin_ctzll(b)], PROVEN);
            proven++;
        }
    }
    if (err) {
        warn_once(&reclaim_state.warned_kept, MSG_RECYCLE_UNPROVEN,
                  "the other threads could not be stopped to show that no pointer into old "
                  "addresses is left, so none is handed out again for now");
        return 0;
    }
    stats_add(STAT_RECYCLE_CHUNKS_KEPT, (int64_t)(n - proven));
    if (proven)
        reclaim_state.failed_at = SIZE_MAX; /* (windows may be found again: find_window) */
    else
        warn_once(&reclaim_state.warned_kept, MSG_RECYCLE_UNPROVEN,
                  "pointers into every stretch of old addresses are left (freed objects still "
                  "pointed to), so none is handed out again for now");
    return proven;
}

/* A new window of at least need chunks (next_window). The bump pointer no longer triggers
 * sweeps: each new window triggers one, and when none is found, two whole passes over the
 * pending chunks (a dead chunk needs two visits) before giving up. When the last try for as
 * much found nothing and no chunk was freed since (live objects fill the region), a sweep
 * only every 64th call and no scan: malloc then fails fast with ENOMEM instead of paying a
 * sweep on every call. */
static bool find_window(size_t need) {
    bool retry = atomic_load(&reclaim_state.freed_chunks) != reclaim_state.failed_at ||
                 need < reclaim_state.failed_need;
    if (!retry && (reclaim_state.hopeless_calls++ & 63))
        return false;
    uintptr_t bump = atomic_load(&oscar_region.bump);
    size_t p0 = reclaim_state.passes;
    bool found = false;
    do {
        sweep(bump);
        size_t now = atomic_load(&reclaim_state.freed_chunks);
        if (now != reclaim_state.failed_at || need < reclaim_state.failed_need)
            found = next_window(need);
        if (!found) {
            reclaim_state.failed_at = now;
            reclaim_state.failed_need = need;
        }
    } while (!found && retry && reclaim_state.passes < p0 + 3);
    if (!found && prove_batch())
        found = next_window(need);
    if (!found && need == 1)
        atomic_store(&reclaim_state.short_of_addresses, true);
    return found;
}

uintptr_t reclaim_recycle(size_t len, size_t align) {
    if (!reclaim_state.state || align > REGION_CHUNK || len > reclaim_state.chunks * REGION_CHUNK)
        return 0;
    reclaim_lock();
    uintptr_t a = align_up(reclaim_state.window_cur, align);
    if (!reclaim_state.window_cur || a + len > reclaim_state.window_end || a + len < a) {
        /* A new window; the rest of the current one is given up only once there is one (a
         * thread asks for a whole slice first, then for what it needs: that must still come
         * from the rest, or every rest would be lost and some chunks never used again). */
        uintptr_t cur = reclaim_state.window_cur, end = reclaim_state.window_end;
        if (find_window((len + REGION_CHUNK - 1) / REGION_CHUNK)) {
            if (cur < end)
                region_abandon(cur, end); /* never handed out now */
            a = reclaim_state.window_cur;
        } else {
            reclaim_state.window_cur = cur;
            reclaim_state.window_end = end;
            a = 0;
        }
    }
    if (a) {
        if (a > reclaim_state.window_cur)
            region_abandon(reclaim_state.window_cur, a);
        reclaim_state.window_cur = a + len;
    }
    reclaim_unlock();
    if (a)
        warn_once(&reclaim_state.warned_recycling, MSG_REGION_USED_UP,
                  "addresses of objects freed long ago are handed out again once a scan finds "
                  "no pointer into them");
    else if (atomic_load(&reclaim_state.short_of_addresses))
        warn_once(&reclaim_state.warned_short, MSG_REGION_FULL,
                  "new small objects now share shadow pages (a use after free is caught once "
                  "its page is empty)");
    return a;
}

bool reclaim_short_of_addresses(void) {
    return atomic_load_explicit(&reclaim_state.short_of_addresses, memory_order_relaxed);
}
