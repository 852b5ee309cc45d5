/* protect_heap: see protect_heap.h.
 *
 * Ordering between a page's owner letting it go and the mark releasing slots into it (Dekker
 * style, seq_cst): the mark sets released bits, then reads `own`; the owner stores FULL, then
 * reads the released bits. At least one sees the other, so a page with released slots is
 * never left unowned and unpooled. */
#define _GNU_SOURCE
#include "heap/protect_heap.h"
#include "base/lock.h"
#include "base/fmt.h"
#include "base/messages.h"
#include "base/options.h"
#include "base/stats.h"
#include "os/os.h"
#include "report/report.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>

struct ph_heap ph;

/* ---------------------------------------------------------------------------------------
 * Per-thread caches. */
struct ph_cls {
    uint64_t bits;  /* free slots of the current page's word `word`, taken from local[] */
    uint32_t word, size;
    uintptr_t base;
    _Atomic uint16_t *slots;
    struct ph_page *page;
};

enum { TC_EMPTY, TC_LIVE, TC_DEAD, TC_FALLBACK };
struct ph_tc {
    struct ph_cls cls[PH_NUM_CLASSES];
    int state;
    int64_t live, quar; /* not yet folded into live_bytes / quar_bytes */
    uint64_t n_alloc, n_free, n_large, n_realloc;
    /* 1 + the interval between marks (ph_state.interval) in which this thread last folded
     * freed bytes: counted once in ph_state.freers per interval */
    uint32_t freed_in;
    struct ph_tc *next;
};

/* Free runs of pages: lists by length (1..RUN_LISTS-1), list 0 for longer runs. */
#define RUN_LISTS 64
#define COMMIT_PAGES 1024      /* 64 MiB: one system call commits this much */

/* protect_heap's state (the heap's layout is ph, in protect_heap.h; ph_tc and attaching,
 * below, are per thread). The tables are in ph_table_state, all zero (.bss). */
static struct {
    size_t committed_pages; /* under PAGE_LOCK */
    /* Quarantine and live bytes, over the whole process (threads fold theirs in batches):
     * atomic, lock-free. */
    _Atomic int64_t quar_bytes;  /* bytes in QUAR slots */
    _Atomic int64_t held_bytes;  /* of those, found still referenced by the last mark */
    _Atomic int64_t quar_dropped; /* of quar_bytes, large objects given back at free */
    _Atomic int64_t held_dropped; /* of those, found still referenced by the last mark */
    _Atomic int64_t live_bytes;  /* bytes of LIVE slots and large objects */
    /* Bytes the last mark read (the live heap and every root: ph_mark_read), 0 before the
     * first: written by the marking thread, read by any (atomic, relaxed). */
    _Atomic int64_t mark_read;
    /* The quarantine's trigger, fold threshold and cap: set once at init. */
    int64_t trigger_floor, trigger_share, fold_at, hard_cap;
    /* The threads that folded freed bytes since the last mark ended (each may hold a floor:
     * quarantine_and_trigger), and which interval between marks this is (ph_after_mark
     * counts them): atomic, any thread. */
    _Atomic uint32_t freers, interval;
    /* The threads the last mark's stop parked (ph_after_mark; atomic, any thread reads) */
    _Atomic size_t stopped;
    /* Thread caches. The fallback cache (set once at init; used under fallback_lock), the
     * live and the free ones (under registry_lock); exit_key set once at init. */
    struct ph_tc *fallback_tc;
    oscar_lock fallback_lock;
    oscar_lock registry_lock;
    struct ph_tc *live_tcs, *free_tcs;
    pthread_key_t exit_key;
    /* Thread caches are carved from the metadata reservation (not roots of the mark): the
     * next and the end, under PAGE_LOCK (tc_end set once at init). */
    uintptr_t tc_next, tc_end;
    /* A dead thread's cache: its address marks a thread that has exited (never written). */
    struct ph_tc dead_tc;
    _Atomic uint64_t next_mark_ns; /* pacing: the next mark's monotonic time (atomic) */
    /* After marks that could not stop the world (a thread of the program blocks the park
     * signal with a raw system call): none tried before retry_ns, the wait doubling with
     * each failure in a row (`failures`). Written by the marking thread, read by any:
     * atomic. */
    _Atomic uint64_t retry_ns;
    _Atomic uint32_t failures;
    atomic_int warned;  /* warn_cap said it: atomic exchange, once */
} ph_state = {.fallback_lock = OSCAR_LOCK_INIT(FALLBACK_CACHE),
              .registry_lock = OSCAR_LOCK_INIT(THREAD_REGISTRY),
              .dead_tc = {.state = TC_DEAD}};

static struct {
    /* Size classes: 16..128 by 16, then four per power of two up to 32 KiB (set once at
     * init: classes_init). */
    uint32_t class_bytes[PH_NUM_CLASSES];
    /* Locks: locks[0] guards the page allocator (bump, commit, free runs); locks[1 + c] the
     * pool of class c. One array, so fork takes them in address order (base/lock.h). Ranked
     * once at init. */
    oscar_lock locks[1 + PH_NUM_CLASSES];
    struct ph_page *pools[PH_NUM_CLASSES]; /* pools[c] under locks[1 + c] */
    struct ph_page *runs[RUN_LISTS];       /* under PAGE_LOCK */
    /* A new thread's cache: its address says the thread has none yet (never written). */
    struct ph_tc empty_tc;
} ph_table_state;
#define PAGE_LOCK (&ph_table_state.locks[0])

/* ---------------------------------------------------------------------------------------
 * Size classes. */

static inline unsigned class_of(size_t size) {
    if (size <= 128)
        return size ? (unsigned)((size - 1) >> 4) : 0;
    unsigned b = 63 - (unsigned)__builtin_clzl(size - 1); /* >= 7 */
    return 8 + (b - 7) * 4 + (unsigned)((size - 1) >> (b - 2)) - 4;
}

static void classes_init(void) {
    for (unsigned k = 0; k < PH_NUM_CLASSES; k++) {
        if (k < 8) {
            ph_table_state.class_bytes[k] = 16 * (k + 1);
        } else {
            unsigned b = 7 + (k - 8) / 4, m = 4 + (k - 8) % 4;
            ph_table_state.class_bytes[k] = (m + 1) << (b - 2);
        }
    }
}

/* The smallest class >= size whose slots are all aligned to align (<= 32 KiB), or -1. */
static int class_aligned(size_t size, size_t align) {
    for (unsigned k = class_of(size); k < PH_NUM_CLASSES; k++)
        if (ph_table_state.class_bytes[k] % align == 0)
            return (int)k;
    return -1;
}

static inline struct ph_meta *meta_of(size_t i) { return &ph.meta[i]; }

/* Word w of a free-slot bitmap with every one of nslots slots set. */
static inline uint64_t all_slots(uint32_t nslots, unsigned w) {
    uint32_t left = nslots - w * 64;
    return left >= 64 ? ~0ULL : (1ULL << left) - 1;
}
static inline size_t page_no(const struct ph_page *pg) { return (size_t)(pg - ph.pages); }

static __thread struct ph_tc *ph_tc __attribute__((tls_model("initial-exec"))) =
    &ph_table_state.empty_tc;
static __thread int attaching __attribute__((tls_model("initial-exec")));
static int threads_init(void);

/* ---------------------------------------------------------------------------------------
 * Init. */

