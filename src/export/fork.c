/* fork: the canonical heap is MAP_SHARED, so a forked child would share every small object
 * with its parent. Before fork we copy the memfd in the kernel (holes stay holes); in the
 * child we remap every run of shadows onto the copy, one mmap per kernel mapping (runs of
 * consecutive canonical pages at consecutive addresses), not one per object.
 *
 * Lock order (prepare takes them top to bottom, parent and child release bottom to top):
 *   1. thread registry, 2. fallback cache, 3. class pools in class order, 4. empty-span
 *   pool, 5. packed reuse pools in class order, 6. deferred revocations, 7. kept large pages,
 *   8. the reclaim sweep (reclaim.h).
 * Then the other threads are parked (scan/world.h, the world lock last) and stay parked until
 * the child has moved onto its copy (the handshake below): the copy is made while they are
 * parked, so nothing they write can land between the copy and the kernel's copy of the
 * private memory, nor reach the child before its remap (issue 18, defect 2: a FILE being
 * opened on another thread reached the child as the stale contents of a freed object). The
 * world lock ranks after every allocator lock (fork takes them first, so no parked thread
 * holds one). Before all of them, stdio's list lock (_IO_list_lock, recursive): glibc's fork
 * takes it after the prepare handlers, and a thread parked while holding it (inside fopen or
 * fclose) would deadlock the fork; taken first, no parked thread holds it. So prepare holds,
 * in order: stdio's list lock, the views gate, locks 1-8, the world lock; parent and child
 * release them in reverse. If the stop fails (a thread blocks the park signal by a raw system
 * call: 1 s timeout) fork goes on without it, as before.
 * The price of parking: in the parent, a thread blocked in a call the kernel never restarts
 * after a signal handler (poll, epoll_wait, select, nanosleep, sleep...) returns EINTR (or
 * early) when another thread forks, as with any signal handler in the process (Boehm GC's
 * stops do the same); the calls SA_RESTART covers (read, write, wait...) are restarted.

 * _Fork() and clone() without CLONE_VM make a child with a copy of the private memory too, but
 * run no atfork handlers: they are wrapped here to run the same three steps.
 * vfork and posix_spawn run no atfork handlers and need none: the child only execs. */
#define _GNU_SOURCE
#include "export/fork.h"
#include "heap/keep.h"
#include "heap/views.h"
#include "mem/canon.h"
#include "mem/maplimit.h"
#include "os/os.h"
#include "heap/deferred.h"
#include "heap/reclaim.h"
#include "mem/region.h"
#include "report/report.h"
#include "report/stack.h"
#include "base/stats.h"
#include "heap/thread.h"

#include "scan/mqlog.h"
#include "scan/world.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>

extern void _IO_list_lock(void);
extern void _IO_list_unlock(void);

/* The handshake's word (see below). */
struct fork_sync {
    _Atomic uint32_t word;
};
/* Written by the forking thread between prepare and the parent's or child's handler (fork
 * is serialised by the locks prepare takes), except `registered` (set once at init) and
 * `sync_page` (mapped at the first fork). */
static struct {
    int copy_err;       /* the heap's copy failed (errno value), or 0 */
    bool world_stopped; /* the other threads are parked */
    bool registered;    /* fork_init ran: these handlers are the mode's (not protect mode's) */
    struct fork_sync *sync_page; /* the handshake with the child (below) */
    int saved_errno;    /* the program's errno, put back after the handshake */
} fork_state;

/* The handshake with the child. Until the child has remapped its heap onto the copy, its
 * shadows are still the parent's memfd; and glibc's fork walks every FILE in the child (it
 * resets their locks) BEFORE the atfork child handlers run. So the parent keeps its other
 * threads parked until the child says it is done: a word in a shared anonymous page (one per
 * process: a child makes its own for its own forks). 0: not yet started, else the child's
 * pid, with DONE set once it is done. The parent gives up waiting when the child has not
 * reached its handler within a second (a failed fork, or a child that died in glibc) or
 * when the child has exited. Failed forks are told apart by errno: zeroed in prepare, set
 * only by a failure. */
#define SYNC_DONE 0x80000000u

static void sync_prepare(void) {
    if (!fork_state.sync_page) {
        int err;
        fork_state.sync_page = os_map_shared_anon(OSCAR_PAGE, &err);
    }
    if (fork_state.sync_page)
        atomic_store(&fork_state.sync_page->word, 0);
    fork_state.saved_errno = errno;
    errno = 0;
}

static void sync_child_started(void) {
    if (fork_state.sync_page) {
        atomic_store(&fork_state.sync_page->word, (uint32_t)os_getpid());
        os_futex_wake_shared(&fork_state.sync_page->word, 1);
    }
}

/* From here on the child touches none of the parent's memory: the parent may go on. */
static void sync_child_done(void) {
    if (fork_state.sync_page) {
        atomic_store(&fork_state.sync_page->word, (uint32_t)os_getpid() | SYNC_DONE);
        os_futex_wake_shared(&fork_state.sync_page->word, 1);
        os_unmap(fork_state.sync_page, OSCAR_PAGE); /* (the parent's, shared: ours comes at our fork) */
        fork_state.sync_page = NULL;
    }
}

