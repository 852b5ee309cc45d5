/* canon: see canon.h.
 *
 * Ordering between the owner of a span and threads freeing into it (Dekker style, all
 * seq_cst): a freer sets the slot bit, decrements `claimed`, then reads `state`; an owner
 * letting go stores DETACHED, then reads `claimed`. At least one of them sees the other,
 * so a span with free slots is never left detached and unlisted. */
#include "mem/canon.h"
#include "mem/maplimit.h"
#include "mem/region.h"
#include "base/options.h"
#include "os/os.h"
#include "base/size_class.h"
#include "base/stats.h"

#include <errno.h>
#include <sys/resource.h>

struct canon oscar_canon;

struct pool {
    oscar_lock lock;
    struct span *head;
};
/* The span pools (all zero at start: .bss). Each pool's list is guarded by its own lock. */
static struct {
    struct pool class_pools[NUM_CLASSES]; /* spans with free slots, per class */
    struct pool empty_pool;               /* punched spans ready for any class */
    /* Packed reuse spans with enough reusable pages to be worth a new mapping, per class. */
    struct pool reuse_pools[NUM_CLASSES];
} pools_state;

/* A span is offered for reuse once this many of its pages are reusable: a new mapping, a
 * guard call for the pages still in use and a populate call then serve them all. */
#define REUSE_MIN_PAGES(span_pages) ((span_pages) >= 16 ? (span_pages) / 4 : 1)
static struct {
    /* Reusable pages whose memory is kept for the next objects (not punched and zeroed
     * again), over the whole process: at most idle_max_pages (OSCAR_KEEP_FREED_MIB, set once
     * at init); idle_pages: atomic, lock-free. */
    int64_t idle_max_pages;
    _Atomic int64_t idle_pages;
    /* Pages [0, dump_pages) of the window are dumpable (dump_cover: atomic, raised under
     * pools_state.empty_pool's lock). */
    _Atomic uint64_t dump_pages;
    /* The window refused MADV_REMOVE once (locked: canon_punch). */
    _Atomic bool window_locked;
} canon_state;

/* The heap's descriptor, while it is still ours: the program may close it (closefrom) or put
 * another file in its place (dup2). Checked by inode on the rare paths that use it (fork,
 * stats); the heap itself never needs it (mappings and hole punches go through the window). */
static bool fd_is_ours(void) {
    int fd = oscar_canon.fd;
    uint64_t dev, ino;
    if (fd < 0)
        return false;
    if (os_fd_id(fd, &dev, &ino) == 0 && dev == oscar_canon.fd_dev && ino == oscar_canon.fd_ino)
        return true;
    oscar_canon.fd = -1; /* gone or replaced: never touched again */
    return false;
}

int canon_heap_fd(void) { return fd_is_ours() ? oscar_canon.fd : -1; }

/* For stats: physical memory counted once, not once per shadow alias. */
static int canon_resident(uint64_t *bytes) {
    return fd_is_ours() ? os_file_resident(oscar_canon.fd, bytes) : ENOENT;
}

/* A memfd of `bytes` bytes moved out of the program's way (high, close-on-exec), or -1: no
 * descriptor free, or a finite RLIMIT_FSIZE below `bytes` (sizing it would raise SIGXFSZ;
 * an anonymous shared object has no such limit). */
static int new_memfd(uint64_t bytes, uint64_t *dev, uint64_t *ino) {
    uint64_t fsize;
    if (os_rlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize < bytes)
        return -1;
    int fd;
    if (os_memfd("oscar-canonical-heap", &fd) != 0)
        return -1;
    if (os_ftruncate(fd, bytes) != 0 || os_fd_id(fd, dev, ino) != 0) {
        os_close(fd);
        return -1;
    }
    return fd;
}

/* The canonical heap: a memfd when one can be had, else an anonymous shared object; mapped
 * whole at `window`, from which every shadow is an alias (os_alias). */