#define TC_BYTES (64UL << 20) /* the thread caches' reservation */

/* The heap's size: OSCAR_PROTECT_HEAP_GIB, at most half of a finite RLIMIT_AS, and with its
 * metadata (read-write, private: a finite RLIMIT_DATA counts all of it, touched or not; a
 * `ulimit -d` of 1 GB made every program fail at its first malloc) at most a quarter of a
 * finite RLIMIT_DATA. */
static size_t heap_bytes(void) {
    size_t want = (size_t)options_int(OPT_PROTECT_HEAP_GIB) << 30;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 < want)
        want = (size_t)(rl.rlim_cur / 2) & ~(PH_PAGE - 1);
    if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        /* per heap page: its descriptor, its block, and two words of the mark's filter per KiB */
        size_t per_page = sizeof(struct ph_page) + sizeof(struct ph_meta) + 2 * PH_PAGE / 128;
        size_t room = rl.rlim_cur / 4 > TC_BYTES ? rl.rlim_cur / 4 - TC_BYTES : 0;
        size_t cap = room / per_page << PH_PAGE_SHIFT;
        if (cap < want)
            want = cap < (64UL << 20) ? (64UL << 20) : cap;
    }
    return want;
}

int protect_heap_init(void) {
    classes_init();
    for (unsigned i = 0; i < 1 + PH_NUM_CLASSES; i++)
        oscar_lock_init(&ph_table_state.locks[i], LOCK_PROTECT);
    int err = 0;
    size_t bytes = heap_bytes();
    void *lo = NULL;
    while (bytes >= (64UL << 20)) {
        /* Two pages more: the heap begins on a page boundary with at least a page of the
         * reservation below it (PROT_NONE: a read below the first object faults and is
         * reported, protect_reports.c). Rounding up alone left none when the kernel's
         * address was already aligned (1 time in 16), and the metadata mapped next lay
         * right below: test_access_below_object[2000000-64-protect] read 0 there. */
        lo = os_reserve(bytes + 2 * PH_PAGE, &err);
        if (lo)
            break;
        bytes >>= 1;
    }
    if (!lo)
        return err ? err : ENOMEM;
    ph.lo = align_up((uintptr_t)lo + 1, PH_PAGE);
    ph.hi = ph.lo + bytes;
    size_t npages = bytes >> PH_PAGE_SHIFT;
    size_t desc = align_up(npages * sizeof(struct ph_page), OSCAR_PAGE);
    size_t meta = npages * sizeof(struct ph_meta);
    size_t tcs = TC_BYTES;
    size_t cand = bytes / (16 * 8);
    char *m = os_alloc_meta(desc + meta + tcs + 2 * cand, &err);
    if (!m)
        return err;
    ph.pages = (struct ph_page *)m;
    ph.meta = (struct ph_meta *)(m + desc);
    ph.meta_lo = (uintptr_t)m;
    ph.meta_hi = (uintptr_t)m + desc + meta + tcs + 2 * cand;
    ph_state.tc_next = (uintptr_t)m + desc + meta;
    ph_state.tc_end = ph_state.tc_next + tcs;
    ph.cand = (_Atomic uint64_t *)ph_state.tc_end; /* 2 * cand bytes: see protect_heap.h */
    ph_state.trigger_floor = (int64_t)options_int(OPT_QUARANTINE_FLOOR_KIB) << 10;
    ph_state.trigger_share = options_int(OPT_QUARANTINE_SHARE);
    ph_state.fold_at = ph_state.trigger_floor < (64 << 10)
                           ? (ph_state.trigger_floor > 0 ? ph_state.trigger_floor : 1)
                           : (64 << 10);
    ph_state.hard_cap = (int64_t)options_int(OPT_QUARANTINE_CAP_MIB) << 20;
    return threads_init();
}

/* ---------------------------------------------------------------------------------------
 * The page allocator: runs of pages from free runs (coalesced) or the bump. */

static void run_unlink(struct ph_page *h) {
    size_t n = h->run;
    struct ph_page **list = &ph_table_state.runs[n < RUN_LISTS ? n : 0];
    if (h->prev)
        h->prev->next = h->next;
    else
        *list = h->next;
    if (h->next)
        h->next->prev = h->prev;
    h->next = h->prev = NULL;
}

/* [i, i+n) becomes one free run (with its neighbours). Under PAGE_LOCK. */
static void run_insert(size_t i, size_t n) {
    for (size_t j = i; j < i + n; j++) {
        ph.pages[j].cls = 0;
        atomic_store_explicit(&ph.pages[j].kind, PHK_FREE_RUN, memory_order_release);
    }
    if (i > 0 && atomic_load_explicit(&ph.pages[i - 1].kind, memory_order_relaxed) == PHK_FREE_RUN) {
        struct ph_page *t = &ph.pages[i - 1];
        size_t h = t->cls == 1 ? i - 1 : i - 1 - t->run; /* cls: 1 head, 2 last page */
        run_unlink(&ph.pages[h]);
        n += i - h;
        i = h;
    }
    size_t used = atomic_load_explicit(&ph.used_pages, memory_order_relaxed);
    if (i + n < used &&
        atomic_load_explicit(&ph.pages[i + n].kind, memory_order_relaxed) == PHK_FREE_RUN) {
        struct ph_page *r = &ph.pages[i + n];
        size_t m = r->run;
        run_unlink(r);
        r->cls = 0;
        n += m;
    }
    for (size_t j = i + 1; j + 1 < i + n; j++)
        ph.pages[j].cls = 0; /* (interior pages of merged runs: no stale tags) */
    struct ph_page *h = &ph.pages[i];
    if (n > 1) {
        ph.pages[i + n - 1].cls = 2;
        ph.pages[i + n - 1].run = (uint32_t)(n - 1);
    }
    h->cls = 1;
    h->run = (uint32_t)n;
    struct ph_page **list = &ph_table_state.runs[n < RUN_LISTS ? n : 0];
    h->prev = NULL;
    h->next = *list;
    if (*list)
        (*list)->prev = h;
    *list = h;
}

/* Take [i, i+n) out of the free run headed by h (length >= n); the rest stays free. */
static size_t run_take(struct ph_page *h, size_t n) {
    size_t i = page_no(h), len = h->run;
    run_unlink(h);
    h->cls = 0;
    if (len > 1)
        ph.pages[i + len - 1].cls = 0;
    /* The pages taken are no free run any more (before the rest is inserted: it must not
     * merge them back; nor may a release next to them before the caller sets their kind). */
    for (size_t j = i; j < i + n; j++)
        atomic_store_explicit(&ph.pages[j].kind, PHK_UNUSED, memory_order_relaxed);
    if (len > n)
        run_insert(i + n, len - n);
    return i;
}

