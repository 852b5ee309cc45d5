/* export_signal: libc's signal calls, so that
 *  - every way to install a handler for SIGSEGV/SIGBUS keeps Oscar's fault handler first
 *    (sigaction, signal, bsd_signal, ssignal, sysv_signal, __sysv_signal, sigset, sigignore:
 *    inside libc these call each other directly, so each one needs its own wrapper), and the
 *    park signal's handler stays ours too (scan/world.c);
 *  - the program can never block the park signal (scan/world.h): every call that sets a
 *    thread's mask, or waits with a temporary one, gets it removed (sigprocmask,
 *    pthread_sigmask, sigsuspend, sigwait, sigwaitinfo, sigtimedwait, sigblock, sigsetmask,
 *    sighold, sigset(SIG_HOLD), sigpause, ppoll, pselect, epoll_pwait, epoll_pwait2), and
 *    so does every handler's sa_mask, and a signalfd's (one that took the park signal read
 *    a stop's requests before the handler could run: the thread never parked, every stop
 *    timed out, and the program read signals nobody sent it: signalfd_daemon). A thread
 *    that blocks it by a raw system call only makes a stop time out (the caller skips its
 *    round; four in a row, and marks say once that they cannot run).
 *
 * The waits among them also go on waiting when a stop's park cut them short (export/waits.h).
 *
 * Calls that must stay cancellation points (sigsuspend, the waits, ppoll...) go on to
 * libc's own function with the corrected mask: __sigsuspend by name, the others found once
 * with dlsym(RTLD_NEXT). The others are done here with the system call, as libc does (glibc's
 * pthread_sigmask also removes its two internal signals, 32 and 33: so do we). */
#define _GNU_SOURCE
#include "base/core.h"
#include "base/lock.h"
#include "export/waits.h"
#include "os/os.h"
#include "report/fault.h"
#include "scan/world.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>

extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
extern int __sigsuspend(const sigset_t *set);
extern void __chk_fail(void) __attribute__((noreturn));

/* The mask the program asked for, less the signals it may not block. */
static const sigset_t *allowed(const sigset_t *set, sigset_t *copy) {
    if (!set)
        return NULL;
    *copy = *set;
    world_unblockable(copy);
    sigdelset(copy, 32); /* glibc's SIGCANCEL and SIGSETXID (its pthread_sigmask does this) */
    sigdelset(copy, 33);
    return copy;
}

/* ---- Handlers */

/* The program's handlers but for SIGSEGV, SIGBUS and the park signal (whose handlers are
 * Oscar's own, with the program's behind them): the kernel runs `counted` in their place,
 * with the program's flags and mask, and it calls the program's. It counts, per thread, the
 * program's handlers that ran (export/waits.h): a wait that failed with EINTR after a stop's
 * park, but with one of the program's handlers run since it began, was cut short by the
 * program's signal too, and must fail as under glibc. (A signal of the program's delivered
 * as its wait returned, in the same instant as a park's request, looks like the park's cut
 * to the park handler; only this count tells them apart.) */
__thread uint32_t export_program_handlers_run __attribute__((tls_model("initial-exec")));

static struct {
    struct sigaction program[NSIG]; /* where `counted` stands in for the program's */
    oscar_lock lock;                /* orders the program's sigaction calls with each other */
} signal_state = {.lock = OSCAR_LOCK_INIT(PROGRAM_HANDLERS)};

/* Small frame: it may run on a small alternate stack, before the program's handler. */
static void counted(int sig, siginfo_t *si, void *uc) {
    export_program_handlers_run++;
    /* (Read without the lock: a sigaction racing with the delivery is the race the kernel
     * has too.) */
    struct sigaction *stored = &signal_state.program[sig];
    int flags = stored->sa_flags;
    void (*action)(int, siginfo_t *, void *) = stored->sa_sigaction;
    void (*handler)(int) = stored->sa_handler;
    bool custom = os_is_handler(stored);
    if (flags & SA_RESETHAND) { /* the kernel has put back the default: so here */
        memset(stored, 0, sizeof *stored);
        stored->sa_handler = SIG_DFL;
    }
    if (!custom)
        return; /* (changed meanwhile) */
    /* On the alternate stack, the kernel held the park signal back (program_sigaction):
     * let it in where its frame fits below, as the program's handler runs. */
    int park = world_park_signal();
    if ((flags & SA_ONSTACK) && sig != park &&
        sigismember(&((ucontext_t *)uc)->uc_sigmask, park) != 1 && os_room_for_a_signal())
        os_unblock_signals(world_park_mask());
    if (flags & SA_SIGINFO)
        action(sig, si, uc);
    else
        handler(sig);
}

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000 /* (the kernel's: glibc keeps it out of its headers) */
#endif