static int open_heap(uint64_t bytes, int *fd, uint64_t *dev, uint64_t *ino, uintptr_t *window) {
    int err;
    *fd = new_memfd(bytes, dev, ino);
    void *w = os_map_window(bytes, *fd, &err);
    if (!w && *fd >= 0) {
        os_close(*fd);
        *fd = -1;
        w = os_map_window(bytes, -1, &err);
    }
    if (!w)
        return err;
    *window = (uintptr_t)w;
    return 0;
}

#define MIN_CANON_BYTES (64ULL << 20)

int canon_init(void) {
    int err = 0;
    stats_set_resident_hook(canon_resident);
    for (unsigned c = 0; c < NUM_CLASSES; c++) {
        oscar_lock_init(&pools_state.class_pools[c].lock, LOCK_CLASS_POOL);
        oscar_lock_init(&pools_state.reuse_pools[c].lock, LOCK_REUSE_POOL);
    }
    oscar_lock_init(&pools_state.empty_pool.lock, LOCK_EMPTY_POOL);
    oscar_canon.span_pages = (unsigned)options_int(OPT_RUN_PAGES);
    if (oscar_canon.span_pages > 1 && !(oscar_canon.span_pages & (oscar_canon.span_pages - 1)))
        oscar_canon.span_shift = (unsigned)__builtin_ctz(oscar_canon.span_pages);
    canon_state.idle_max_pages = (int64_t)options_int(OPT_KEEP_FREED_MIB) << (20 - OSCAR_PAGE_SHIFT);
    /* Sparse: its size costs nothing until pages are touched. Under a finite RLIMIT_AS the
     * window counts, so it gets a quarter of the region (every canonical page in use is
     * mapped by at least one shadow page), at least 64 MiB. */
    uint64_t bytes = 1ULL << 40, span_bytes = (uint64_t)oscar_canon.span_pages << OSCAR_PAGE_SHIFT;
    if (region_sized_by_limit()) { /* (RLIMIT_DATA: the per-page metadata below counts) */
        uint64_t quarter = (oscar_region.end - oscar_region.base) / 4;
        bytes = quarter < MIN_CANON_BYTES ? MIN_CANON_BYTES : quarter;
    }
    bytes -= bytes % span_bytes;
    oscar_canon.fd = -1;
    for (;; bytes = (bytes / 2) - (bytes / 2) % span_bytes) {
        if (bytes < span_bytes)
            return err ? err : ENOMEM;
        err = open_heap(bytes, &oscar_canon.fd, &oscar_canon.fd_dev, &oscar_canon.fd_ino,
                        &oscar_canon.window);
        if (!err)
            break;
    }
    oscar_canon.max_pages = bytes >> OSCAR_PAGE_SHIFT;
    uint64_t nspans = oscar_canon.max_pages / oscar_canon.span_pages;
    oscar_canon.spans = os_alloc_meta(nspans * sizeof(struct span), &err);
    if (!oscar_canon.spans)
        return err;
    oscar_canon.bits = os_alloc_meta(oscar_canon.max_pages * sizeof(*oscar_canon.bits), &err);
    if (!oscar_canon.bits)
        return err;
    oscar_canon.done = os_alloc_meta(oscar_canon.max_pages * sizeof(*oscar_canon.done), &err);
    if (!oscar_canon.done)
        return err;
    oscar_canon.taken = os_alloc_meta(oscar_canon.max_pages * sizeof(*oscar_canon.taken), &err);
    if (!oscar_canon.taken)
        return err;
    return 0;
}

static void pool_push(struct pool *p, struct span *s) {
    s->prev = NULL;
    s->next = p->head;
    if (p->head)
        p->head->prev = s;
    p->head = s;
}

static void pool_unlink(struct pool *p, struct span *s) {
    if (s->prev)
        s->prev->next = s->next;
    else
        p->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->next = s->prev = NULL;
}

/* Word w of the free-slot bitmap of a page with n slots, every slot free. */
static uint64_t all_free_word(unsigned n, unsigned w) {
    unsigned lo = w * 64;
    return n <= lo ? 0 : n - lo >= 64 ? ~0ULL : (1ULL << (n - lo)) - 1;
}