/* child: the pid fork returned, when known (the wrappers below); else the pid the child
 * wrote, which is its pid in its own namespace (clone with CLONE_NEWPID: 1), so the wait is
 * also capped. */
static void sync_wait_child(pid_t child) {
    bool failed = errno != 0;
    if (!failed)
        errno = fork_state.saved_errno;
    if (!fork_state.sync_page || failed)
        return;
    uint64_t start = os_monotonic_ns();
    for (;;) {
        uint32_t w = atomic_load(&fork_state.sync_page->word);
        if (w & SYNC_DONE)
            return;
        uint64_t waited = os_monotonic_ns() - start;
        if (w == 0 && waited > 1000000000u)
            return; /* never reached its handler */
        if (w != 0 && (os_child_gone(child ? child : (int)w) || waited > 60000000000u))
            return;
        os_futex_wait_shared(&fork_state.sync_page->word, w, 10000000);
    }
}

/* glibc's fork resets the lock of every FILE in the child, before the atfork child handlers
 * run: for a FILE allocated by the program, through the shadow the child still shares with
 * us. A parked thread holding that lock (inside fprintf, say) would find it zeroed when
 * resumed, and leave it taken forever. So the locks are saved while the world is stopped and
 * put back once the child has moved onto its copy. (Only FILEs on glibc's list, only locks in
 * our heap's region, at most SAVED_LOCKS of them.) */
extern FILE *_IO_iter_begin(void);
extern FILE *_IO_iter_end(void);
extern FILE *_IO_iter_next(FILE *it);
extern FILE *_IO_iter_file(FILE *it);
#define SAVED_LOCKS 256
/* The saved locks (forking thread, the world stopped; all zero at start: .bss). */
struct saved_lock {
    uint64_t *at;     /* the FILE's lock */
    uint64_t word[2]; /* its value: glibc's _IO_lock_t: lock, count, owner */
};
static struct {
    struct saved_lock saved[SAVED_LOCKS]; /* a FILE's lock and its value before fork */
    size_t nsaved;                        /* entries of saved[] in use */
} stdio_locks_state;

static void save_stdio_locks(void) {
    stdio_locks_state.nsaved = 0;
    for (FILE *it = _IO_iter_begin(); it != _IO_iter_end() && stdio_locks_state.nsaved < SAVED_LOCKS;
         it = _IO_iter_next(it)) {
        FILE *fp = _IO_iter_file(it);
        uint64_t *lock = (uint64_t *)fp->_lock;
        if ((fp->_flags & _IO_USER_LOCK) || !lock || !region_contains((uintptr_t)lock))
            continue;
        stdio_locks_state.saved[stdio_locks_state.nsaved].at = lock;
        stdio_locks_state.saved[stdio_locks_state.nsaved].word[0] = lock[0];
        stdio_locks_state.saved[stdio_locks_state.nsaved].word[1] = lock[1];
        stdio_locks_state.nsaved++;
    }
}

static void restore_stdio_locks(void) {
    for (size_t i = 0; i < stdio_locks_state.nsaved; i++) {
        stdio_locks_state.saved[i].at[0] = stdio_locks_state.saved[i].word[0];
        stdio_locks_state.saved[i].at[1] = stdio_locks_state.saved[i].word[1];
    }
    stdio_locks_state.nsaved = 0;
}

static void prepare(void) {
    maplimit_fit_if_lowered(); /* (locks: none yet) */
    _IO_list_lock();
    views_fork_prepare(); /* first: its operations in flight may take the locks below */
    thread_lock_registry();
    canon_lock_all();
    deferred_lock();
    keep_lock();
    reclaim_lock();
    /* A stop can give up (a thread slow to answer on a loaded machine, after 1 s, or one
     * that blocks every signal with a raw system call, after 50 ms): three tries. Without a
     * stopped world the FILE locks are left alone: the other threads change them meanwhile,
     * and putting back a snapshot would leave a lock taken with no holder (the child's reset
     * of them can then still reach a lock in use: see docs/process-shapes.md). */
    for (int attempt = 0; attempt < 3 && !fork_state.world_stopped; attempt++)
        fork_state.world_stopped = world_stop() == 0;
    if (fork_state.world_stopped)
        save_stdio_locks();
    sync_prepare();
    fork_state.copy_err = canon_fork_prepare();
}

static void parent_of(pid_t child) {
    sync_wait_child(child);
    restore_stdio_locks();
    if (fork_state.world_stopped)
        world_resume();
    fork_state.world_stopped = false;
    if (!fork_state.copy_err)
        canon_fork_parent();
    reclaim_unlock();
    keep_unlock();
    deferred_unlock();
    canon_unlock_all();
    thread_unlock_registry();
    views_fork_parent();
    _IO_list_unlock();
}

static void parent(void) { parent_of(0); }

static bool maps_canonical(uint64_t e) {
    enum page_kind k = entry_kind(e);
    return k == PK_READY || k == PK_SMALL || k == PK_DEFERRED || k == PK_PACKED ||
           k == PK_SMALL_GUARDED || k == PK_PACKED_GUARDED;
}