/* The program's action `stored`, read back as the kernel would give it had it been installed
 * as given (kernel: what the kernel gave for the action in place, ours): glibc installs every
 * action with its own restorer (SA_RESTORER), and the kernel drops SIGKILL and SIGSTOP from
 * the mask. (sigaction_readback: both differed from glibc's.) */
static struct sigaction as_kernel_keeps(struct sigaction stored, const struct sigaction *kernel) {
    stored.sa_flags |= kernel->sa_flags & SA_RESTORER;
    stored.sa_restorer = kernel->sa_restorer;
    sigdelset(&stored.sa_mask, SIGKILL);
    sigdelset(&stored.sa_mask, SIGSTOP);
    return stored;
}

/* sigaction for a signal whose handler the program owns alone. */
static int program_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP)
        return __sigaction(sig, act, old);
    oscar_lock_acquire(&signal_state.lock);
    struct sigaction was;
    int r;
    if (act && os_is_handler(act)) {
        struct sigaction k = *act;
        k.sa_flags |= SA_SIGINFO;
        k.sa_sigaction = counted;
        /* A stop's park signal must not land on an alternate stack with no room for its
         * frame (the kernel kills the process): the kernel blocks it as such a handler
         * starts, and counted lets it in where it fits (altstack_handler_during_marks). */
        if (act->sa_flags & SA_ONSTACK) /* (both: glibc's sigaddset refuses the second, its
                                          * own SIGSETXID; its setuid waits for the handler) */
            k.sa_mask.__val[0] |= world_park_mask();
        struct sigaction before = signal_state.program[sig];
        signal_state.program[sig] = *act; /* (before the kernel can call counted) */
        r = __sigaction(sig, &k, &was);
        if (r != 0)
            signal_state.program[sig] = before;
        else if (was.sa_sigaction == counted && (was.sa_flags & SA_SIGINFO))
            was = as_kernel_keeps(before, &was);
    } else {
        r = __sigaction(sig, act, &was);
        if (r == 0 && was.sa_sigaction == counted && (was.sa_flags & SA_SIGINFO))
            was = as_kernel_keeps(signal_state.program[sig], &was);
    }
    oscar_lock_release(&signal_state.lock);
    if (r == 0 && old)
        *old = was;
    return r;
}

OSCAR_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    struct sigaction copy;
    if (act) {
        copy = *act;
        world_unblockable(&copy.sa_mask);
        act = &copy;
    }
    if (sig == SIGSEGV || sig == SIGBUS) {
        if (fault_program_sigaction(sig, act, old))
            return 0;
    } else if (sig == world_park_signal()) {
        if (world_program_sigaction(act, old))
            return 0;
    } else {
        return program_sigaction(sig, act, old);
    }
    return __sigaction(sig, act, old);
}

static sighandler_t install(int sig, sighandler_t handler, int flags, bool mask_self) {
    struct sigaction act, old;
    if (handler == SIG_ERR || sig <= 0 || sig >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    if (mask_self)
        sigaddset(&act.sa_mask, sig);
    act.sa_flags = flags;
    if (sigaction(sig, &act, &old) < 0)
        return SIG_ERR;
    return old.sa_handler;
}

/* glibc's signal(): BSD semantics (handler stays, system calls restart). */
OSCAR_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
    return install(sig, handler, SA_RESTART, true);
}
OSCAR_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler) {
    return install(sig, handler, SA_RESTART, true);
}
OSCAR_EXPORT sighandler_t ssignal(int sig, sighandler_t handler) {
    return install(sig, handler, SA_RESTART, true);
}