/* Mark every slot of a page with n slots free. */
static void free_page(uint64_t page, unsigned n) {
    for (unsigned w = 0; w < 4; w++)
        atomic_store_explicit(&oscar_canon.bits[page][w], all_free_word(n, w), memory_order_relaxed);
}

/* Mark every slot of every page of s free for class cls. */
static void span_format(struct span *s, unsigned cls) {
    unsigned n = class_slots(cls);
    uint64_t first = canon_span_first_page(s);
    for (unsigned i = 0; i < oscar_canon.span_pages; i++)
        free_page(first + i, n);
    s->cls = (uint8_t)cls;
    atomic_store(&s->claimed, 0);
}

/* Core dumps: the window is mapped left out of them (os_map_window); its pages [0, canon_state.dump_pages)
 * are made dumpable as the heap grows into them, in doubling steps (a few system calls in a
 * process's life), so that every shadow aliased from them is dumpable too (an alias inherits
 * the flag) and a debugger reads live objects through their addresses in a core. The core
 * holds the used heap twice (window and shadows), never the reserved rest (docs/reports.md). */
#define DUMP_FIRST_PAGES ((16ULL << 20) >> OSCAR_PAGE_SHIFT)

static void dump_cover(uint64_t end_page) {
    if (atomic_load_explicit(&canon_state.dump_pages, memory_order_acquire) >= end_page)
        return;
    oscar_lock_acquire(&pools_state.empty_pool.lock); /* (rare: the heap's high-water mark doubled) */
    uint64_t have = atomic_load(&canon_state.dump_pages), max = atomic_load(&oscar_canon.max_pages);
    if (have < end_page) {
        uint64_t want = have ? have * 2 : DUMP_FIRST_PAGES;
        while (want < end_page)
            want *= 2;
        want = (want + oscar_canon.span_pages - 1) / oscar_canon.span_pages * oscar_canon.span_pages;
        if (want > max)
            want = max;
        os_dump((void *)(oscar_canon.window + (have << OSCAR_PAGE_SHIFT)),
                (want - have) << OSCAR_PAGE_SHIFT, true);
        atomic_store_explicit(&canon_state.dump_pages, want, memory_order_release);
    }
    oscar_lock_release(&pools_state.empty_pool.lock);
}

/* A span nobody uses: from the empty pool, else never used before; NULL when exhausted. */
static struct span *take_unused_span(void) {
    struct span *s = NULL;
    oscar_lock_acquire(&pools_state.empty_pool.lock);
    if (pools_state.empty_pool.head) {
        s = pools_state.empty_pool.head;
        pool_unlink(&pools_state.empty_pool, s);
    }
    oscar_lock_release(&pools_state.empty_pool.lock);
    if (!s) {
        uint64_t id = atomic_fetch_add(&oscar_canon.next_span, 1);
        /* (read after the claim: canon_shrink lowers it, then checks next_span) */
        if (id >= atomic_load(&oscar_canon.max_pages) / oscar_canon.span_pages)
            return NULL;
        s = &oscar_canon.spans[id];
        dump_cover((id + 1) * oscar_canon.span_pages);
    }
    stats_gauge_add(STAT_CANONICAL_BYTES, STAT_PEAK_CANONICAL_BYTES,
                    (int64_t)oscar_canon.span_pages * (int64_t)OSCAR_PAGE);
    return s;
}

struct span *canon_span_acquire(unsigned cls) {
    struct pool *p = &pools_state.class_pools[cls];
    struct span *s = NULL;
    oscar_lock_acquire(&p->lock);
    if (p->head) {
        s = p->head;
        pool_unlink(p, s);
        atomic_store(&s->state, SPAN_ACTIVE);
    }
    oscar_lock_release(&p->lock);
    if (s)
        return s;
    s = take_unused_span();
    if (!s)
        return NULL;
    span_format(s, cls);
    atomic_store(&s->state, SPAN_ACTIVE);
    return s;
}