/* n pages (page index), or (size_t)-1 when the heap is used up. */
static size_t pages_alloc(size_t n) {
    oscar_lock_acquire(PAGE_LOCK);
    struct ph_page *h = NULL;
    for (size_t l = n; l < RUN_LISTS && !h; l++)
        h = ph_table_state.runs[l];
    if (!h)
        for (struct ph_page *r = ph_table_state.runs[0]; r && !h; r = r->next)
            if (r->run >= n)
                h = r;
    size_t i;
    if (h) {
        i = run_take(h, n);
    } else {
        i = atomic_load_explicit(&ph.used_pages, memory_order_relaxed);
        size_t max = (ph.hi - ph.lo) >> PH_PAGE_SHIFT;
        if (n > max - i) {
            oscar_lock_release(PAGE_LOCK);
            return (size_t)-1;
        }
        if (i + n > ph_state.committed_pages) {
            size_t want = align_up(i + n - ph_state.committed_pages, COMMIT_PAGES);
            if (want > max - ph_state.committed_pages)
                want = max - ph_state.committed_pages;
            int err = os_map_private((void *)ph_page_base(ph_state.committed_pages),
                                     want << PH_PAGE_SHIFT, false);
            if (err) {
                oscar_lock_release(PAGE_LOCK);
                return (size_t)-1;
            }
            ph_state.committed_pages += want;
        }
        atomic_store_explicit(&ph.used_pages, i + n, memory_order_release);
    }
    for (size_t j = i; j < i + n; j++)
        ph.pages[j].freed_head = 0;
    oscar_lock_release(PAGE_LOCK);
    return i;
}

/* ---------------------------------------------------------------------------------------
 * Thread caches. */

static struct ph_tc *tc_new(void) {
    size_t sz = align_up(sizeof(struct ph_tc), 64);
    oscar_lock_acquire(PAGE_LOCK);
    uintptr_t p = ph_state.tc_next;
    if (ph_state.tc_end - ph_state.tc_next >= sz)
        ph_state.tc_next += sz;
    else
        p = 0;
    oscar_lock_release(PAGE_LOCK);
    return (struct ph_tc *)p; /* (metadata pages are zero when fresh) */
}

/* The pool of class c: a list of pages with free slots and no owner, doubly linked (the mark
 * takes a page that became wholly free out of the middle: pool_take_empty). */
static void pool_push(unsigned c, struct ph_page *pg) {
    oscar_lock_acquire(&ph_table_state.locks[1 + c]);
    atomic_store(&pg->own, PHO_POOLED);
    pg->prev = NULL;
    pg->next = ph_table_state.pools[c];
    if (pg->next)
        pg->next->prev = pg;
    ph_table_state.pools[c] = pg;
    oscar_lock_release(&ph_table_state.locks[1 + c]);
}

static void pool_unlink(unsigned c, struct ph_page *pg) {
    if (pg->prev)
        pg->prev->next = pg->next;
    else
        ph_table_state.pools[c] = pg->next;
    if (pg->next)
        pg->next->prev = pg->prev;
    pg->next = pg->prev = NULL;
}

static struct ph_page *pool_pop(unsigned c) {
    if (!__atomic_load_n(&ph_table_state.pools[c], __ATOMIC_RELAXED))
        return NULL;
    oscar_lock_acquire(&ph_table_state.locks[1 + c]);
    struct ph_page *pg = ph_table_state.pools[c];
    if (pg) {
        pool_unlink(c, pg);
        atomic_store(&pg->own, PHO_CURRENT);
    }
    oscar_lock_release(&ph_table_state.locks[1 + c]);
    return pg;
}

static bool any_released(const struct ph_meta *m, unsigned nwords) {
    for (unsigned w = 0; w < nwords; w++)
        if (atomic_load_explicit(&m->released[w], memory_order_seq_cst))
            return true;
    return false;
}

/* Move the page's released slots into the owner's bitmap. */
static bool harvest(struct ph_meta *m, unsigned nwords) {
    bool any = false;
    for (unsigned w = 0; w < nwords; w++) {
        if (!atomic_load_explicit(&m->released[w], memory_order_relaxed))
            continue;
        m->local[w] |= atomic_exchange_explicit(&m->released[w], 0, memory_order_acquire);
        any = true;
    }
    return any;
}

/* The owner lets its current page of a class go: to the pool if it has free slots, else
 * FULL (the mark pools it when it releases a slot there). */
static void page_let_go(struct ph_cls *k, unsigned c) {
    struct ph_page *pg = k->page;
    if (!pg)
        return;
    size_t i = page_no(pg);
    struct ph_meta *m = meta_of(i);
    if (k->bits)
        m->local[k->word] |= k->bits;
    k->bits = 0;
    k->page = NULL;
    bool has = false;
    for (unsigned w = 0; w < pg->nwords && !has; w++)
        has = m->local[w] != 0;
    if (has) {
        pool_push(c, pg);
        return;
    }
    atomic_store(&pg->own, PHO_FULL);
    uint32_t full = PHO_FULL;
    if (any_released(m, pg->nwords) &&
        atomic_compare_exchange_strong(&pg->own, &full, PHO_MOVING))
        pool_push(c, pg);
}

static void tc_fold(struct ph_tc *tc) {
    stats_fold(tc->n_alloc, tc->n_free, tc->n_alloc - tc->n_large, tc->n_large, tc->n_realloc);
    tc->n_alloc = tc->n_free = tc->n_large = tc->n_realloc = 0;
    if (tc->live) {
        atomic_fetch_add_explicit(&ph_state.live_bytes, tc->live, memory_order_relaxed);
        stats_gauge_add(STAT_LIVE_BYTES, STAT_PEAK_LIVE_BYTES, tc->live);
        tc->live = 0;
    }
    if (tc->quar) {
        uint32_t now = atomic_load_explicit(&ph_state.interval, memory_order_relaxed) + 1;
        if (tc->freed_in != now) {
            tc->freed_in = now;
            atomic_fetch_add_explicit(&ph_state.freers, 1, memory_order_relaxed);
        }
        atomic_fetch_add_explicit(&ph_state.quar_bytes, tc->quar, memory_order_relaxed);
        stats_gauge_add(STAT_QUARANTINED_BYTES, STAT_PEAK_QUARANTINED_BYTES, tc->quar);
        tc->quar = 0;
    }
}

static void tc_release_pages(struct ph_tc *tc) {
    for (unsigned c = 0; c < PH_NUM_CLASSES; c++)
        page_let_go(&tc->cls[c], c);
}

static void thread_exit(void *arg) {
    struct ph_tc *tc = arg;
    ph_tc = &ph_state.dead_tc;
    tc_release_pages(tc);
    tc_fold(tc);
    oscar_lock_acquire(&ph_state.registry_lock);
    for (struct ph_tc **p = &ph_state.live_tcs; *p; p = &(*p)->next)
        if (*p == tc) {
            *p = tc->next;
            break;
        }
    tc->state = TC_EMPTY;
    tc->next = ph_state.free_tcs;
    ph_state.free_tcs = tc;
    oscar_lock_release(&ph_state.registry_lock);
}

static int threads_init(void) {
    ph_state.fallback_tc = tc_new();
    if (!ph_state.fallback_tc)
        return ENOMEM;
    ph_state.fallback_tc->state = TC_FALLBACK;
    return pthread_key_create(&ph_state.exit_key, thread_exit);
}

