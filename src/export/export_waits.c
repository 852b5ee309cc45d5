/* export_waits: libc's waits that a stop of the world would cut short with EINTR, and that
 * set no signal mask (those are in export_signal.c, which removes the park signal from the
 * mask first), System V's msgrcv, msgsnd, semop and semtimedop among them: they go on
 * waiting after a stop's park, as export/waits.h says. libc's own
 * function does each wait, so each stays a cancellation point; sleep, usleep and thrd_sleep,
 * which call libc's nanosleep inside libc, go through the wrappers of nanosleep and
 * clock_nanosleep here. */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include "base/core.h"
#include "export/real.h"
#include "export/waits.h"
#include "scan/kroots.h"

#include <poll.h>
#include <semaphore.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

DECLARE(int, nanosleep, const struct timespec *, struct timespec *)
DECLARE(int, clock_nanosleep, clockid_t, int, const struct timespec *, struct timespec *)
DECLARE(int, poll, struct pollfd *, nfds_t, int)
DECLARE(int, select, int, fd_set *, fd_set *, fd_set *, struct timeval *)
DECLARE(int, epoll_wait, int, struct epoll_event *, int, int)
DECLARE(int, pause, void)
DECLARE(int, ppoll, struct pollfd *, nfds_t, const struct timespec *, const sigset_t *)
DECLARE(int, pselect, int, fd_set *, fd_set *, fd_set *, const struct timespec *,
        const sigset_t *)
DECLARE(int, epoll_pwait, int, struct epoll_event *, int, int, const sigset_t *)
DECLARE(int, sigsuspend, const sigset_t *)
DECLARE(int, sem_wait, sem_t *)
DECLARE(int, sem_timedwait, sem_t *, const struct timespec *)
DECLARE(int, sem_clockwait, sem_t *, clockid_t, const struct timespec *)
DECLARE(ssize_t, msgrcv, int, void *, size_t, long, int)
DECLARE(int, msgsnd, int, const void *, size_t, int)
DECLARE(int, semop, int, struct sembuf *, size_t)
DECLARE(int, semtimedop, int, struct sembuf *, size_t, const struct timespec *)

extern void __chk_fail(void) __attribute__((noreturn));

__attribute__((constructor)) static void find_real_functions(void) {
    void *all[] = {real_fn_nanosleep(), real_fn_clock_nanosleep(), real_fn_poll(),
                   real_fn_select(), real_fn_epoll_wait(), real_fn_pause(),
                   real_fn_ppoll(), real_fn_pselect(), real_fn_epoll_pwait(),
                   real_fn_sigsuspend(),
                   real_fn_sem_wait(), real_fn_sem_timedwait(), real_fn_sem_clockwait(),
                   real_fn_msgrcv(), real_fn_msgsnd(), real_fn_semop(), real_fn_semtimedop()};
    __asm__ volatile("" : : "r"(all) : "memory");
}

/* libc's function, or fail as a missing one would (ENOSYS). */
#define REAL(name, ...)                                                                       \
    (real_fn_##name() ? real_fn_##name()(__VA_ARGS__) : (errno = ENOSYS, -1))

/* ---- Sleeps: the kernel says what is left (rem), even where the program passed none. */

/* The rest of a cut sleep, until end: ppoll with no descriptor and the thread's mask, with
 * the program's signals held until it starts (waits.h, wait_cut_held), else nanosleep. 0 once
 * slept (*out zero); -1 and EINTR, *out what is left, when a signal (a stop's or the
 * program's: the caller's loop tells) ended it first. */
static int sleep_rest(struct wait *w, uint64_t end, struct timespec *out) {
    uint64_t now = os_monotonic_ns();
    if (now >= end) {
        out->tv_sec = out->tv_nsec = 0;
        return 0;
    }
    struct timespec next;
    ns_to_ts(end - now, &next);
    if (!w->held)
        return REAL(nanosleep, &next, out);
    if (REAL(ppoll, NULL, 0, &next, &w->mask) == 0) {
        out->tv_sec = out->tv_nsec = 0;
        return 0;
    }
    int e = errno;
    now = os_monotonic_ns();
    ns_to_ts(now >= end ? 0 : end - now, out);
    errno = e;
    return -1;
}

OSCAR_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem) {
    struct timespec left, *out = rem ? rem : &left;
    struct wait w;
    wait_begin(&w);
    int r = REAL(nanosleep, req, out);
    uint64_t end = 0;
    while (wait_cut_held(&w, r != 0)) {
        if (!end)
            end = wait_sleep_end(out);
        r = sleep_rest(&w, end, out);
    }
    wait_unhold(&w);
    return r;
}