static void claim_page(uint64_t page) {
    for (unsigned w = 0; w < 4; w++)
        atomic_store_explicit(&oscar_canon.bits[page][w], 0, memory_order_relaxed);
    atomic_store_explicit(&oscar_canon.done[page], 0, memory_order_relaxed);
    atomic_store_explicit(&oscar_canon.taken[page], 0, memory_order_relaxed);
}

struct span *canon_span_acquire_packed(unsigned cls, bool reuse) {
    struct span *s = take_unused_span();
    if (!s)
        return NULL;
    uint64_t first = canon_span_first_page(s);
    for (unsigned i = 0; i < oscar_canon.span_pages; i++)
        claim_page(first + i);
    s->cls = (uint8_t)cls;
    s->packed_shadow = 0;
    s->reuse = reuse;
    for (unsigned w = 0; w < OSCAR_MAX_RUN_PAGES / 64; w++)
        atomic_store(&s->reusable[w], 0);
    atomic_store(&s->n_reusable, 0);
    atomic_store(&s->n_idle, 0);
    atomic_store(&s->in_reuse_pool, 0);
    atomic_store(&s->claimed, class_slots(cls) * oscar_canon.span_pages);
    atomic_store(&s->state, SPAN_PACKED);
    return s;
}

bool canon_idle_reserve(void) {
    if (atomic_fetch_add(&canon_state.idle_pages, 1) < canon_state.idle_max_pages)
        return true;
    atomic_fetch_sub(&canon_state.idle_pages, 1);
    return false;
}

void canon_idle_unreserve(void) { atomic_fetch_sub(&canon_state.idle_pages, 1); }

void canon_packed_page_reusable(uint64_t page, bool idle) {
    struct span *s = canon_span_of(page);
    if (idle)
        atomic_fetch_add(&s->n_idle, 1);
    unsigned i = (unsigned)(page - canon_span_first_page(s));
    atomic_fetch_or(&s->reusable[i / 64], 1ULL << (i % 64));
    int32_t n = atomic_fetch_add(&s->n_reusable, 1) + 1;
    if (n >= (int32_t)REUSE_MIN_PAGES(oscar_canon.span_pages) &&
        !atomic_exchange(&s->in_reuse_pool, 1)) {
        struct pool *p = &pools_state.reuse_pools[s->cls];
        oscar_lock_acquire(&p->lock);
        pool_push(p, s);
        oscar_lock_release(&p->lock);
    }
}

struct span *canon_span_reuse_packed(unsigned cls, uint64_t *mask) {
    struct pool *p = &pools_state.reuse_pools[cls];
    for (;;) {
        oscar_lock_acquire(&p->lock);
        struct span *s = p->head;
        if (s)
            pool_unlink(p, s);
        oscar_lock_release(&p->lock);
        if (!s)
            return NULL;
        /* Out of the pool before its pages are taken: a page offered meanwhile lists the
         * span again. */
        atomic_store(&s->in_reuse_pool, 0);
        int32_t taken = 0;
        for (unsigned w = 0; w < OSCAR_MAX_RUN_PAGES / 64; w++) {
            mask[w] = atomic_exchange(&s->reusable[w], 0);
            taken += __builtin_popcountll(mask[w]);
        }
        atomic_fetch_sub(&s->n_reusable, taken);
        atomic_fetch_sub(&canon_state.idle_pages, atomic_exchange(&s->n_idle, 0));
        if (!taken)
            continue; /* raced with another taker */
        uint64_t first = canon_span_first_page(s);
        for (unsigned i = 0; i < oscar_canon.span_pages; i++)
            if (canon_mask_has(mask, i))
                claim_page(first + i);
        return s;
    }
}

void canon_span_unreuse_packed(struct span *s, const uint64_t *mask) {
    uint64_t first = canon_span_first_page(s);
    unsigned n = class_slots(s->cls);
    for (unsigned i = 0; i < oscar_canon.span_pages; i++) {
        if (!canon_mask_has(mask, i))
            continue;
        free_page(first + i, n);
        canon_packed_page_reusable(first + i, false);
    }
}