/* The calling thread's cache, attached now if needed; NULL: use the fallback. */
static struct ph_tc *tc_attach(void) {
    struct ph_tc *tc = ph_tc;
    if (tc->state == TC_LIVE)
        return tc;
    if (tc->state == TC_DEAD || attaching)
        return NULL;
    if (atomic_load_explicit(&oscar_init_state, memory_order_acquire) != 2)
        return NULL; /* (initialising: the fallback cache serves) */
    attaching = 1;
    oscar_lock_acquire(&ph_state.registry_lock);
    tc = ph_state.free_tcs;
    if (tc)
        ph_state.free_tcs = tc->next;
    oscar_lock_release(&ph_state.registry_lock);
    if (!tc)
        tc = tc_new();
    if (!tc) {
        attaching = 0;
        return NULL;
    }
    tc->state = TC_LIVE;
    oscar_lock_acquire(&ph_state.registry_lock);
    tc->next = ph_state.live_tcs;
    ph_state.live_tcs = tc;
    oscar_lock_release(&ph_state.registry_lock);
    ph_tc = tc;
    pthread_setspecific(ph_state.exit_key, tc);
    attaching = 0;
    stats_add(STAT_THREADS_STARTED, 1);
    return tc;
}

void ph_fold_all(void) {
    oscar_lock_acquire(&ph_state.registry_lock);
    for (struct ph_tc *tc = ph_state.live_tcs; tc; tc = tc->next)
        tc_fold(tc);
    oscar_lock_release(&ph_state.registry_lock);
    if (ph_state.fallback_tc) {
        oscar_lock_acquire(&ph_state.fallback_lock);
        tc_fold(ph_state.fallback_tc);
        oscar_lock_release(&ph_state.fallback_lock);
    }
}

/* ---------------------------------------------------------------------------------------
 * Small objects. */

static struct ph_page *fresh_small_page(unsigned c) {
    size_t i = pages_alloc(1);
    if (i == (size_t)-1)
        return NULL;
    struct ph_page *pg = &ph.pages[i];
    struct ph_meta *m = meta_of(i);
    uint32_t size = ph_table_state.class_bytes[c];
    uint32_t n = (uint32_t)(PH_PAGE / size);
    pg->cls = (uint8_t)c;
    pg->slot_size = size;
    pg->nslots = n;
    pg->nwords = (n + 63) / 64;
    pg->recip = ((1ULL << 32) + size - 1) / size;
    pg->next = pg->prev = NULL;
    for (uint32_t w = 0; w < pg->nwords; w++) {
        m->local[w] = all_slots(n, w);
        atomic_store_explicit(&m->released[w], 0, memory_order_relaxed);
    }
    memset((void *)m->slot, 0, n * sizeof(m->slot[0]));
    atomic_store_explicit(&pg->own, PHO_CURRENT, memory_order_relaxed);
    atomic_store_explicit(&pg->kind, PHK_SMALL, memory_order_release);
    return pg;
}

/* Refill the class cache's bits. False: out of memory. */
static bool refill(struct ph_cls *k, unsigned c) {
    for (;;) {
        struct ph_page *pg = k->page;
        if (pg) {
            struct ph_meta *m = meta_of(page_no(pg));
            for (unsigned w = 0; w < pg->nwords; w++) {
                if (m->local[w]) {
                    k->bits = m->local[w];
                    m->local[w] = 0;
                    k->word = w;
                    return true;
                }
            }
            if (harvest(m, pg->nwords))
                continue;
            atomic_store(&pg->own, PHO_FULL);
            uint32_t full = PHO_FULL;
            if (any_released(m, pg->nwords) &&
                atomic_compare_exchange_strong(&pg->own, &full, PHO_CURRENT))
                continue;
            k->page = NULL;
        }
        pg = pool_pop(c);
        if (pg) {
            harvest(meta_of(page_no(pg)), pg->nwords);
        } else {
            pg = fresh_small_page(c);
            if (!pg)
                return false;
        }
        k->page = pg;
        k->base = ph_page_base(page_no(pg));
        k->slots = meta_of(page_no(pg))->slot;
        k->size = pg->slot_size;
        k->bits = 0;
    }
}

/* A slot word: state, and the slack between slot and requested size (reports only; a slack
 * too large to keep is kept as 0, the slot's size). */
static inline uint16_t slot_word(unsigned state, size_t slack) {
    return (uint16_t)(state | (slack < 8192 ? slack : 0) << 3);
}

static inline void *pop(struct ph_tc *tc, struct ph_cls *k, size_t size) {
    uint64_t b = k->bits;
    unsigned i = (unsigned)__builtin_ctzll(b);
    k->bits = b & (b - 1);
    unsigned s = k->word * 64 + i;
    /* The class's next slot, fetched for writing now: it was freed a whole quarantine ago
     * and is cold, where glibc hands out what was freed last (churn, 15 runs interleaved:
     * median 1.97 -> 1.73 s, fastest 1.52 -> 1.41 s). */
    if (likely(k->bits)) {
        unsigned next = k->word * 64 + (unsigned)__builtin_ctzll(k->bits);
        __builtin_prefetch((const char *)(k->base + (uintptr_t)next * k->size), 1);
    }
    atomic_store_explicit(&k->slots[s], slot_word(PHS_LIVE, k->size - size),
                          memory_order_relaxed);
    tc->live += k->size;
    tc->n_alloc++;
    return (void *)(k->base + (uintptr_t)s * k->size);
}

static void *small_slow(unsigned c, size_t size) {
    struct ph_tc *tc = tc_attach();
    if (tc) {
        if (tc->live >= (1 << 20))
            tc_fold(tc); /* (a thread that only allocates: the trigger needs its live bytes) */
        if (!tc->cls[c].bits && !refill(&tc->cls[c], c))
            return NULL;
        return pop(tc, &tc->cls[c], size);
    }
    if (!ph_state.fallback_tc)
        return NULL; /* (not initialised and cannot be now) */
    oscar_lock_acquire(&ph_state.fallback_lock);
    void *p = NULL;
    if (ph_state.fallback_tc->cls[c].bits || refill(&ph_state.fallback_tc->cls[c], c))
        p = pop(ph_state.fallback_tc, &ph_state.fallback_tc->cls[c], size);
    oscar_lock_release(&ph_state.fallback_lock);
    return p;
}

static inline void *small_alloc(unsigned c, size_t size) {
    struct ph_tc *tc = ph_tc;
    struct ph_cls *k = &tc->cls[c];
    if (likely(k->bits))
        return pop(tc, k, size);
    return small_slow(c, size);
}

/* ---------------------------------------------------------------------------------------
 * Large objects: a run of pages each, head descriptor holds the state. */

static void count_large(int64_t live) {
    struct ph_tc *tc = tc_attach();
    if (tc) {
        tc->live += live;
        if (live > 0) {
            tc->n_alloc++;
            tc->n_large++;
        }
        return;
    }
    atomic_fetch_add_explicit(&ph_state.live_bytes, live, memory_order_relaxed);
    stats_gauge_add(STAT_LIVE_BYTES, STAT_PEAK_LIVE_BYTES, live);
    if (live > 0)
        stats_fold(1, 0, 0, 1, 0);
}

