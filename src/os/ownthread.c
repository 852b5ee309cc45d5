/* ownthread: see ownthread.h. */
#define _GNU_SOURCE
#include "os/ownthread.h"
#include "os/filters.h"
#include "os/os.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* Threads being started: the new thread names itself (prctl), since pthread_setname_np for
 * another thread opens /proc/self/task/N/comm, a descriptor at the lowest free number while
 * the program runs (a thread of the program's that closed its descriptors and opens one must
 * get the lowest: tests/programs/lowest_descriptor.c). */
#define STARTS_MAX 16
static struct {
    struct start { /* one per thread being started (see `used`) */
        atomic_int used; /* claimed by compare-and-swap (os_thread_start), cleared by the new
                          * thread once it has read the rest */
        void *(*fn)(void *);
        void *arg;
        const char *name;
    } starts[STARTS_MAX];
    /* Oscar's threads started in this process and not yet leaving: added to by
     * os_thread_start, taken from by os_thread_leaving (atomic), zeroed in a fork's child. */
    atomic_uint alive;
} ownthread_state;

unsigned os_threads_own(void) { return atomic_load(&ownthread_state.alive); }
void os_thread_leaving(void) { atomic_fetch_sub(&ownthread_state.alive, 1); }
void os_threads_fork_child(void) { atomic_store(&ownthread_state.alive, 0); }

static void *named(void *p) {
    struct start *s = p;
    void *(*fn)(void *) = s->fn;
    void *arg = s->arg;
    os_syscall(SYS_prctl, PR_SET_NAME, (long)s->name, 0, 0, 0);
    atomic_store_explicit(&s->used, 0, memory_order_release);
    return fn(arg);
}

/* A free start record for fn, or NULL (then the thread goes unnamed). */
static struct start *claim(void *(*fn)(void *), void *arg, const char *name) {
    for (int i = 0; i < STARTS_MAX; i++) {
        int free_ = 0;
        struct start *s = &ownthread_state.starts[i];
        if (atomic_compare_exchange_strong(&s->used, &free_, 1)) {
            s->fn = fn;
            s->arg = arg;
            s->name = name;
            return s;
        }
    }
    return NULL;
}

/* libc makes a thread with calls of its own, past os.c (the stack is Oscar's, so no mmap):
 * once the program has a seccomp filter, Oscar starts one only if no filter would kill for
 * any of them (one may fail with an errno: pthread_create then fails, or glibc falls back
 * from clone3 to clone). */
static bool threads_allowed(void) {
    static const long none[6];
    const long clone_thread[6] = {0x3d0f00 /* glibc's flags for a thread */, 0, 0, 0, 0, 0};
    static const long calls[] = {SYS_rt_sigprocmask, SYS_clone3, SYS_set_robust_list,
                                 SYS_rseq,           SYS_futex,  SYS_madvise,
                                 SYS_exit};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (!os_filters_would_allow(calls[i], none))
            return false;
    return os_filters_would_allow(SYS_clone, clone_thread);
}

/* May Oscar make one more thread without taking one the program may want? RLIMIT_NPROC counts
 * every thread of every process of the real user, Oscar's among them: a program run under a
 * small one (a service's unprivileged user, `prlimit --nproc`) found its own pthread_create
 * and fork failing with EAGAIN, where under glibc they worked (rlimit_nproc_threads). Yes
 * when the limit is infinite, when the process is exempt from it (CAP_SYS_RESOURCE or
 * CAP_SYS_ADMIN), or when the whole system has fewer threads than the limit by a margin
 * (/proc/loadavg's count): no user can be near it then. Otherwise Oscar does without. */
static bool nproc_room(void) {
    uint64_t limit;
    if (os_rlimit(RLIMIT_NPROC, &limit) != 0 || limit == UINT64_MAX)
        return true;
    struct {
        uint32_t version;
        int pid;
    } head = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
    struct {
        uint32_t effective, permitted, inheritable;
    } caps[2] = {{0, 0, 0}, {0, 0, 0}};
    if (os_syscall(SYS_capget, (long)&head, (long)caps, 0, 0, 0) == 0 &&
        (caps[0].effective & (1u << 24 /* CAP_SYS_RESOURCE */ | 1u << 21 /* CAP_SYS_ADMIN */)))
        return true;
    char buf[128];
    long fd = os_open_read("/proc/loadavg");
    if (fd < 0)
        return false;
    long n = os_read((int)fd, buf, sizeof buf - 1);
    os_close((int)fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    const char *p = strchr(buf, '/'); /* ("0.00 0.01 0.05 1/234 5678": running/threads) */
    uint64_t threads = 0;
    for (p = p ? p + 1 : ""; *p >= '0' && *p <= '9'; p++)
        threads = threads * 10 + (uint64_t)(*p - '0');
    return threads && threads + 256 < limit;
}

int os_thread_start(void *(*fn)(void *), void *arg, void *stack, size_t size,
                    const sigset_t *open, const char *name) {
    if (atomic_load_explicit(&os_filters_on, memory_order_acquire) && !threads_allowed())
        return EPERM;
    if (!nproc_room())
        return EAGAIN;
    int saved = errno;
    pthread_attr_t attr;
    int err = pthread_attr_init(&attr);
    if (err)
        return err;
    sigset_t mask;
    sigfillset(&mask);
    for (int s = 1; s < NSIG; s++)
        if (sigismember(open, s) == 1)
            sigdelset(&mask, s);
    pthread_t t;
    struct start *s = claim(fn, arg, name);
    atomic_fetch_add(&ownthread_state.alive, 1); /* (before it runs: it may leave at once) */
    if (!(err = pthread_attr_setstack(&attr, stack, size)) &&
        !(err = pthread_attr_setsigmask_np(&attr, &mask)) &&
        !(err = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED)))
        err = s ? pthread_create(&t, &attr, named, s) : pthread_create(&t, &attr, fn, arg);
    if (err && s)
        atomic_store(&s->used, 0);
    if (err)
        atomic_fetch_sub(&ownthread_state.alive, 1);
    pthread_attr_destroy(&attr);
    errno = saved;
    return err;
}

bool os_thread_gone(long tid, uint64_t timeout_ns) {
    _Atomic uint32_t nap = 0;
    for (uint64_t t0 = os_monotonic_ns();;) {
        if (os_tgkill(os_getpid(), tid, 0) == ESRCH) /* (ESRCH once the kernel released it) */
            return true;
        if (os_monotonic_ns() - t0 > timeout_ns)
            return false;
        os_futex_wait(&nap, 0, 50 * 1000); /* (a 50 us nap) */
    }
}