int canon_packed_free_slot(uint64_t page, unsigned slot, unsigned lo, unsigned hi) {
    _Atomic uint64_t *w = oscar_canon.bits[page];
    uint64_t bit = 1ULL << (slot % 64);
    uint64_t now = atomic_fetch_or(&w[slot / 64], bit);
    if (now & bit)
        return -1;
    now |= bit;
    unsigned n = class_slots(canon_span_of(page)->cls);
    int r = 0;
    if (lo / 64 == (hi - 1) / 64) {
        /* The group lies in this word: exactly one free sees it complete. */
        uint64_t g = (hi - lo == 64 ? ~0ULL : ((1ULL << (hi - lo)) - 1)) << (lo % 64);
        r |= (now & g) == g ? PACKED_GROUP_DONE : 0;
    }
    for (unsigned i = 0; i < 4; i++)
        if ((i == slot / 64 ? now : atomic_load(&w[i])) != all_free_word(n, i))
            return r;
    /* Every slot is free. With one word that free was this one; across words two frees
     * can both see it, and the page's flag picks one. */
    if (n <= 64 || !atomic_exchange(&oscar_canon.done[page], 1)) {
        r |= PACKED_PAGE_DONE;
        if (lo == 0 && hi == n)
            r |= PACKED_GROUP_DONE;
    }
    return r;
}

bool canon_slot_is_free(uint64_t page, unsigned slot) {
    return atomic_load(&oscar_canon.bits[page][slot / 64]) >> (slot % 64) & 1;
}

int canon_map_shadow(uintptr_t sh, size_t len, uint64_t first, bool populate) {
    void *src = (void *)(oscar_canon.window + (first << OSCAR_PAGE_SHIFT));
    int err = os_alias(src, len, (void *)sh, populate);
    if (err == ENOMEM) {
        maplimit_on_enomem();
        err = os_alias(src, len, (void *)sh, populate);
    }
    return err;
}

/* Under the program's mlockall(MCL_CURRENT) the window is locked, and the kernel refuses
 * MADV_REMOVE on a locked mapping (EINVAL; as MADV_DONTNEED, but with no _LOCKED variant):
 * no page was ever given back, strict mode's heap stayed at its peak after every free and
 * fast mode's grew without bound (mlockall_free). The hole is then punched in the memfd
 * itself (fallocate, through the window's offsets: the window maps it from offset 0), or,
 * where the descriptor is gone (the program closed it) or there is none (an anonymous
 * shared object), through the window unlocked for the call and locked again. Not by
 * unlocking the window for good: every shadow is a copy of the window's mapping
 * (os_alias) and takes its lock, so the program's objects would no longer be locked. */
void canon_punch(uint64_t first, uint64_t pages) {
    void *at = (void *)(oscar_canon.window + (first << OSCAR_PAGE_SHIFT));
    size_t len = pages << OSCAR_PAGE_SHIFT;
    /* (once refused, straight to the memfd: the refusal would come again) */
    if (!atomic_load_explicit(&canon_state.window_locked, memory_order_relaxed)) {
        if (os_remove(at, len) != EINVAL)
            return;
        atomic_store_explicit(&canon_state.window_locked, true, memory_order_relaxed);
    }
    if (fd_is_ours() && os_punch_hole(oscar_canon.fd, first << OSCAR_PAGE_SHIFT, len) == 0)
        return;
    os_remove_locked(at, len);
}

bool canon_slots_free(uint64_t page, unsigned lo, unsigned hi) {
    for (unsigned i = lo; i < hi; i++)
        if (!(atomic_load(&oscar_canon.bits[page][i / 64]) >> (i % 64) & 1))
            return false;
    return true;
}

bool canon_packed_release(struct span *s, uint32_t n) {
    return atomic_fetch_sub(&s->claimed, n) == n;
}

/* s has no claimed slot and nobody owns or lists it: give its memory back. */
void canon_span_release_memory(struct span *s) {
    canon_punch(canon_span_first_page(s), oscar_canon.span_pages);
    stats_gauge_add(STAT_CANONICAL_BYTES, STAT_PEAK_CANONICAL_BYTES,
                    -(int64_t)oscar_canon.span_pages * (int64_t)OSCAR_PAGE);
    atomic_store(&s->state, SPAN_EMPTY);
    oscar_lock_acquire(&pools_state.empty_pool.lock);
    pool_push(&pools_state.empty_pool, s);
    oscar_lock_release(&pools_state.empty_pool.lock);
}