static void *large_alloc(size_t size, size_t align) {
    if (size > ph.hi - ph.lo)
        return NULL;
    size_t usable = align_up(size, OSCAR_PAGE);
    size_t n = (usable + PH_PAGE - 1) >> PH_PAGE_SHIFT;
    size_t extra = align > PH_PAGE ? (align >> PH_PAGE_SHIFT) - 1 : 0;
    size_t i = pages_alloc(n + extra);
    if (i == (size_t)-1)
        return NULL;
    if (extra) {
        size_t a = (align_up(ph_page_base(i), align) - ph.lo) >> PH_PAGE_SHIFT;
        oscar_lock_acquire(PAGE_LOCK);
        if (a > i)
            run_insert(i, a - i);
        if (i + n + extra > a + n)
            run_insert(a + n, i + n + extra - (a + n));
        oscar_lock_release(PAGE_LOCK);
        i = a;
    }
    struct ph_page *h = &ph.pages[i];
    for (size_t j = 1; j < n; j++) {
        ph.pages[i + j].run = (uint32_t)j;
        atomic_store_explicit(&ph.pages[i + j].kind, PHK_TAIL, memory_order_release);
    }
    h->run = (uint32_t)n;
    h->slot_size = (uint32_t)(usable > UINT32_MAX ? 0 : usable);
    h->large_size = size;
    atomic_store_explicit(&h->lstate, PHS_LIVE, memory_order_relaxed);
    atomic_store_explicit(&h->kind, PHK_LARGE, memory_order_release);
    count_large((int64_t)usable);
    return (void *)ph_page_base(i);
}

static inline size_t large_usable(const struct ph_page *h) {
    return align_up(h->large_size, OSCAR_PAGE);
}

/* ---------------------------------------------------------------------------------------
 * Lookup for free and reports. */

struct found {
    struct ph_page *pg;
    size_t page;
    unsigned slot;
    uintptr_t start;
    size_t slot_bytes; /* usable */
    unsigned state;    /* PHS_* */
    size_t size;       /* requested */
};

/* The object p points into (start exact or not): false when none. */
static bool find(uintptr_t a, struct found *f) {
    if (!ph_contains(a))
        return false;
    size_t i = ph_index(a);
    struct ph_page *pg = &ph.pages[i];
    unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
    if (kind == PHK_SMALL) {
        uintptr_t off = a & (PH_PAGE - 1);
        unsigned s = ph_slot_of(pg, off);
        if (s >= pg->nslots)
            return false;
        uint16_t v = atomic_load_explicit(&meta_of(i)->slot[s], memory_order_acquire);
        f->pg = pg;
        f->page = i;
        f->slot = s;
        f->start = ph_page_base(i) + (uintptr_t)s * pg->slot_size;
        f->slot_bytes = pg->slot_size;
        f->state = v & PHS_MASK;
        f->size = pg->slot_size - (v >> 3);
        return true;
    }
    if (kind == PHK_TAIL) {
        i -= pg->run;
        pg = &ph.pages[i];
        kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
    }
    if (kind == PHK_LARGE) {
        f->pg = pg;
        f->page = i;
        f->slot = 0;
        f->start = ph_page_base(i);
        f->slot_bytes = large_usable(pg);
        f->state = atomic_load_explicit(&pg->lstate, memory_order_acquire);
        f->size = pg->large_size;
        return a < f->start + ((size_t)pg->run << PH_PAGE_SHIFT);
    }
    if (kind == PHK_FREE_RUN && pg->freed_head && (a & (PH_PAGE - 1)) == 0) {
        f->pg = pg;
        f->page = i;
        f->start = a;
        f->slot_bytes = f->size = 0;
        f->state = PHS_FREED;
        return true;
    }
    return false;
}

struct object_info ph_describe(uintptr_t a) {
    struct object_info o = {OBJ_NOT_OURS, false, 0, 0, 0};
    struct found f;
    if (ph_contains(a)) {
        o.state = OBJ_NEVER;
        if (find(a, &f) && f.state != PHS_NEVER && a < f.start + (f.slot_bytes ? f.slot_bytes : 1)) {
            o.state = f.state == PHS_LIVE ? OBJ_LIVE : OBJ_FREED;
            o.large = f.pg->kind != PHK_SMALL;
            o.start = f.start;
            o.size = f.size;
        }
    }
    return o;
}

__attribute__((noreturn)) static void bad_pointer(uintptr_t a, int who) {
    report_bad_pointer(a, ph_describe(a), (enum report_caller)who);
}

/* ---------------------------------------------------------------------------------------
 * Allocation kinds: two bits per small slot (struct ph_meta's kinds), a byte per large
 * object. */

_Atomic bool ph_kinds_used;

void ph_set_kind(void *p, unsigned kind) {
    struct found f;
    if (!kind || !find((uintptr_t)p, &f) || f.start != (uintptr_t)p)
        return;
    if (!atomic_load_explicit(&ph_kinds_used, memory_order_relaxed))
        atomic_store_explicit(&ph_kinds_used, true, memory_order_relaxed);
    if (f.pg->kind != PHK_SMALL) {
        atomic_store_explicit(&f.pg->lkind, (uint8_t)kind, memory_order_relaxed);
        return;
    }
    atomic_fetch_or_explicit(&meta_of(f.page)->kinds[f.slot / 32],
                             (uint64_t)kind << (f.slot % 32 * 2), memory_order_relaxed);
}

bool ph_take_kind(void *p, unsigned *kind, size_t *size) {
    struct found f;
    if (!find((uintptr_t)p, &f) || f.start != (uintptr_t)p || f.state != PHS_LIVE)
        return false;
    *size = f.size;
    if (f.pg->kind != PHK_SMALL) {
        *kind = atomic_exchange_explicit(&f.pg->lkind, 0, memory_order_relaxed);
        return true;
    }
    uint64_t m = 3ULL << (f.slot % 32 * 2);
    uint64_t old = atomic_fetch_and_explicit(&meta_of(f.page)->kinds[f.slot / 32], ~m,
                                             memory_order_relaxed);
    *kind = (unsigned)((old & m) >> (f.slot % 32 * 2));
    return true;
}

/* ---------------------------------------------------------------------------------------
 * malloc and friends. */

void *ph_malloc(size_t size) {
    if (likely(size <= PH_SMALL_MAX))
        return small_alloc(class_of(size), size);
    return large_alloc(size, PH_PAGE);
}

void *ph_calloc(size_t size) {
    if (size <= PH_SMALL_MAX) {
        void *p = small_alloc(class_of(size), size);
        if (p)
            memset(p, 0, size); /* (freed slots are zeroed, but cheap insurance) */
        return p;
    }
    /* Free runs are zero: never touched, or zeroed / dropped when their object was freed. */
    return large_alloc(size, PH_PAGE);
}

void *ph_aligned(size_t size, size_t align) {
    if (align <= 16)
        return ph_malloc(size);
    if (size <= PH_SMALL_MAX && align <= PH_SMALL_MAX) {
        int c = class_aligned(size, align);
        if (c >= 0)
            return small_alloc((unsigned)c, size);
    }
    if (size <= PH_SMALL_MAX)
        size = PH_SMALL_MAX + 1;
    return large_alloc(size, align);
}

/* Pacing. A mark's cost follows the live heap and the roots, not the quarantine: a small
 * heap that frees fast would reach its trigger again while the last mark's time is hardly
 * over, and spend most of its time marking (churn: a 0.45 ms mark every 0.6 ms). So once
 * the trigger is passed, the next mark also waits until the program has run PACE times as
 * long as the last mark took (marking then takes at most about 1 / (1 + PACE) of the time),
 * unless the quarantine reaches PACE_SLACK times its trigger first (memory stays bounded).
 * PACE_SLACK 2 rather than 4 (measured side by side, 2026-11-27, churn, prodcons2, CPython,
 * SQLite's speedtest1): peak memory geomean 4.45x -> 3.44x glibc's, time within the noise. */
