/* waits: a wait of the program's that a stop of the world cut short (a cut wait) goes on waiting.
 *
 * A stop parks every thread with a signal (scan/world.h). The kernel restarts most calls a
 * handler interrupts (SA_RESTART: read, write, futex waits, wait4...) but not the ones that
 * wait with a timeout or for a signal: poll, ppoll, select, pselect, epoll_wait(s),
 * nanosleep, clock_nanosleep, pause, sigsuspend, sigtimedwait, sigwaitinfo, sem_wait(s)
 * return EINTR after any handler, ours too. Under glibc no signal came, so the program must
 * not see one: each wrapper (export_waits.c, export_signal.c) reads world_calls_cut() before
 * the call and, when the call fails with EINTR and the count moved (the park handler saw this
 * thread's call cut short by its request, with no signal of the program's waiting) while no
 * handler of the program's ran (export_signal.c counts them), calls again with what is left
 * of the timeout, errno as it was on entry.
 *
 * What is left: nanosleep and clock_nanosleep say it themselves (their `rem`, counted from the
 * moment the park handler started, so the time parked is not slept again: with marks back
 * to back a wait that counted only its own time between parks took ten times as long),
 * absolute deadlines stay as they are; the others keep their deadline here, read on entry
 * from CLOCK_MONOTONIC (a system call, only for a finite timeout > 0: libc's vDSO clock may
 * be gone in a program that moved it, protect_shape_after_bss.c).
 *
 * Calls that are no waits of their own are cut short too where a timeout is set on their
 * socket (SO_RCVTIMEO: read, readv, recv, recvfrom, recvmsg, recvmmsg, accept, accept4;
 * SO_SNDTIMEO: write, writev, send, sendto, sendmsg, sendmmsg, connect), and System V's
 * msgrcv, msgsnd, semop, semtimedop always: export_io.c and export_waits.c call them again
 * the same way (wait_cut_socket).
 *
 * A signal of the program's may come in the instant between the cut call's return and the
 * next call, after the check: its handler runs there, and the call made again would go on
 * waiting (poll with no timeout, for ever: waits_signal_in_retry). So the waits that have a
 * variant that sets the signal mask as it starts (poll, select, epoll_wait, pause, the
 * relative sleeps as ppoll with no descriptor, and the ones that take a mask: ppoll, pselect,
 * epoll_pwait, epoll_pwait2, sigsuspend) hold the program's signals blocked from before the
 * check (wait_cut_held) and are made again through that variant with the program's mask: a
 * signal that came meanwhile is delivered as the call starts, which fails with EINTR, as
 * under glibc.
 *
 * Not covered (README, Limitations): the same calls made by a raw system call or inside libc
 * (its own internal calls do not come through these wrappers), and, for the waits with no
 * such variant (absolute and CPU-clock sleeps, sigtimedwait, sigwaitinfo, sem_wait and its
 * kind, the socket and System V calls), a signal of the program's arriving in that instant:
 * the call made again ends at its deadline, its next event or the next stop's cut, whichever
 * comes first. */
#ifndef OSCAR_EXPORT_WAITS_H
#define OSCAR_EXPORT_WAITS_H
#include "base/options.h"
#include "os/os.h"
#include "scan/world.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The program's signal handlers run on this thread so far (export_signal.c). */
extern __thread uint32_t export_program_handlers_run
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

struct wait {
    uint32_t cut;     /* world_calls_cut() before the latest call */
    uint32_t handlers; /* export_program_handlers_run then */
    int errno_in;     /* errno on entry: what a wait that succeeds after a cut leaves */
    uint64_t deadline; /* CLOCK_MONOTONIC ns, for a relative timeout read here; 0: none */
    bool timed_out;    /* wait_cut_socket ended the call at its socket's timeout */
    bool held;         /* wait_cut_held blocked the program's signals: mask is its mask */
    sigset_t mask;
};

#define NS_PER_S 1000000000ull

static inline void wait_begin(struct wait *w) {
    world_call_begins();
    w->cut = world_calls_cut();
    w->handlers = export_program_handlers_run;
    w->errno_in = errno;
    w->deadline = 0;
    w->timed_out = false;
    w->held = false;
}

/* ...with a timeout of ms milliseconds (poll, epoll_wait: < 0 forever, 0 no wait). */
static inline void wait_begin_ms(struct wait *w, int ms) {
    wait_begin(w);
    if (ms > 0)
        w->deadline = os_monotonic_ns() + (uint64_t)ms * 1000000u;
}

/* ...with a relative timeout ts (NULL: forever). */
static inline void wait_begin_ts(struct wait *w, const struct timespec *ts) {
    wait_begin(w);
    if (ts && ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < (long)NS_PER_S &&
        (ts->tv_sec || ts->tv_nsec)) {
        uint64_t ns = (uint64_t)ts->tv_sec > UINT64_MAX / 4 / NS_PER_S
                          ? UINT64_MAX / 4
                          : (uint64_t)ts->tv_sec * NS_PER_S + (uint64_t)ts->tv_nsec;
        w->deadline = os_monotonic_ns() + ns;
    }
}

/* A call of w's returned EINTR: was it a stop's cut (a cut counted since, no handler of the
 * program's run)? Then the caller calls again. */
static inline bool wait_cut_err(struct wait *w, int err) {
    if (err != EINTR)
        return false;
    uint32_t now = world_calls_cut();
    if (now == w->cut || export_program_handlers_run != w->handlers)
        return false;
    w->cut = now;
    uint64_t spin = (uint64_t)options_int(OPT_TEST_RETRY_SPIN_US) * 1000;
    if (spin)
        os_spin_ns(spin);
    world_call_begins(); /* (the caller calls again next) */
    return true;
}

