/* thread: per-thread state. Each thread has a cache of ready shadows per size class and a
 * slice of shadow address space, so malloc and free take no lock. The state is created
 * lazily on the thread's first allocation and handed back when the thread exits.
 *
 * Bootstrap: the TLS pointer starts at a static, empty cache whose lists are all empty,
 * so the fast path never asks "am I initialised?": the first malloc simply misses and the
 * slow path attaches a real cache. A thread that is attaching (pthread_setspecific may
 * itself call calloc) or has torn down uses the shared fallback cache under a lock. */
#ifndef OSCAR_THREAD_H
#define OSCAR_THREAD_H
#include "mem/canon.h"
#include "base/core.h"
#include "base/size_class.h"

#include <sys/uio.h>

enum thread_state { TS_EMPTY, TS_LIVE, TS_DEAD, TS_FALLBACK };

struct class_cache {
    uint32_t count;     /* ready shadows in objs[0..count) (popped from the end) */
    struct span *active; /* span this thread claims slots from, or NULL */
    uintptr_t *objs;    /* RUN_PAGES entries */
    uintptr_t packed_next, packed_end; /* objects of a packed span not yet handed out */
    uint32_t mapped; /* runs and fresh packed spans this cache has mapped for the class */
};

/* Fast mode (packed.c): packed shadow pages whose objects are all freed, and freed large
 * objects, waiting to be revoked together. A packed page holds one count of its span, so
 * the span outlives the queue entry. At most RETIRE_MAX entries and RETIRE_LARGE_BYTES of
 * large objects wait. */
#define RETIRE_MAX 512
/* While the process has a single live thread the queue is flushed at RETIRE_SOLO entries:
 * each flush's guard clears page-table entries, which with several threads running costs a
 * TLB shoot-down of the other CPUs (an interrupt through the hypervisor on a VM), so they
 * flush half as often; alone, less freed memory waits. (Measured with 256, 512, 1024
 * entries: larson's two-thread speedup 0.65, 0.82, 0.93; the four-thread larson's peak
 * canonical heap 19, 21, 29 MiB.) */
#define RETIRE_SOLO 256
#define RETIRE_LARGE_BYTES (8UL << 20)
struct retire_queue {
    uint32_t n;
    size_t large_bytes;
    struct iovec all[RETIRE_MAX], empty[RETIRE_MAX]; /* the flush's ranges (not on the stack) */
    uintptr_t page[RETIRE_MAX];
    uint64_t entry[RETIRE_MAX];
};

struct thread_cache {
    struct class_cache cls[NUM_CLASSES];
    struct retire_queue retire;
    int state;
    uintptr_t slice_cur, slice_end; /* this thread's never-reused shadow addresses */
    /* Large objects of a few pages are carved from this mapped slab (large.c). */
    uintptr_t carve_next, carve_end;
    uint32_t carve_slabs;
    /* Local counters, folded into stats in batches. */
    uint64_t n_alloc, n_free, n_small, n_large, n_realloc;
    int64_t live_bytes; /* requested bytes allocated minus freed since the last fold */
    struct thread_cache *next, *prev; /* registry of live caches / free list */
    uintptr_t storage[];              /* NUM_CLASSES * RUN_PAGES object slots */
};

extern __thread struct thread_cache *oscar_tc __attribute__((tls_model("initial-exec")));

int thread_init(void);      /* at global init: the key and the fallback cache */
void thread_init_late(void); /* after init: atfork-safe pieces that may call malloc */
/* A usable cache for the calling thread, attaching one if needed; NULL means: use the
 * fallback under thread_fallback_lock. */
struct thread_cache *thread_attach(void);
/* The calling thread's live cache, attached now if it has none yet; NULL when it cannot
 * have one (exiting, or attaching: use the fallback or do without). */
struct thread_cache *thread_live_cache(void);
extern struct thread_cache *thread_fallback;
void thread_fallback_lock(void);
void thread_fallback_unlock(void);
/* Has the process more than one thread with a live cache? (relaxed, approximate) */
bool thread_several_live(void);
/* Shadow address space for n pages from tc's slice (0 when the region is exhausted). */
uintptr_t thread_take_shadow(struct thread_cache *tc, size_t pages);
/* Fold tc's local counters into stats. */
void thread_fold_stats(struct thread_cache *tc);
/* Fold the counters of every live thread (at exit). */
void thread_fold_all_stats(void);
/* fork.c: the registry lock, and the child's reset of every other thread's cache. */
void thread_lock_registry(void);
void thread_unlock_registry(void);
void thread_after_fork_child(void);
#endif