#ifndef PACE /* (-D for measurements) */
#define PACE 4
#endif
#ifndef PACE_SLACK
#define PACE_SLACK 2
#endif
/* ...plus a THREAD_SLACK-th of the floor for each thread the last stop parked (at most
 * STOPPED_MAX; 64 KiB with the 1 MiB floor). A stop costs about 12 us more for each thread,
 * blocked or not (the signal, its handler, two wake-ups, its stack read): with 400 threads
 * waiting on a condition beside one that frees, each mark took 5.2 ms, and with the
 * quarantine at twice its 1 MiB trigger the slack left the pace no say: marking took 89% of
 * the time, 10x glibc's (protect_threads_churn with waiting threads). */
#define THREAD_SLACK 16
#define STOPPED_MAX 4096

/* How far past its trigger the quarantine may grow while the pacing waits. */
static int64_t slack_bound(int64_t trigger) {
    size_t stopped = atomic_load_explicit(&ph_state.stopped, memory_order_relaxed);
    return PACE_SLACK * trigger + (int64_t)stopped * (ph_state.trigger_floor / THREAD_SLACK);
}

/* The floor is per thread that freed since the last mark, up to FREERS_MAX threads. A mark
 * stops every thread and costs about as much for one freeing thread as for several: with one
 * floor for the process, two threads freeing as fast as one marked twice as often (larson,
 * two threads: 1,051 marks against 544 for one; now 634). Like a thread's cache in other
 * allocators, each freeing thread may keep a floor's worth of freed memory. */
#define FREERS_MAX 8

/* The quarantine not yet known to be still referenced, and what a mark waits for: its share
 * of the live heap or of what the last mark read, whichever is larger, at least the floor. A
 * mark's cost follows what it reads: a program whose roots dwarf its heap (cc1plus's own
 * collected heap, ~100 MB of mappings, beside 10 MB of malloc's) paid a mark of ~12 ms for
 * every 2.5-5 MB freed, 2.3 s of a 3.9 s compile against 1.6 s under glibc. */
static int64_t quarantine_and_trigger(int64_t *trigger) {
    int64_t live = atomic_load_explicit(&ph_state.live_bytes, memory_order_relaxed);
    int64_t read = atomic_load_explicit(&ph_state.mark_read, memory_order_relaxed);
    int64_t base = read > live ? read : live;
    uint32_t freers = atomic_load_explicit(&ph_state.freers, memory_order_relaxed);
    int64_t floor = ph_state.trigger_floor *
                    (freers < 1 ? 1 : freers < FREERS_MAX ? freers : FREERS_MAX);
    *trigger = floor > base * ph_state.trigger_share / 100 ? floor
                                                           : base * ph_state.trigger_share / 100;
    int64_t q = atomic_load_explicit(&ph_state.quar_bytes, memory_order_relaxed) -
                atomic_load_explicit(&ph_state.held_bytes, memory_order_relaxed);
    /* (Dropped bytes are counted at once, the others folded in batches: kept within q.) */
    int64_t d = atomic_load_explicit(&ph_state.quar_dropped, memory_order_relaxed) -
                atomic_load_explicit(&ph_state.held_dropped, memory_order_relaxed);
    if (d > q)
        d = q;
    if (d < 0)
        d = 0;
    return q - d + d / PH_DROPPED_SHARE;
}

/* Is a mark due? The quarantine passed its share of the live heap (and the floor), and the
 * pacing allows it. */
static bool due(void) {
    int64_t trigger, q = quarantine_and_trigger(&trigger);
    if (q < trigger)
        return false;
    uint64_t retry = atomic_load_explicit(&ph_state.retry_ns, memory_order_relaxed);
    if (retry && os_monotonic_ns() < retry)
        return false; /* (nothing can be proven meanwhile: the quarantine grows) */
    if (q >= slack_bound(trigger))
        return true;
    uint64_t at = atomic_load_explicit(&ph_state.next_mark_ns, memory_order_relaxed);
    return !at || os_monotonic_ns() >= at; /* (the clock is read only past the trigger) */
}

/* Twice the slack: a thread that frees meanwhile waits for the mark in progress. */
bool ph_quarantine_urgent(void) {
    int64_t trigger, q = quarantine_and_trigger(&trigger);
    return q >= 2 * slack_bound(trigger);
}

static bool quarantined(size_t bytes) {
    struct ph_tc *tc = ph_tc;
    if (unlikely(tc->state != TC_LIVE))
        tc = tc_attach(); /* (a thread that only frees, a consumer, gets its cache here) */
    if (unlikely(!tc)) {
        atomic_fetch_add_explicit(&ph_state.quar_bytes, (int64_t)bytes, memory_order_relaxed);
        atomic_fetch_sub_explicit(&ph_state.live_bytes, (int64_t)bytes, memory_order_relaxed);
        stats_gauge_add(STAT_QUARANTINED_BYTES, STAT_PEAK_QUARANTINED_BYTES, (int64_t)bytes);
        stats_gauge_add(STAT_LIVE_BYTES, STAT_PEAK_LIVE_BYTES, -(int64_t)bytes);
        stats_fold(0, 1, 0, 0, 0);
        return ph_tc->state != TC_DEAD && due();
    }
    tc->n_free++;
    tc->live -= (int64_t)bytes;
    tc->quar += (int64_t)bytes;
    if (likely(tc->quar < ph_state.fold_at))
        return false;
    tc_fold(tc);
    return due();
}


bool ph_note_foreign(uintptr_t addr, size_t len) {
    uintptr_t lo = addr, hi = addr + len;
    if (hi < lo)
        hi = UINTPTR_MAX;
    if (!ph.pages || hi <= ph.lo || lo >= ph.hi || !len)
        return false;
    if (lo < ph.lo)
        lo = ph.lo;
    if (hi > ph.hi)
        hi = ph.hi;
    for (size_t i = ph_index(lo); i <= ph_index(hi - 1); i++)
        atomic_store_explicit(&ph.pages[i].foreign, 1, memory_order_release);
    atomic_store_explicit(&ph.any_foreign, true, memory_order_release);
    return true;
}

bool ph_free(void *p, int who) {
    uintptr_t a = (uintptr_t)p;
    if (unlikely(!ph_contains(a)))
        bad_pointer(a, who);
    size_t i = ph_index(a);
    struct ph_page *pg = &ph.pages[i];
    if (likely(atomic_load_explicit(&pg->kind, memory_order_acquire) == PHK_SMALL)) {
        uintptr_t off = a & (PH_PAGE - 1);
        unsigned s = ph_slot_of(pg, off);
        _Atomic uint16_t *w = &meta_of(i)->slot[s];
        uint16_t v;
        if (unlikely(s >= pg->nslots || off != (uintptr_t)s * pg->slot_size ||
                     ((v = atomic_load_explicit(w, memory_order_relaxed)) & PHS_MASK) != PHS_LIVE))
            bad_pointer(a, who);
        /* Zero first, then QUAR: a mark that stops us in between still sees it LIVE. */
        memset(p, 0, pg->slot_size);
        atomic_store_explicit(w, (uint16_t)((v & ~PHS_MASK) | PHS_QUAR), memory_order_release);
        return quarantined(pg->slot_size);
    }
    if (atomic_load_explicit(&pg->kind, memory_order_acquire) != PHK_LARGE ||
        (a & (PH_PAGE - 1)) != 0 ||
        atomic_load_explicit(&pg->lstate, memory_order_relaxed) != PHS_LIVE)
        bad_pointer(a, who);
    size_t usable = large_usable(pg);
    /* A refused drop (a seccomp filter that fails madvise) zeroes by hand: a free run must
     * read as zeros, calloc hands it out as it is (calloc_refused_drop). */
    bool dropped = usable >= PH_DROP_AT && os_drop(p, usable) == 0;
    if (!dropped)
        memset(p, 0, usable);
    atomic_store_explicit(&pg->dropped, dropped, memory_order_relaxed);
    if (dropped)
        atomic_fetch_add_explicit(&ph_state.quar_dropped, (int64_t)usable, memory_order_relaxed);
    atomic_store_explicit(&pg->lstate, PHS_QUAR, memory_order_release);
    return quarantined(usable);
}

