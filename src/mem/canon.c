/* canon: see canon.h.
 *
 * Ordering between the owner of a span and threads freeing into it (Dekker style, all
 * seq_cst): a freer sets the slot bit, decrements `claimed`, then reads `state`; an owner
 * letting go stores DETACHED, then reads `claimed`. At least one of them sees the other,
 * so a span with free slots is never left detached and unlisted. */
#include "mem/canon.h"
#include "mem/maplimit.h"
#include "base/options.h"
#include "os/os.h"
#include "base/size_class.h"
#include "base/stats.h"

#include <errno.h>

struct canon oscar_canon;

struct pool {
    oscar_lock lock;
    struct span *head;
};
static struct pool class_pools[NUM_CLASSES];
static struct pool empty_pool; /* punched spans ready for any class */
/* Packed reuse spans with enough reusable pages to be worth a new mapping, per class. */
static struct pool reuse_pools[NUM_CLASSES];

/* A span is offered for reuse once this many of its pages are reusable: a new mapping, a
 * guard call for the pages still in use and a populate call then serve them all. */
#define REUSE_MIN_PAGES(span_pages) ((span_pages) >= 16 ? (span_pages) / 4 : 1)
/* Reusable pages whose memory is kept for the next objects (not punched and zeroed
 * again), over the whole process: OSCAR_KEEP_FREED_MIB. */
static int64_t idle_max_pages;
static _Atomic int64_t idle_pages;

/* For stats: physical memory counted once, not once per shadow alias. */
static int canon_resident(uint64_t *bytes) { return os_file_resident(oscar_canon.fd, bytes); }

int canon_init(void) {
    int err = os_memfd("oscar-canonical-heap", &oscar_canon.fd);
    if (err)
        return err;
    stats_set_resident_hook(canon_resident);
    for (unsigned c = 0; c < NUM_CLASSES; c++) {
        oscar_lock_init(&class_pools[c].lock, LOCK_CLASS_POOL);
        oscar_lock_init(&reuse_pools[c].lock, LOCK_REUSE_POOL);
    }
    oscar_lock_init(&empty_pool.lock, LOCK_EMPTY_POOL);
    oscar_canon.span_pages = (unsigned)options_int(OPT_RUN_PAGES);
    if (oscar_canon.span_pages > 1 && !(oscar_canon.span_pages & (oscar_canon.span_pages - 1)))
        oscar_canon.span_shift = (unsigned)__builtin_ctz(oscar_canon.span_pages);
    idle_max_pages = (int64_t)options_int(OPT_KEEP_FREED_MIB) << (20 - OSCAR_PAGE_SHIFT);
    /* The memfd is sparse: its size costs nothing until pages are touched. */
    uint64_t bytes = 1ULL << 40;
    while (bytes >= (1ULL << 30) && os_ftruncate(oscar_canon.fd, bytes) != 0)
        bytes >>= 1;
    if (bytes < (1ULL << 30))
        return 12;
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

/* A span nobody uses: from the empty pool, else never used before; NULL when exhausted. */
static struct span *take_unused_span(void) {
    struct span *s = NULL;
    oscar_lock_acquire(&empty_pool.lock);
    if (empty_pool.head) {
        s = empty_pool.head;
        pool_unlink(&empty_pool, s);
    }
    oscar_lock_release(&empty_pool.lock);
    if (!s) {
        uint64_t nspans = oscar_canon.max_pages / oscar_canon.span_pages;
        uint64_t id = atomic_fetch_add(&oscar_canon.next_span, 1);
        if (id >= nspans)
            return NULL;
        s = &oscar_canon.spans[id];
    }
    stats_gauge_add(STAT_CANONICAL_BYTES, STAT_PEAK_CANONICAL_BYTES,
                    (int64_t)oscar_canon.span_pages * (int64_t)OSCAR_PAGE);
    return s;
}

struct span *canon_span_acquire(unsigned cls) {
    struct pool *p = &class_pools[cls];
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
    if (atomic_fetch_add(&idle_pages, 1) < idle_max_pages)
        return true;
    atomic_fetch_sub(&idle_pages, 1);
    return false;
}

void canon_idle_unreserve(void) { atomic_fetch_sub(&idle_pages, 1); }

void canon_packed_page_reusable(uint64_t page, bool idle) {
    struct span *s = canon_span_of(page);
    if (idle)
        atomic_fetch_add(&s->n_idle, 1);
    unsigned i = (unsigned)(page - canon_span_first_page(s));
    atomic_fetch_or(&s->reusable[i / 64], 1ULL << (i % 64));
    int32_t n = atomic_fetch_add(&s->n_reusable, 1) + 1;
    if (n >= (int32_t)REUSE_MIN_PAGES(oscar_canon.span_pages) &&
        !atomic_exchange(&s->in_reuse_pool, 1)) {
        struct pool *p = &reuse_pools[s->cls];
        oscar_lock_acquire(&p->lock);
        pool_push(p, s);
        oscar_lock_release(&p->lock);
    }
}

struct span *canon_span_reuse_packed(unsigned cls, uint64_t *mask) {
    struct pool *p = &reuse_pools[cls];
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
        atomic_fetch_sub(&idle_pages, atomic_exchange(&s->n_idle, 0));
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
    int err = os_map_shadow((void *)sh, len, oscar_canon.fd, first << OSCAR_PAGE_SHIFT, populate);
    if (err == ENOMEM) {
        maplimit_on_enomem();
        err = os_map_shadow((void *)sh, len, oscar_canon.fd, first << OSCAR_PAGE_SHIFT, populate);
    }
    return err;
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
    uint64_t first = canon_span_first_page(s);
    os_punch_hole(oscar_canon.fd, first << OSCAR_PAGE_SHIFT,
                  (uint64_t)oscar_canon.span_pages << OSCAR_PAGE_SHIFT);
    stats_gauge_add(STAT_CANONICAL_BYTES, STAT_PEAK_CANONICAL_BYTES,
                    -(int64_t)oscar_canon.span_pages * (int64_t)OSCAR_PAGE);
    atomic_store(&s->state, SPAN_EMPTY);
    oscar_lock_acquire(&empty_pool.lock);
    pool_push(&empty_pool, s);
    oscar_lock_release(&empty_pool.lock);
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
    struct pool *p = &class_pools[s->cls];
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
        struct pool *p = &class_pools[s->cls];
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
        oscar_lock_acquire(&class_pools[c].lock);
    oscar_lock_acquire(&empty_pool.lock);
    for (unsigned c = 0; c < NUM_CLASSES; c++)
        oscar_lock_acquire(&reuse_pools[c].lock);
}

void canon_unlock_all(void) {
    for (unsigned c = NUM_CLASSES; c-- > 0;)
        oscar_lock_release(&reuse_pools[c].lock);
    oscar_lock_release(&empty_pool.lock);
    for (unsigned c = NUM_CLASSES; c-- > 0;)
        oscar_lock_release(&class_pools[c].lock);
}

int canon_copy_for_child(int *new_fd) {
    int fd, err = os_memfd("oscar-canonical-heap", &fd);
    if (err)
        return err;
    uint64_t bytes = oscar_canon.max_pages << OSCAR_PAGE_SHIFT;
    err = os_ftruncate(fd, bytes);
    if (!err) {
        uint64_t used = atomic_load(&oscar_canon.next_span) * oscar_canon.span_pages;
        err = os_copy_file(oscar_canon.fd, fd, used << OSCAR_PAGE_SHIFT);
    }
    if (err) {
        os_close(fd);
        return err;
    }
    *new_fd = fd;
    return 0;
}
