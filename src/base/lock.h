/* lock: the one kind of lock Oscar uses, and the one table of lock ranks.
 *
 * A test-and-set spin lock for slow paths only (span pools, the thread registry, the kept
 * pages...): never taken on the malloc/free fast path. Every lock has a rank; a thread may
 * take a lock only while every lock it holds has a LOWER rank (locks of one rank that come in
 * an array, such as the per-class pools, are taken in address order). fork's prepare handler
 * takes them all in rank order, so the table below is also the fork order. The OSCAR_DEBUG
 * build (cmake -DOSCAR_DEBUG=ON) checks the rule on every acquisition and aborts with a
 * message naming both locks.
 *
 * Ranks, lowest first: identifier, name, what it guards (and who takes it). */
#ifndef OSCAR_LOCK_H
#define OSCAR_LOCK_H
#include <stdatomic.h>
#include <stdbool.h>

#define OSCAR_LOCK_RANKS(X)                                                                   \
    X(INIT, "init", "the allocator's initialisation (modes/alloc.c)")                         \
    X(VIEWS_INIT, "views-init", "the custom-allocator API's lazy set-up (heap/views.c)")       \
    X(THREAD_REGISTRY, "thread-registry", "live and free thread caches (heap/thread.c)")       \
    X(FALLBACK_CACHE, "fallback-cache", "the cache of threads without one (heap/thread.c)")   \
    X(CLASS_POOL, "class-pool", "spans with free slots, one lock per size class (mem/canon.c)") \
    X(EMPTY_POOL, "empty-pool", "spans with no live slot (mem/canon.c)")                       \
    X(REUSE_POOL, "reuse-pool", "packed spans to reuse, one per size class (mem/canon.c)")      \
    X(DEFERRED, "deferred", "shadows whose revocation waits for mappings (heap/deferred.c)") \
    X(KEEP, "keep", "pages of freed large objects kept for reuse (heap/keep.c)")                \
    X(RECLAIM, "reclaim", "the reclaim sweep, a try-lock (heap/reclaim.c)")                    \
    X(PROTECT, "protect", "protect mode's shared page and quarantine lists (heap/protect_*)")  \
    X(WORLD, "world", "stop-the-world, from world_stop to world_resume (scan/world.c): after  \
                      every allocator lock, which fork and the mark take first, so no parked \
                      thread holds one")                                                    \
    X(SIGNAL_HANDLERS, "signal-handlers", "the program's SIGSEGV/SIGBUS handlers (report/fault.c)") \
    X(PROGRAM_HANDLERS, "program-handlers", "the program's other handlers, behind the counting \
                      one (export/export_signal.c)")                                        \
    X(KROOTS_MQ, "kroots-mq", "copies of the messages sent to POSIX queues (scan/mqlog.c): a  \
                      leaf, held with every signal blocked and nothing taken under it, so   \
                      a handler may take it under any lock; fork takes it not, the mark     \
                      only tries it")

enum lock_rank {
    LOCK_UNRANKED, /* a lock nobody initialised: the debug build refuses to take it */
#define OSCAR_LOCK_RANK(id, name, what) LOCK_##id,
    OSCAR_LOCK_RANKS(OSCAR_LOCK_RANK)
#undef OSCAR_LOCK_RANK
    LOCK_RANK_COUNT
};

typedef struct {
    atomic_flag f;
    unsigned char rank; /* enum lock_rank */
} oscar_lock;
#define OSCAR_LOCK_INIT(rank_id) {ATOMIC_FLAG_INIT, LOCK_##rank_id}

/* For locks in arrays or structs that are zero-initialised. */
static inline void oscar_lock_init(oscar_lock *l, enum lock_rank rank) {
    atomic_flag_clear(&l->f);
    l->rank = (unsigned char)rank;
}
void oscar_lock_acquire(oscar_lock *l);
bool oscar_lock_try(oscar_lock *l); /* true: taken */
void oscar_lock_release(oscar_lock *l);
const char *oscar_lock_name(enum lock_rank rank);
/* The debug build's check that the caller holds no lock (a signal handler, a fork child). */
void oscar_lock_assert_none_held(const char *where);

/* Assertions of the OSCAR_DEBUG build: compiled out otherwise. */
#ifdef OSCAR_DEBUG
__attribute__((noreturn)) void oscar_assert_failed(const char *what, const char *file, int line);
#define oscar_assert(cond)                                                                    \
    ((cond) ? (void)0 : oscar_assert_failed(#cond, __FILE__, __LINE__))
#else
#define oscar_assert(cond) ((void)0)
#endif
#endif