size_t ph_usable_size(void *p, int who) {
    struct found f;
    uintptr_t a = (uintptr_t)p;
    if (!find(a, &f) || f.start != a || f.state != PHS_LIVE)
        bad_pointer(a, who);
    /* The program may now use the whole slot: a pointer one past its end must keep it. */
    if (f.pg->kind == PHK_SMALL)
        atomic_store_explicit(&meta_of(f.page)->slot[f.slot], slot_word(PHS_LIVE, 0),
                              memory_order_relaxed);
    else
        f.pg->large_size = f.slot_bytes;
    return f.slot_bytes;
}

void *ph_realloc(void *p, size_t size, bool *mark) {
    uintptr_t a = (uintptr_t)p;
    *mark = false;
    struct found f;
    if (!find(a, &f) || f.start != a || f.state != PHS_LIVE)
        bad_pointer(a, CALL_REALLOC);
    if (ph_tc->state == TC_LIVE)
        ph_tc->n_realloc++;
    if (size == 0) { /* glibc: realloc(p, 0) frees p and returns NULL */
        *mark = ph_free(p, CALL_REALLOC);
        return NULL;
    }
    /* Same class, or shrinking a little: keep the address, record the new size. */
    if (f.pg->kind == PHK_SMALL && size <= f.slot_bytes && 4 * size > f.slot_bytes) {
        _Atomic uint16_t *w = &meta_of(f.page)->slot[f.slot];
        atomic_store_explicit(w, slot_word(PHS_LIVE, f.slot_bytes - size), memory_order_relaxed);
        return p;
    }
    if (f.pg->kind == PHK_LARGE && size > PH_SMALL_MAX &&
        align_up(size, OSCAR_PAGE) <= ((size_t)f.pg->run << PH_PAGE_SHIFT) &&
        4 * size > ((size_t)f.pg->run << PH_PAGE_SHIFT)) {
        int64_t delta = (int64_t)align_up(size, OSCAR_PAGE) - (int64_t)f.slot_bytes;
        if (delta < 0) /* the dropped tail must read as zeros when it grows back */
            memset((char *)p + align_up(size, OSCAR_PAGE), 0, (size_t)-delta);
        f.pg->large_size = size;
        count_large(delta);
        return p;
    }
    /* Grow by at least half, so appending moves O(log n) times. */
    size_t want = size;
    if (size > f.slot_bytes && size < f.slot_bytes + f.slot_bytes / 2)
        want = f.slot_bytes + f.slot_bytes / 2;
    void *q = ph_malloc(want);
    if (!q && want != size)
        q = ph_malloc(size);
    if (!q)
        return NULL;
    if (want != size && want <= PH_SMALL_MAX) { /* record the size asked for */
        struct found g;
        if (find((uintptr_t)q, &g) && g.pg->kind == PHK_SMALL)
            atomic_store_explicit(&meta_of(g.page)->slot[g.slot],
                                  slot_word(PHS_LIVE, g.slot_bytes - size), memory_order_relaxed);
    }
    memcpy(q, p, f.slot_bytes < size ? f.slot_bytes : size);
    *mark = ph_free(p, CALL_REALLOC);
    return q;
}

/* ---------------------------------------------------------------------------------------
 * malloc_trim. */

/* Drop the resident pages of [a, a + len) (MADV_DONTNEED: they read as zeros again, which is
 * what a freed slot or a free run holds anyway). True if any was resident. */
static bool drop_resident(uintptr_t a, size_t len) {
    unsigned char vec[64];
    bool any = false;
    for (uintptr_t p = a; p < a + len && !any; p += sizeof vec * OSCAR_PAGE) {
        size_t n = a + len - p < sizeof vec * OSCAR_PAGE ? a + len - p : sizeof vec * OSCAR_PAGE;
        if (os_mincore((void *)p, n, vec) != 0)
            return false;
        for (size_t k = 0; k < (n + OSCAR_PAGE - 1) / OSCAR_PAGE && !any; k++)
            any = vec[k] & 1;
    }
    return any && os_drop((void *)a, len) == 0;
}

/* A small page whose every slot is free (never handed out, or released by a mark). */
static bool page_empty(size_t i) {
    const struct ph_page *pg = &ph.pages[i];
    for (unsigned s = 0; s < pg->nslots; s++) {
        unsigned st = atomic_load_explicit(&meta_of(i)->slot[s], memory_order_relaxed) & PHS_MASK;
        if (st != PHS_NEVER && st != PHS_FREED)
            return false;
    }
    return true;
}

int ph_trim(void) {
    bool released = false;
    /* Pooled pages: no thread owns them, and none can take one while its class lock is held;
     * a free needs a live slot, so an empty page stays empty meanwhile. */
    for (unsigned c = 0; c < PH_NUM_CLASSES; c++) {
        oscar_lock_acquire(&ph_table_state.locks[1 + c]);
        for (struct ph_page *pg = ph_table_state.pools[c]; pg; pg = pg->next)
            if (page_empty(page_no(pg)) && drop_resident(ph_page_base(page_no(pg)), PH_PAGE))
                released = true;
        oscar_lock_release(&ph_table_state.locks[1 + c]);
    }
    oscar_lock_acquire(PAGE_LOCK);
    for (unsigned l = 0; l < RUN_LISTS; l++)
        for (struct ph_page *h = ph_table_state.runs[l]; h; h = h->next)
            if (drop_resident(ph_page_base(page_no(h)), (size_t)h->run << PH_PAGE_SHIFT))
                released = true;
    oscar_lock_release(PAGE_LOCK);
    return released;
}

/* ---------------------------------------------------------------------------------------
 * For the mark. */

/* A small page no thread owns (nobody changes its bitmaps) whose every slot is free: never
 * handed out, or released by a mark (its local or released bit set). */
static bool page_all_free(const struct ph_page *pg, struct ph_meta *m) {
    for (unsigned w = 0; w < pg->nwords; w++) {
        if ((m->local[w] | atomic_load_explicit(&m->released[w], memory_order_relaxed)) !=
            all_slots(pg->nslots, w))
            return false;
    }
    return true;
}

/* A small page taken by the caller (in no pool, no owner) whose slots are all free goes back
 * to the free runs: any class, or a large object, may use it next (a program whose sizes
 * change from phase to phase would otherwise keep every class's peak: SQLite's speedtest1
 * held 1384 such pages of 1476 at exit). Its memory is zero: every slot was zeroed when freed,
 * or never written. The page's slot states stay FREED until it is set up again. */