/* A clock of CPU time (a process's or a thread's): a park's time is not its time. */
static bool cpu_clock(clockid_t clock) {
    return clock == CLOCK_PROCESS_CPUTIME_ID || clock == CLOCK_THREAD_CPUTIME_ID || clock < 0;
}

/* A relative sleep on CLOCK_MONOTONIC or CLOCK_REALTIME goes on as nanosleep's does (through
 * ppoll, the program's signals held until it starts); the others with their own clock (an
 * absolute deadline stays as it is; a CPU clock's time left is what the kernel said), where a
 * signal of the program's that comes just as the sleep is made again ends it only at its
 * deadline. errno is kept: clock_nanosleep returns its error. */
OSCAR_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                                 struct timespec *rem) {
    if (!real_fn_clock_nanosleep())
        return ENOSYS;
    bool absolute = flags & TIMER_ABSTIME;
    bool as_ppoll = !absolute && (clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME);
    struct timespec left, *out = absolute || rem ? rem : &left;
    struct wait w;
    wait_begin(&w);
    int err = real_fn_clock_nanosleep()(clock, flags, req, out);
    if (as_ppoll) {
        uint64_t end = 0;
        errno = err;
        while (wait_cut_held(&w, err != 0)) {
            if (!end)
                end = wait_sleep_end(out);
            err = sleep_rest(&w, end, out) == 0 ? 0 : errno;
            errno = err;
        }
        wait_unhold(&w);
        errno = w.errno_in;
        return err;
    }
    while (wait_cut_err(&w, err)) {
        struct timespec next = absolute ? *req : *out;
        if (!absolute && !cpu_clock(clock) && !wait_sleep_left(out, &next)) {
            out->tv_sec = out->tv_nsec = 0;
            return 0;
        }
        err = real_fn_clock_nanosleep()(clock, flags, &next, out);
    }
    return err;
}

/* As glibc's: nanosleep without rem; -1 and EINTR only for a signal of the program's. */
OSCAR_EXPORT int usleep(useconds_t us) {
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    return nanosleep(&ts, NULL);
}

/* As glibc's: the whole seconds left when a signal of the program's ended it, errno kept on
 * success. */
OSCAR_EXPORT unsigned sleep(unsigned seconds) {
    int saved = errno;
    struct timespec ts = {(time_t)seconds, 0};
    if (nanosleep(&ts, &ts) == 0) {
        errno = saved;
        return 0;
    }
    return (unsigned)ts.tv_sec;
}

/* C11's: 0, -1 when a signal of the program's ended it (rem then set), another negative
 * value on error. */
OSCAR_EXPORT int thrd_sleep(const struct timespec *duration, struct timespec *rem) {
    int err = clock_nanosleep(CLOCK_REALTIME, 0, duration, rem);
    return err == 0 ? 0 : err == EINTR ? -1 : -2;
}

/* ---- Waits for descriptors */

/* ms milliseconds (< 0: forever) as ppoll's timeout, in *ts. */
static const struct timespec *ms_ts(int ms, struct timespec *ts) {
    if (ms < 0)
        return NULL;
    ts->tv_sec = ms / 1000;
    ts->tv_nsec = (long)(ms % 1000) * 1000000;
    return ts;
}

/* (Made again as ppoll, with the thread's mask: waits.h, wait_cut_held.) */
OSCAR_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout) {
    struct wait w;
    struct timespec ts;
    wait_begin_ms(&w, timeout);
    int r = REAL(poll, fds, n, timeout);
    while (wait_cut_held(&w, r < 0))
        r = REAL(ppoll, fds, n, ms_ts(wait_ms_left(&w, timeout), &ts), wait_mask(&w, NULL));
    wait_unhold(&w);
    return r;
}

/* _FORTIFY_SOURCE's poll (libc's calls its own poll inside, past any wrapper). */
OSCAR_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fds_len) {
    if (fds_len / sizeof(*fds) < n)
        __chk_fail();
    return poll(fds, n, timeout);
}