static uint32_t span_capacity(const struct span *s) {
    return class_slots(s->cls) * oscar_canon.span_pages;
}

/* s is DETACHED and may have free slots: whoever wins the CAS lists it. */
static void span_maybe_pool(struct span *s) {
    uint8_t expect = SPAN_DETACHED;
    if (atomic_load(&s->claimed) >= span_capacity(s))
        return;
    if (!atomic_compare_exchange_strong(&s->state, &expect, SPAN_POOLING))
        return;
    struct pool *p = &pools_state.class_pools[s->cls];
    oscar_lock_acquire(&p->lock);
    if (atomic_load(&s->claimed) == 0) {
        /* Everything was freed while it was detached. */
        oscar_lock_release(&p->lock);
        canon_span_release_memory(s);
        return;
    }
    pool_push(p, s);
    atomic_store(&s->state, SPAN_POOLED);
    oscar_lock_release(&p->lock);
}

void canon_span_detach(struct span *s) {
    atomic_store(&s->state, SPAN_DETACHED);
    span_maybe_pool(s);
}

int canon_claim_slot(uint64_t page) {
    _Atomic uint64_t *w = oscar_canon.bits[page];
    for (unsigned i = 0; i < 4; i++) {
        uint64_t v = atomic_load_explicit(&w[i], memory_order_relaxed);
        while (v) {
            unsigned b = (unsigned)__builtin_ctzll(v);
            if (atomic_compare_exchange_weak_explicit(&w[i], &v, v & (v - 1),
                                                      memory_order_acquire,
                                                      memory_order_relaxed))
                return (int)(i * 64 + b);
        }
    }
    return -1;
}

void canon_release_slot(uint64_t page, unsigned slot) {
    struct span *s = canon_span_of(page);
    atomic_fetch_or(&oscar_canon.bits[page][slot / 64], 1ULL << (slot % 64));
    uint32_t left = atomic_fetch_sub(&s->claimed, 1) - 1;
    uint8_t state = atomic_load(&s->state);
    if (state == SPAN_DETACHED) {
        span_maybe_pool(s);
    } else if (state == SPAN_POOLED && left == 0) {
        struct pool *p = &pools_state.class_pools[s->cls];
        oscar_lock_acquire(&p->lock);
        /* Re-check under the lock: only an owner (which needs this lock to take the span
         * from the pool) can raise `claimed` again. */
        bool release = atomic_load(&s->state) == SPAN_POOLED && atomic_load(&s->claimed) == 0;
        if (release) {
            pool_unlink(p, s);
            atomic_store(&s->state, SPAN_EMPTY);
        }
        oscar_lock_release(&p->lock);
        if (release)
            canon_span_release_memory(s);
    }
}

void canon_lock_all(void) {
    for (unsigned c = 0; c < NUM_CLASSES; c++)
        oscar_lock_acquire(&pools_state.class_pools[c].lock);
    oscar_lock_acquire(&pools_state.empty_pool.lock);
    for (unsigned c = 0; c < NUM_CLASSES; c++)
        oscar_lock_acquire(&pools_state.reuse_pools[c].lock);
}

void canon_unlock_all(void) {
    for (unsigned c = NUM_CLASSES; c-- > 0;)
        oscar_lock_release(&pools_state.reuse_pools[c].lock);
    oscar_lock_release(&pools_state.empty_pool.lock);
    for (unsigned c = NUM_CLASSES; c-- > 0;)
        oscar_lock_release(&pools_state.class_pools[c].lock);
}

uint64_t canon_unused(void) {
    uint64_t nspans = atomic_load(&oscar_canon.max_pages) / oscar_canon.span_pages;
    uint64_t used = atomic_load(&oscar_canon.next_span);
    return used < nspans ? (nspans - used) * oscar_canon.span_pages << OSCAR_PAGE_SHIFT : 0;
}