static void page_give_back(size_t i) {
    oscar_lock_acquire(PAGE_LOCK);
    run_insert(i, 1);
    oscar_lock_release(PAGE_LOCK);
    stats_add(STAT_PAGES_GIVEN_BACK, 1);
}

/* A pooled page of class c whose slots are all free: out of the pool, back to the free runs.
 * (The pool lock makes POOLED mean "in the list": see enum ph_own.) */
static void pool_take_empty(unsigned c, size_t i) {
    struct ph_page *pg = &ph.pages[i];
    bool take = false;
    oscar_lock_acquire(&ph_table_state.locks[1 + c]);
    if (atomic_load(&pg->own) == PHO_POOLED && page_all_free(pg, meta_of(i))) {
        pool_unlink(c, pg);
        atomic_store(&pg->own, PHO_MOVING);
        take = true;
    }
    oscar_lock_release(&ph_table_state.locks[1 + c]);
    if (take)
        page_give_back(i);
}

void ph_release_slots(size_t i, const uint64_t *bits, unsigned nwords) {
    struct ph_page *pg = &ph.pages[i];
    struct ph_meta *m = meta_of(i);
    bool any = false;
    for (unsigned w = 0; w < nwords; w++)
        if (bits[w]) {
            atomic_fetch_or_explicit(&m->released[w], bits[w], memory_order_seq_cst);
            any = true;
        }
    if (!any)
        return;
    uint32_t own = atomic_load(&pg->own);
    if (own == PHO_FULL && atomic_compare_exchange_strong(&pg->own, &own, PHO_MOVING)) {
        if (page_all_free(pg, m))
            page_give_back(i);
        else
            pool_push(pg->cls, pg);
    } else if (own == PHO_POOLED) {
        pool_take_empty(pg->cls, i);
    }
}

void ph_release_large(size_t i) {
    struct ph_page *h = &ph.pages[i];
    size_t n = h->run;
    oscar_lock_acquire(PAGE_LOCK);
    atomic_store_explicit(&h->lstate, PHS_FREED, memory_order_relaxed);
    run_insert(i, n);
    h->freed_head = 1;
    oscar_lock_release(PAGE_LOCK);
}

static void warn_cap(int64_t held) {
    if (atomic_exchange(&ph_state.warned, 1))
        return;
    char buf[256];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_QUARANTINE_STUCK);
    fmt_u64(&f, (uint64_t)held >> 20);
    fmt_str(&f, " MiB of freed objects are still pointed to (OSCAR_DANGLING=report says "
                "where)\n");
    fmt_flush(&f, 2);
}

/* A failed stop cost the thread that tried as long as the world takes to show that a
 * thread will not park (50 ms): trying again at every free made a 0.1 s program take 30 s
 * (protect_shape_blocked_register sigblock). 10 ms after the first failure, then twice as
 * long each time, at most a second. */
#define RETRY_FIRST_NS 10000000ull
#define RETRY_MAX_NS 1000000000ull
void ph_mark_failed(void) {
    uint32_t n = atomic_fetch_add_explicit(&ph_state.failures, 1, memory_order_relaxed);
    uint64_t wait = RETRY_FIRST_NS << (n < 7 ? n : 7);
    atomic_store_explicit(&ph_state.retry_ns,
                          os_monotonic_ns() + (wait < RETRY_MAX_NS ? wait : RETRY_MAX_NS),
                          memory_order_relaxed);
}

void ph_after_mark(uint64_t released, uint64_t held, uint64_t released_objects,
                   uint64_t held_objects, uint64_t released_dropped, uint64_t held_dropped,
                   uint64_t mark_ns, size_t stopped) {
    atomic_store_explicit(&ph_state.stopped, stopped < STOPPED_MAX ? stopped : STOPPED_MAX,
                          memory_order_relaxed);
    atomic_store_explicit(&ph_state.failures, 0, memory_order_relaxed);
    atomic_store_explicit(&ph_state.retry_ns, 0, memory_order_relaxed);
    /* (A thread folding meanwhile may count in both intervals: a floor more, until the next
     * mark.) */
    atomic_fetch_add_explicit(&ph_state.interval, 1, memory_order_relaxed);
    atomic_store_explicit(&ph_state.freers, 0, memory_order_relaxed);
    atomic_store_explicit(&ph_state.next_mark_ns, os_monotonic_ns() + PACE * mark_ns,
                          memory_order_relaxed);
    atomic_fetch_sub_explicit(&ph_state.quar_bytes, (int64_t)released, memory_order_relaxed);
    atomic_store_explicit(&ph_state.held_bytes, (int64_t)held, memory_order_relaxed);
    atomic_fetch_sub_explicit(&ph_state.quar_dropped, (int64_t)released_dropped,
                              memory_order_relaxed);
    atomic_store_explicit(&ph_state.held_dropped, (int64_t)held_dropped, memory_order_relaxed);
    stats_gauge_add(STAT_QUARANTINED_BYTES, STAT_PEAK_QUARANTINED_BYTES, -(int64_t)released);
    stats_add(STAT_RELEASED_OBJECTS, (int64_t)released_objects);
    atomic_store_explicit(&oscar_stats[STAT_SCAN_STILL_REFERENCED], held_objects,
                          memory_order_relaxed);
    if (ph_state.hard_cap && (int64_t)held > ph_state.hard_cap)
        warn_cap((int64_t)held);
}

void ph_mark_read(uint64_t bytes) {
    atomic_store_explicit(&ph_state.mark_read, (int64_t)bytes, memory_order_relaxed);
}

/* ---------------------------------------------------------------------------------------
 * fork: the child keeps only the forking thread; the other threads' current pages go to
 * the pools (their caches are reused by the child's next threads). */

void ph_fork_prepare(void) {
    oscar_lock_acquire(&ph_state.registry_lock);
    oscar_lock_acquire(&ph_state.fallback_lock);
    for (unsigned i = 0; i < 1 + PH_NUM_CLASSES; i++)
        oscar_lock_acquire(&ph_table_state.locks[i]);
}

void ph_fork_parent(void) {
    for (unsigned i = 1 + PH_NUM_CLASSES; i-- > 0;)
        oscar_lock_release(&ph_table_state.locks[i]);
    oscar_lock_release(&ph_state.fallback_lock);
    oscar_lock_release(&ph_state.registry_lock);
}

void ph_fork_child(void) {
    for (unsigned i = 1 + PH_NUM_CLASSES; i-- > 0;)
        oscar_lock_release(&ph_table_state.locks[i]);
    struct ph_tc *self = ph_tc->state == TC_LIVE ? ph_tc : NULL;
    struct ph_tc *tc = ph_state.live_tcs;
    ph_state.live_tcs = NULL;
    while (tc) {
        struct ph_tc *next = tc->next;
        if (tc == self) {
            tc->next = ph_state.live_tcs;
            ph_state.live_tcs = tc;
        } else {
            tc_release_pages(tc);
            tc_fold(tc);
            tc->state = TC_EMPTY;
            tc->next = ph_state.free_tcs;
            ph_state.free_tcs = tc;
        }
        tc = next;
    }
    atomic_store_explicit(&ph_state.freers, 0, memory_order_relaxed); /* (one thread left) */
    oscar_lock_release(&ph_state.fallback_lock);
    oscar_lock_release(&ph_state.registry_lock);
}