/* ... for the calls that fail (failed: as the call says failure) with errno, which is put back
 * as it was on entry when the call is made again. */
static inline bool wait_cut(struct wait *w, bool failed) {
    if (!failed || !wait_cut_err(w, errno))
        return false;
    errno = w->errno_in;
    return true;
}

/* ... for a call made again through a variant that sets the mask as it starts (the waits
 * above): the program's signals (all but the park signal and the faults) are blocked before
 * the check and stay blocked until wait_unhold; the caller makes the call again with
 * wait_mask(w, the program's own mask for the call, or NULL). */
static inline bool wait_cut_held(struct wait *w, bool failed) {
    if (!failed || errno != EINTR)
        return false;
    if (!w->held) {
        sigset_t all;
        sigfillset(&all);
        sigdelset(&all, SIGSEGV);
        sigdelset(&all, SIGBUS);
        world_unblockable(&all);
        sigemptyset(&w->mask);
        w->held = os_sigprocmask(SIG_BLOCK, &all, &w->mask) == 0;
    }
    return wait_cut(w, true);
}

/* The mask to make the call again with: the call's own (ppoll's...), else the thread's. */
static inline const sigset_t *wait_mask(const struct wait *w, const sigset_t *own) {
    return own || !w->held ? own : &w->mask;
}

/* Once the call is done: the thread's mask as it was (errno kept). */
static inline void wait_unhold(struct wait *w) {
    if (w->held)
        os_sigprocmask(SIG_SETMASK, &w->mask, NULL);
    w->held = false;
}

/* ... for a call on socket fd, cut short because the socket has a timeout (SO_SNDTIMEO for
 * send, else SO_RCVTIMEO; the kernel would restart it without one). The kernel counts that
 * timeout from the call's start, which is not known here without reading a clock at every
 * call: it counts from the call's first cut instead (the call's time, and a clock read, are
 * paid only when a stop cut it), and the call fails with EAGAIN, as at its timeout, once that
 * much time passed. So it never ends before its time, and at most about twice it after it
 * began (a stop comes at most once every few milliseconds while the program frees, once per
 * fork). A call cut short on a descriptor with no timeout (no socket) is made again. */
static inline bool wait_cut_socket(struct wait *w, bool failed, int fd, bool send) {
    if (!failed || !wait_cut_err(w, errno))
        return false;
    if (!w->deadline) {
        uint64_t t = os_socket_timeout_ns(fd, send);
        w->deadline = t ? world_cut_at() + t : UINT64_MAX;
    }
    if (w->deadline != UINT64_MAX && os_monotonic_ns() >= w->deadline) {
        w->timed_out = true;
        errno = EAGAIN;
        return false;
    }
    errno = w->errno_in;
    return true;
}

/* r = CALL on socket fd (send: a sending call), made again while a stop cuts it short. */
#define SOCKET_CALL(r, fd, send, call)                                                         \
    do {                                                                                      \
        struct wait w_;                                                                       \
        wait_begin(&w_);                                                                      \
        do                                                                                    \
            r = (call);                                                                       \
        while (wait_cut_socket(&w_, r < 0, fd, send));                                        \
    } while (0)

/* r = CALL, made again while a stop cuts it short: the waits with no timeout, or an absolute
 * one. */
#define WAIT_AGAIN(r, call)                                                                   \
    do {                                                                                      \
        struct wait w_;                                                                       \
        wait_begin(&w_);                                                                      \
        do                                                                                    \
            r = (call);                                                                       \
        while (wait_cut(&w_, r < 0));                                                         \
    } while (0)

static inline void ns_to_ts(uint64_t ns, struct timespec *ts) {
    ts->tv_sec = (time_t)(ns / NS_PER_S);
    ts->tv_nsec = (long)(ns % NS_PER_S);
}

static inline uint64_t wait_ns_left(const struct wait *w) {
    uint64_t now = os_monotonic_ns();
    return now >= w->deadline ? 0 : w->deadline - now;
}

/* What is left of a timeout of ms milliseconds (rounded up, as the kernel rounds a wait). */
static inline int wait_ms_left(const struct wait *w, int ms) {
    if (ms <= 0 || !w->deadline)
        return ms;
    return (int)((wait_ns_left(w) + 999999) / 1000000);
}

/* What is left of the timeout ts, in *left; NULL stays NULL (forever). */
static inline const struct timespec *wait_ts_left(const struct wait *w, const struct timespec *ts,
                                                  struct timespec *left) {
    if (!ts || !w->deadline)
        return ts;
    ns_to_ts(wait_ns_left(w), left);
    return left;
}

/* A sleep cut short with rem left (the kernel's word, as of the moment it stopped): when it
 * ends (CLOCK_MONOTONIC ns), the time parked counted as slept (world_cut_at); 0 for a rem
 * that says nothing. */
static inline uint64_t wait_sleep_end(const struct timespec *rem) {
    if (rem->tv_sec < 0 || rem->tv_nsec < 0)
        return 0;
    return world_cut_at() + (uint64_t)rem->tv_sec * NS_PER_S + (uint64_t)rem->tv_nsec;
}

/* ... what is left of it now, in *left; false when nothing is. */
static inline bool wait_sleep_left(const struct timespec *rem, struct timespec *left) {
    uint64_t end = wait_sleep_end(rem);
    uint64_t now = os_monotonic_ns();
    if (!end || now >= end)
        return false;
    ns_to_ts(end - now, left);
    return true;
}
#endif