/* Unmap the whole pages of [lo, hi). */
static void unmap_inside(uintptr_t lo, uintptr_t hi) {
    lo = align_up(lo, OSCAR_PAGE);
    hi &= ~(OSCAR_PAGE - 1);
    if (hi > lo)
        os_unmap((void *)lo, hi - lo);
}

void canon_shrink(uint64_t keep) {
    uint64_t old = atomic_load(&oscar_canon.max_pages), pages;
    do {
        uint64_t used = atomic_load(&oscar_canon.next_span);
        pages = (used + keep / ((uint64_t)oscar_canon.span_pages << OSCAR_PAGE_SHIFT)) *
                oscar_canon.span_pages;
        if (pages >= old)
            return;
        atomic_store(&oscar_canon.max_pages, pages);
    } while (atomic_load(&oscar_canon.next_span) * oscar_canon.span_pages > pages);
    os_unmap((void *)(oscar_canon.window + (pages << OSCAR_PAGE_SHIFT)),
             (old - pages) << OSCAR_PAGE_SHIFT);
    unmap_inside((uintptr_t)&oscar_canon.bits[pages], (uintptr_t)&oscar_canon.bits[old]);
    unmap_inside((uintptr_t)&oscar_canon.done[pages], (uintptr_t)&oscar_canon.done[old]);
    unmap_inside((uintptr_t)&oscar_canon.taken[pages], (uintptr_t)&oscar_canon.taken[old]);
    unmap_inside((uintptr_t)&oscar_canon.spans[pages / oscar_canon.span_pages],
                 (uintptr_t)&oscar_canon.spans[old / oscar_canon.span_pages]);
    if (fd_is_ours())
        os_ftruncate(oscar_canon.fd, pages << OSCAR_PAGE_SHIFT);
}

/* ---- fork (export/fork.c). The child gets a private copy of the canonical heap, made
 * before fork while every other thread is parked: a new memfd (or, without a descriptor or
 * under a small RLIMIT_FSIZE, a new anonymous shared object) mapped at `copy`. The child
 * moves it over its window and aliases its shadows from there; no descriptor is needed. */
static struct {
    int fd;            /* the copy's memfd, or -1 */
    uint64_t dev, ino; /* its identity */
    uintptr_t map;     /* where it is mapped in the parent */
} copy_state = {-1, 0, 0, 0}; /* (written by the forking thread, the world stopped) */

static bool all_zero(const uint64_t *w, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (w[i])
            return false;
    return true;
}

/* The heap's descriptor is gone: copy the spans in use page by page from the window. Pages
 * that read as zeros stay holes in the copy_state. (Reading a hole faults a page into the heap;
 * it is not punched again: a thread the stop missed could be writing to it.) */
static void copy_from_window(void) {
    uint64_t nspans = oscar_canon.max_pages / oscar_canon.span_pages;
    uint64_t used = atomic_load(&oscar_canon.next_span);
    if (used > nspans)
        used = nspans;
    for (uint64_t sp = 0; sp < used; sp++) {
        if (atomic_load(&oscar_canon.spans[sp].state) == SPAN_EMPTY)
            continue;
        uint64_t first = sp * oscar_canon.span_pages;
        for (uint64_t pg = first; pg < first + oscar_canon.span_pages; pg++) {
            const uint64_t *from = (const uint64_t *)(oscar_canon.window + (pg << OSCAR_PAGE_SHIFT));
            if (all_zero(from, OSCAR_PAGE / 8))
                continue;
            uint64_t *to = (uint64_t *)(copy_state.map + (pg << OSCAR_PAGE_SHIFT));
            for (size_t i = 0; i < OSCAR_PAGE / 8; i++)
                to[i] = from[i];
        }
    }
}