/* System V semantics: reset to the default on delivery, not blocked, no restart. */
OSCAR_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler) {
    return install(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}
OSCAR_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler) {
    return install(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

OSCAR_EXPORT int sigignore(int sig) {
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = SIG_IGN;
    sigemptyset(&act.sa_mask);
    return sigaction(sig, &act, NULL);
}

/* ---- Masks */

OSCAR_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
    sigset_t copy;
    return os_sigprocmask(how, allowed(set, &copy), old);
}

OSCAR_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    int err = pthread_sigmask(how, set, old);
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

static int block_one(int how, int sig, sigset_t *old) {
    sigset_t set;
    if (sig <= 0 || sig >= NSIG) {
        errno = EINVAL;
        return -1;
    }
    sigemptyset(&set);
    sigaddset(&set, sig);
    return sigprocmask(how, &set, old);
}

OSCAR_EXPORT int sighold(int sig) { return block_one(SIG_BLOCK, sig, NULL); }
OSCAR_EXPORT int sigrelse(int sig) { return block_one(SIG_UNBLOCK, sig, NULL); }

OSCAR_EXPORT sighandler_t sigset(int sig, sighandler_t disp) {
    sigset_t old;
    struct sigaction act, oact;
    if (disp == SIG_HOLD) {
        if (block_one(SIG_BLOCK, sig, &old) < 0)
            return SIG_ERR;
        if (sigismember(&old, sig))
            return SIG_HOLD;
        if (sigaction(sig, NULL, &oact) < 0)
            return SIG_ERR;
        return oact.sa_handler;
    }
    if (disp == SIG_ERR || sig <= 0 || sig >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = disp;
    sigemptyset(&act.sa_mask);
    if (sigaction(sig, &act, &oact) < 0)
        return SIG_ERR;
    if (block_one(SIG_UNBLOCK, sig, &old) < 0)
        return SIG_ERR;
    return sigismember(&old, sig) ? SIG_HOLD : oact.sa_handler;
}

/* The old BSD masks: bit sig - 1 for signal sig, in an int. */
static void from_bits(int bits, sigset_t *set) {
    sigemptyset(set);
    for (int s = 1; s <= 32; s++)
        if (bits & (1u << (s - 1)))
            sigaddset(set, s);
}
static int to_bits(const sigset_t *set) {
    int bits = 0;
    for (int s = 1; s <= 32; s++)
        if (sigismember(set, s))
            bits |= (int)(1u << (s - 1));
    return bits;
}

OSCAR_EXPORT int sigblock(int mask) {
    sigset_t set, old;
    from_bits(mask, &set);
    if (sigprocmask(SIG_BLOCK, &set, &old) < 0)
        return -1;
    return to_bits(&old);
}

OSCAR_EXPORT int sigsetmask(int mask) {
    sigset_t set, old;
    from_bits(mask, &set);
    if (sigprocmask(SIG_SETMASK, &set, &old) < 0)
        return -1;
    return to_bits(&old);
}

/* ---- Waiting with a temporary mask */

OSCAR_EXPORT int sigsuspend(const sigset_t *set) {
    sigset_t copy;
    const sigset_t *mask = allowed(set, &copy);
    struct wait w;
    wait_begin(&w);
    int r = __sigsuspend(mask);
    while (wait_cut_held(&w, r < 0)) /* (waits.h: the program's signals held until then) */
        r = __sigsuspend(mask);
    wait_unhold(&w);
    return r;
}

/* sigpause(mask) (BSD), __xpg_sigpause(sig) (XPG: wait with sig unblocked), and __sigpause. */
OSCAR_EXPORT int __sigpause(int sig_or_mask, int is_sig) {
    sigset_t set;
    if (is_sig) {
        sigprocmask(SIG_BLOCK, NULL, &set);
        sigdelset(&set, sig_or_mask);
    } else {
        from_bits(sig_or_mask, &set);
    }
    return sigsuspend(&set);
}
/* (signal.h renames sigpause to __xpg_sigpause under _GNU_SOURCE: name both by asm labels.) */
OSCAR_EXPORT int bsd_sigpause(int mask) __asm__("sigpause");
OSCAR_EXPORT int bsd_sigpause(int mask) { return __sigpause(mask, 0); }
OSCAR_EXPORT int xpg_sigpause(int sig) __asm__("__xpg_sigpause");
OSCAR_EXPORT int xpg_sigpause(int sig) { return __sigpause(sig, 1); }

/* libc's own function, found once (NULL until found: dlsym may allocate, so not during
 * Oscar's initialisation; these are not called that early). */
static void *next(_Atomic(void *) *slot, const char *name) {
    void *f = atomic_load_explicit(slot, memory_order_acquire);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, f, memory_order_release);
    }
    return f;
}
#define NEXT(name)                                                                            \
    static _Atomic(void *) name##_slot;                                                       \
    __typeof__(name) *name##_fn = (__typeof__(name) *)next(&name##_slot, #name);              \
    if (!name##_fn) {                                                                         \
        errno = ENOSYS;                                                                       \
        return -1;                                                                            \
    }

