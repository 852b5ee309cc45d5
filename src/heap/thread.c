/* thread: see thread.h. */
#include "heap/thread.h"
#include "base/options.h"
#include "os/os.h"
#include "heap/packed.h"
#include "mem/region.h"
#include "base/stats.h"

#include <pthread.h>

#define SLICE_BYTES (32UL << 20) /* shadow address space a thread takes at a time */

static struct thread_cache empty_cache = {.state = TS_EMPTY};
static struct thread_cache dead_cache = {.state = TS_DEAD};
__thread struct thread_cache *oscar_tc __attribute__((tls_model("initial-exec"))) = &empty_cache;
static __thread int attaching __attribute__((tls_model("initial-exec")));

/* The thread registry's state. Per thread: oscar_tc and attaching, above, TLS. The two
 * sentinels above stay apart: their address is what a thread's oscar_tc holds, nothing
 * writes them, and a struct ending in a flexible array cannot be a member of this one. */
static struct {
    pthread_key_t exit_key; /* created once by thread_init */
    size_t cache_bytes;     /* a cache's size with its storage: set once by thread_init */
    oscar_lock registry_lock; /* guards live_list and free_list (rank THREAD_REGISTRY) */
    struct thread_cache *live_list, *free_list; /* under registry_lock */
    _Atomic int live_count; /* caches on live_list: changed under registry_lock, read relaxed */
    oscar_lock fallback_lock; /* guards thread_fallback's use (rank FALLBACK_CACHE) */
} thread_state = {.registry_lock = OSCAR_LOCK_INIT(THREAD_REGISTRY),
                  .fallback_lock = OSCAR_LOCK_INIT(FALLBACK_CACHE)};

bool thread_several_live(void) {
    return atomic_load_explicit(&thread_state.live_count, memory_order_relaxed) > 1;
}
struct thread_cache *thread_fallback; /* set once by thread_init; used under fallback_lock */

static struct thread_cache *new_cache(void) {
    int err;
    struct thread_cache *tc = os_alloc_meta(thread_state.cache_bytes, &err);
    if (!tc)
        return NULL;
    unsigned pages = (unsigned)options_int(OPT_RUN_PAGES);
    for (unsigned c = 0; c < NUM_CLASSES; c++)
        tc->cls[c].objs = tc->storage + (size_t)c * pages;
    return tc;
}

static void registry_unlink(struct thread_cache *tc) {
    if (tc->prev)
        tc->prev->next = tc->next;
    else
        thread_state.live_list = tc->next;
    if (tc->next)
        tc->next->prev = tc->prev;
    tc->next = tc->prev = NULL;
}

/* pthread key destructor: the thread is exiting. Later allocations of this thread (from
 * other destructors) use the fallback cache. The cache keeps its ready shadows, spans and
 * address slice for the next thread that starts: a program that starts and joins threads
 * forever then maps nothing new for them. */
static void thread_exit(void *arg) {
    struct thread_cache *tc = arg;
    oscar_tc = &dead_cache;
    packed_flush_retired(tc);
    thread_fold_stats(tc);
    oscar_lock_acquire(&thread_state.registry_lock);
    registry_unlink(tc);
    atomic_fetch_sub_explicit(&thread_state.live_count, 1, memory_order_relaxed);
    tc->state = TS_EMPTY;
    tc->next = thread_state.free_list;
    thread_state.free_list = tc;
    oscar_lock_release(&thread_state.registry_lock);
}

int thread_init(void) {
    thread_state.cache_bytes = sizeof(struct thread_cache) +
                  (size_t)NUM_CLASSES * (size_t)options_int(OPT_RUN_PAGES) * sizeof(uintptr_t);
    thread_fallback = new_cache();
    if (!thread_fallback)
        return 12;
    thread_fallback->state = TS_FALLBACK;
    return pthread_key_create(&thread_state.exit_key, thread_exit);
}