/* Copy [0, len) of the heap's memfd into the copy, data ranges only. */
static int copy_from_fd(uint64_t len) {
    if (copy_state.fd >= 0)
        return os_copy_file(oscar_canon.fd, copy_state.fd, len);
    for (uint64_t pos = 0, data, hole; pos < len; pos = hole) {
        int err = os_next_data(oscar_canon.fd, pos, &data, &hole);
        if (err == ENXIO)
            return 0;
        if (err)
            return err;
        if (data >= len)
            return 0;
        if (hole > len)
            hole = len;
        if ((err = os_pread_all(oscar_canon.fd, (void *)(copy_state.map + data), hole - data, data)))
            return err;
    }
    return 0;
}

/* The copy for the child did not fit under a finite RLIMIT_AS (a shell's `ulimit -v`: the
 * window was sized when the limit was lowered, before the program's own mappings grew, and
 * bash under `ulimit -v 1000000` failed 1 fork in 12): give back the window's unused top so
 * that window and copy fit, with 16 MiB to spare. True when it shrank. */
static bool fit_copy(void) {
    uint64_t limit, vm, margin = 16ULL << 20;
    if (os_rlimit(RLIMIT_AS, &limit) != 0 || limit == UINT64_MAX ||
        os_status_bytes("VmSize:", &vm) != 0 || vm + margin >= limit)
        return false;
    uint64_t window = atomic_load(&oscar_canon.max_pages) << OSCAR_PAGE_SHIFT;
    uint64_t used = atomic_load(&oscar_canon.next_span) * oscar_canon.span_pages << OSCAR_PAGE_SHIFT;
    uint64_t want = (limit - margin - vm + window) / 2; /* the window, its copy beside it */
    if (want >= window || want <= used)
        return false;
    canon_shrink(want - used);
    return (atomic_load(&oscar_canon.max_pages) << OSCAR_PAGE_SHIFT) < window;
}

int canon_fork_prepare(void) {
    uint64_t bytes = oscar_canon.max_pages << OSCAR_PAGE_SHIFT;
    int err = open_heap(bytes, &copy_state.fd, &copy_state.dev, &copy_state.ino, &copy_state.map);
    if (err == ENOMEM && fit_copy()) {
        bytes = oscar_canon.max_pages << OSCAR_PAGE_SHIFT;
        err = open_heap(bytes, &copy_state.fd, &copy_state.dev, &copy_state.ino, &copy_state.map);
    }
    if (err)
        return err;
    uint64_t used = atomic_load(&oscar_canon.next_span) * oscar_canon.span_pages;
    if (used > oscar_canon.max_pages)
        used = oscar_canon.max_pages;
    if (fd_is_ours())
        err = copy_from_fd(used << OSCAR_PAGE_SHIFT);
    else
        copy_from_window();
    if (err)
        canon_fork_parent();
    return err;
}

void canon_fork_parent(void) {
    if (copy_state.map)
        os_unmap((void *)copy_state.map, oscar_canon.max_pages << OSCAR_PAGE_SHIFT);
    if (copy_state.fd >= 0)
        os_close(copy_state.fd);
    copy_state.map = 0;
    copy_state.fd = -1;
}

int canon_fork_child(void) {
    int err = os_move_mapping((void *)copy_state.map, oscar_canon.max_pages << OSCAR_PAGE_SHIFT,
                              (void *)oscar_canon.window);
    if (err)
        return err;
    if (fd_is_ours())
        os_close(oscar_canon.fd); /* the parent's heap */
    oscar_canon.fd = copy_state.fd;
    oscar_canon.fd_dev = copy_state.dev;
    oscar_canon.fd_ino = copy_state.ino;
    copy_state.map = 0;
    copy_state.fd = -1;
    /* The copy was mapped left out of core dumps whole: the used part is dumpable again. */
    uint64_t dump = atomic_load(&canon_state.dump_pages);
    if (dump)
        os_dump((void *)oscar_canon.window, dump << OSCAR_PAGE_SHIFT, true);
    return 0;
}

int canon_fork_child_map(uintptr_t sh, size_t len, uint64_t first) {
    return os_alias((void *)(oscar_canon.window + (first << OSCAR_PAGE_SHIFT)), len, (void *)sh, 0);
}