OSCAR_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info,
                              const struct timespec *timeout) {
    NEXT(sigtimedwait);
    sigset_t copy;
    const sigset_t *mask = allowed(set, &copy);
    struct wait w;
    struct timespec left;
    wait_begin_ts(&w, timeout);
    int r = sigtimedwait_fn(mask, info, timeout);
    while (wait_cut(&w, r < 0))
        r = sigtimedwait_fn(mask, info, wait_ts_left(&w, timeout, &left));
    return r;
}

OSCAR_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info) {
    NEXT(sigwaitinfo);
    sigset_t copy;
    const sigset_t *mask = allowed(set, &copy);
    int r;
    WAIT_AGAIN(r, sigwaitinfo_fn(mask, info));
    return r;
}

/* The signals of fd (a new one for -1), less the park signal; as glibc, the others kept. */
OSCAR_EXPORT int signalfd(int fd, const sigset_t *mask, int flags) {
    NEXT(signalfd);
    const sigset_t *volatile given = mask; /* (declared nonnull; NULL is the kernel's EFAULT) */
    if (!given)
        return signalfd_fn(fd, mask, flags);
    sigset_t copy = *mask;
    world_unblockable(&copy);
    return signalfd_fn(fd, &copy, flags);
}

OSCAR_EXPORT int sigwait(const sigset_t *set, int *sig) {
    static _Atomic(void *) slot;
    int (*fn)(const sigset_t *, int *) = (int (*)(const sigset_t *, int *))next(&slot, "sigwait");
    if (!fn)
        return ENOSYS;
    sigset_t copy;
    return fn(allowed(set, &copy), sig);
}

OSCAR_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
                       const sigset_t *mask) {
    NEXT(ppoll);
    sigset_t copy;
    const sigset_t *m = allowed(mask, &copy);
    struct wait w;
    struct timespec left;
    wait_begin_ts(&w, timeout);
    int r = ppoll_fn(fds, n, timeout, m);
    while (wait_cut_held(&w, r < 0))
        r = ppoll_fn(fds, n, wait_ts_left(&w, timeout, &left), wait_mask(&w, m));
    wait_unhold(&w);
    return r;
}

/* _FORTIFY_SOURCE's ppoll (libc's calls its own ppoll inside, past the wrapper above). */
OSCAR_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
                             const sigset_t *mask, size_t fds_len) {
    if (fds_len / sizeof(*fds) < n)
        __chk_fail();
    return ppoll(fds, n, timeout, mask);
}

OSCAR_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
                         const sigset_t *mask) {
    NEXT(pselect);
    sigset_t copy;
    const sigset_t *m = allowed(mask, &copy);
    struct wait wt;
    struct timespec left;
    wait_begin_ts(&wt, timeout);
    int res = pselect_fn(n, r, w, e, timeout, m);
    while (wait_cut_held(&wt, res < 0))
        res = pselect_fn(n, r, w, e, wait_ts_left(&wt, timeout, &left), wait_mask(&wt, m));
    wait_unhold(&wt);
    return res;
}

OSCAR_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout,
                             const sigset_t *mask) {
    NEXT(epoll_pwait);
    sigset_t copy;
    const sigset_t *m = allowed(mask, &copy);
    struct wait w;
    wait_begin_ms(&w, timeout);
    int r = epoll_pwait_fn(epfd, events, max, timeout, m);
    while (wait_cut_held(&w, r < 0))
        r = epoll_pwait_fn(epfd, events, max, wait_ms_left(&w, timeout), wait_mask(&w, m));
    wait_unhold(&w);
    return r;
}

OSCAR_EXPORT int epoll_pwait2(int epfd, struct epoll_event *events, int max,
                              const struct timespec *timeout, const sigset_t *mask) {
    NEXT(epoll_pwait2);
    sigset_t copy;
    const sigset_t *m = allowed(mask, &copy);
    struct wait w;
    struct timespec left;
    wait_begin_ts(&w, timeout);
    int r = epoll_pwait2_fn(epfd, events, max, timeout, m);
    while (wait_cut_held(&w, r < 0))
        r = epoll_pwait2_fn(epfd, events, max, wait_ts_left(&w, timeout, &left),
                            wait_mask(&w, m));
    wait_unhold(&w);
    return r;
}