struct thread_cache *thread_attach(void) {
    struct thread_cache *tc = oscar_tc;
    if (tc->state == TS_LIVE)
        return tc;
    if (tc->state == TS_DEAD || attaching)
        return NULL;
    if (atomic_load_explicit(&oscar_init_state, memory_order_acquire) != 2)
        return NULL; /* not initialised: modes/alloc.c initialises and asks again */
    attaching = 1;
    oscar_lock_acquire(&thread_state.registry_lock);
    tc = thread_state.free_list;
    if (tc)
        thread_state.free_list = tc->next;
    oscar_lock_release(&thread_state.registry_lock);
    if (!tc)
        tc = new_cache();
    if (!tc) {
        attaching = 0;
        return NULL;
    }
    tc->state = TS_LIVE;
    oscar_lock_acquire(&thread_state.registry_lock);
    tc->prev = NULL;
    tc->next = thread_state.live_list;
    if (thread_state.live_list)
        thread_state.live_list->prev = tc;
    thread_state.live_list = tc;
    atomic_fetch_add_explicit(&thread_state.live_count, 1, memory_order_relaxed);
    oscar_lock_release(&thread_state.registry_lock);
    /* Publish before pthread_setspecific: it may calloc, which then finds this cache. */
    oscar_tc = tc;
    pthread_setspecific(thread_state.exit_key, tc);
    attaching = 0;
    stats_add(STAT_THREADS_STARTED, 1);
    return tc;
}

struct thread_cache *thread_live_cache(void) {
    struct thread_cache *tc = oscar_tc;
    if (tc->state == TS_EMPTY)
        tc = thread_attach();
    return tc && tc->state == TS_LIVE ? tc : NULL;
}

void thread_fallback_lock(void) { oscar_lock_acquire(&thread_state.fallback_lock); }
void thread_fallback_unlock(void) { oscar_lock_release(&thread_state.fallback_lock); }

uintptr_t thread_take_shadow(struct thread_cache *tc, size_t pages) {
    size_t len = pages << OSCAR_PAGE_SHIFT;
    if (tc->slice_end - tc->slice_cur < len) {
        size_t slice = len > SLICE_BYTES ? len : SLICE_BYTES;
        uintptr_t s = region_take(slice, 2UL << 20);
        if (!s && slice > len) /* (used up: recycled runs may be shorter than a slice) */
            s = region_take(slice = align_up(len, 2UL << 20), 2UL << 20);
        if (!s)
            return 0;
        if (tc->slice_cur < tc->slice_end)
            region_abandon(tc->slice_cur, tc->slice_end); /* never handed out now */
        tc->slice_cur = s;
        tc->slice_end = s + slice;
    }
    uintptr_t r = tc->slice_cur;
    tc->slice_cur += len;
    return r;
}

void thread_fold_stats(struct thread_cache *tc) {
    stats_fold(tc->n_alloc, tc->n_free, tc->n_small, tc->n_large, tc->n_realloc);
    tc->n_alloc = tc->n_free = tc->n_small = tc->n_large = tc->n_realloc = 0;
    stats_gauge_add(STAT_LIVE_BYTES, STAT_PEAK_LIVE_BYTES, tc->live_bytes);
    tc->live_bytes = 0;
}

void thread_fold_all_stats(void) {
    oscar_lock_acquire(&thread_state.registry_lock);
    for (struct thread_cache *tc = thread_state.live_list; tc; tc = tc->next)
        thread_fold_stats(tc);
    oscar_lock_release(&thread_state.registry_lock);
    oscar_lock_acquire(&thread_state.fallback_lock);
    thread_fold_stats(thread_fallback);
    oscar_lock_release(&thread_state.fallback_lock);
}

void thread_lock_registry(void) {
    oscar_lock_acquire(&thread_state.registry_lock);
    oscar_lock_acquire(&thread_state.fallback_lock);
}

void thread_unlock_registry(void) {
    oscar_lock_release(&thread_state.fallback_lock);
    oscar_lock_release(&thread_state.registry_lock);
}

void thread_after_fork_child(void) {
    /* Only the forking thread survives. The others were stopped wherever they were, possibly
     * in the middle of a malloc or free that updates their cache without a lock (a slab's
     * rest guarded but the slab not yet replaced, say): their caches are dropped, never
     * handed to the child's new threads, whose first object could otherwise land on a
     * guarded page (tests/programs/fork_with_threads_heavy.c, a child thread's SIGSEGV).
     * What they held (ready shadows, a slab's rest, partly used spans) is lost to the child
     * only: addresses are never reused anyway. */
    struct thread_cache *self = oscar_tc->state == TS_LIVE ? oscar_tc : NULL;
    struct thread_cache *tc = thread_state.live_list;
    while (tc) {
        struct thread_cache *next = tc->next;
        if (tc != self) {
            thread_fold_stats(tc);
            registry_unlink(tc);
            tc->state = TS_DEAD;
        }
        tc = next;
    }
    atomic_store_explicit(&thread_state.live_count, self ? 1 : 0, memory_order_relaxed);
}