static bool guarded(uintptr_t p) {
    enum page_kind k = entry_kind(region_load(p));
    return k == PK_SMALL_GUARDED || k == PK_PACKED_GUARDED;
}

/* Remapping a run clears its guard markers: put them back, a stretch at a time. */
static void reguard(uintptr_t p, uintptr_t q) {
    while (p < q) {
        if (!guarded(p)) {
            p += OSCAR_PAGE;
            continue;
        }
        uintptr_t r = p + OSCAR_PAGE;
        while (r < q && guarded(r))
            r += OSCAR_PAGE;
        if (os_guard((void *)p, r - p) != 0)
            report_fatal("fork: cannot revoke freed objects in the child", ENOMEM);
        p = r;
    }
}

/* libc_fork: glibc's fork reset stdio's list lock in the child (_Fork and clone did not). */
static void child_common(bool libc_fork) {
    sync_child_started();
    if (fork_state.world_stopped)
        world_resume(); /* (the parked threads are not in the child: this frees the lock) */
    fork_state.world_stopped = false;
    world_fork_child();
    if (fork_state.copy_err)
        report_fatal("fork: cannot copy the canonical heap for the child", fork_state.copy_err);
    if ((fork_state.copy_err = canon_fork_child()) != 0)
        report_fatal("fork: cannot map the canonical heap's copy in the child", fork_state.copy_err);
    uintptr_t end = oscar_region.base + region_used();
    for (uintptr_t p = oscar_region.base; p < end;) {
        uint64_t e = region_load(p);
        if (!maps_canonical(e)) {
            p = reclaim_next_page(p);
            continue;
        }
        uintptr_t q = p + OSCAR_PAGE;
        uint64_t canon = entry_canon(e), next = canon + 1;
        while (q < end) {
            uint64_t f = region_load(q);
            if (!maps_canonical(f) || entry_canon(f) != next)
                break;
            next++;
            q += OSCAR_PAGE;
        }
        int err = canon_fork_child_map(p, q - p, canon);
        if (err)
            report_fatal("fork: cannot remap the heap in the child", err);
        reguard(p, q);
        p = q;
    }
    views_fork_child(); /* custom-allocator arenas and views (api.h) */
    maplimit_fork_child();
    sync_child_done();
    stats_add(STAT_FORKS, 1);
    stack_after_fork();
    thread_after_fork_child();
    keep_after_fork_child();
    mqlog_fork_child();
    reclaim_unlock();
    deferred_unlock();
    deferred_fork_child();
    canon_unlock_all();
    thread_unlock_registry();
    if (!libc_fork)
        _IO_list_unlock();
    errno = fork_state.saved_errno;
}

static void child(void) { child_common(true); }

void fork_init(void) {
    fork_state.registered = true;
    world_init();
    pthread_atfork(prepare, parent, child);
}

/* libc's _Fork and clone, found once (dlsym may allocate: never before Oscar is ready). */
static void *libc_fn(_Atomic(void *) *slot, const char *name) {
    void *f = atomic_load_explicit(slot, memory_order_acquire);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, f, memory_order_release);
    }
    return f;
}

OSCAR_EXPORT pid_t _Fork(void) {
    static _Atomic(void *) slot;
    pid_t (*fn)(void) = (pid_t (*)(void))libc_fn(&slot, "_Fork");
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    if (!fork_state.registered) { /* protect mode: its heap is private memory, copied by the
                                   * kernel; the child's world is its own (its pid) */
        pid_t pid = fn();
        if (pid == 0)
            world_fork_child();
        return pid;
    }
    prepare();
    pid_t pid = fn();
    if (pid == 0)
        child_common(false);
    else
        parent_of(pid > 0 ? pid : 0);
    return pid;
}

/* clone without CLONE_VM: the child runs fn on a copy of our memory, like a forked child. */
struct clone_start {
    int (*fn)(void *);
    void *arg;
};

static int clone_child(void *p) {
    struct clone_start *s = p; /* (in the child's copy of our memory) */
    child_common(false);
    return s->fn(s->arg);
}

OSCAR_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...) {
    static _Atomic(void *) slot;
    int (*real)(int (*)(void *), void *, int, void *, ...) =
        (int (*)(int (*)(void *), void *, int, void *, ...))libc_fn(&slot, "clone");
    va_list ap;
    va_start(ap, arg);
    pid_t *ptid = va_arg(ap, pid_t *);
    void *tls = va_arg(ap, void *);
    pid_t *ctid = va_arg(ap, pid_t *);
    va_end(ap);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    /* Threads, vfork, posix_spawn: the memory is shared, not copied. Protect mode: its heap
     * is private memory, copied by the kernel. */
    if ((flags & CLONE_VM) || !fork_state.registered)
        return real(fn, stack, flags, arg, ptid, tls, ctid);
    struct clone_start start = {fn, arg};
    prepare();
    int r = real(clone_child, stack, flags, &start, ptid, tls, ctid);
    parent_of(r > 0 ? r : 0);
    return r;
}