/* What is left of w's timeout ts, in *timeout (Linux writes what is left there). */
static void left_tv(const struct wait *w, const struct timespec *ts, struct timeval *timeout) {
    struct timespec left;
    if (timeout && wait_ts_left(w, ts, &left) == &left)
        *timeout = left.tv_nsec > 999999000
                       ? (struct timeval){left.tv_sec + 1, 0}
                       : (struct timeval){left.tv_sec, (left.tv_nsec + 999) / 1000};
}

/* The sets are as they were after EINTR; the timeval gets what is left from here (Linux
 * writes it there too, but as of the cut: the time parked would be waited again). Made
 * again as pselect, with the thread's mask (waits.h, wait_cut_held). */
OSCAR_EXPORT int select(int n, fd_set *r, fd_set *wr, fd_set *e, struct timeval *timeout) {
    struct wait w;
    struct timespec ts, left;
    if (timeout)
        ts = (struct timespec){timeout->tv_sec, timeout->tv_usec * 1000};
    wait_begin_ts(&w, timeout ? &ts : NULL);
    int res = REAL(select, n, r, wr, e, timeout);
    bool again = false;
    while (wait_cut_held(&w, res < 0)) {
        again = true;
        res = REAL(pselect, n, r, wr, e, timeout ? wait_ts_left(&w, &ts, &left) : NULL,
                   wait_mask(&w, NULL));
    }
    if (again)
        left_tv(&w, &ts, timeout);
    wait_unhold(&w);
    return res;
}

/* (Made again as epoll_pwait, with the thread's mask: waits.h, wait_cut_held.) */
OSCAR_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout) {
    struct wait w;
    wait_begin_ms(&w, timeout);
    int r = REAL(epoll_wait, epfd, events, max, timeout);
    while (wait_cut_held(&w, r < 0))
        r = REAL(epoll_pwait, epfd, events, max, wait_ms_left(&w, timeout),
                 wait_mask(&w, NULL));
    wait_unhold(&w);
    return r;
}

/* ---- Waits for a signal or a semaphore */

/* (Made again as sigsuspend, with the thread's mask: waits.h, wait_cut_held.) */
OSCAR_EXPORT int pause(void) {
    struct wait w;
    wait_begin(&w);
    int r = REAL(pause);
    while (wait_cut_held(&w, r < 0))
        r = w.held ? REAL(sigsuspend, &w.mask) : REAL(pause);
    wait_unhold(&w);
    return r;
}

OSCAR_EXPORT int sem_wait(sem_t *sem) {
    int r;
    WAIT_AGAIN(r, REAL(sem_wait, sem));
    return r;
}

/* (Absolute deadlines: the same call again.) */
OSCAR_EXPORT int sem_timedwait(sem_t *sem, const struct timespec *at) {
    int r;
    WAIT_AGAIN(r, REAL(sem_timedwait, sem, at));
    return r;
}

OSCAR_EXPORT int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *at) {
    int r;
    WAIT_AGAIN(r, REAL(sem_clockwait, sem, clock, at));
    return r;
}

/* ---- System V's queues and semaphores: the kernel never restarts their waits. */

OSCAR_EXPORT ssize_t msgrcv(int id, void *msg, size_t size, long type, int flags) {
    ssize_t r;
    WAIT_AGAIN(r, REAL(msgrcv, id, msg, size, type, flags));
    return r;
}

OSCAR_EXPORT int msgsnd(int id, const void *msg, size_t size, int flags) {
    int r;
    /* The message waits in the kernel until received: the queue is a root (scan/kroots.h),
     * noted before the send, so a mark right after it finds the queue noted. */
    kroots_note_msgq(id);
    WAIT_AGAIN(r, REAL(msgsnd, id, msg, size, flags));
    return r;
}

OSCAR_EXPORT int semop(int id, struct sembuf *ops, size_t n) {
    int r;
    WAIT_AGAIN(r, REAL(semop, id, ops, n));
    return r;
}

OSCAR_EXPORT int semtimedop(int id, struct sembuf *ops, size_t n, const struct timespec *timeout) {
    struct wait w;
    struct timespec left;
    wait_begin_ts(&w, timeout);
    int r = REAL(semtimedop, id, ops, n, timeout);
    while (wait_cut(&w, r < 0))
        r = REAL(semtimedop, id, ops, n, wait_ts_left(&w, timeout, &left));
    return r;
}
