/* export_kroots: the calls that hand the kernel a pointer it keeps, noted for the mark
 * (scan/kroots.h): an epoll instance, or a copy of its descriptor (the user data of its
 * registrations are roots), an eventfd or a copy (its counter), a POSIX timer (its
 * sigevent's value), a signal queued to the process itself (its value, while pending), and a
 * pipe or a stream socket pair (what is written to it and not read yet; likewise a bound
 * local datagram socket, and through export_io.c a local connection accepted or made between
 * two sockets of the program's), a message sent to a
 * POSIX queue and a queue's notification (copied: scan/mqlog.h). libc's functions do
 * the work; errno is theirs. Cheap in every mode (a scan of three tables of 1024 ints for a
 * copy of a descriptor; nothing for fcntl's other commands). */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/kroots.h"
#include "export/real.h"
#include "scan/kroots.h"
#include "scan/mqlog.h"
#include "scan/world.h"

#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

DECLARE(int, epoll_create, int)
DECLARE(int, epoll_create1, int)
DECLARE(int, eventfd, unsigned int, int)
DECLARE(int, dup, int)
DECLARE(int, dup2, int, int)
DECLARE(int, dup3, int, int, int)
DECLARE(int, fcntl, int, int, void *)
DECLARE(int, fcntl64, int, int, void *)
DECLARE(int, timer_create, clockid_t, struct sigevent *, timer_t *)
DECLARE(int, sigqueue, pid_t, int, const union sigval)
DECLARE(int, pthread_sigqueue, pthread_t, int, const union sigval)
DECLARE(int, pipe, int *)
DECLARE(int, pipe2, int *, int)
DECLARE(int, socketpair, int, int, int, int *)
DECLARE(int, bind, int, const struct sockaddr *, socklen_t)
DECLARE(int, mq_send, mqd_t, const char *, size_t, unsigned)
DECLARE(int, mq_timedsend, mqd_t, const char *, size_t, unsigned, const struct timespec *)
DECLARE(ssize_t, mq_receive, mqd_t, char *, size_t, unsigned *)
DECLARE(ssize_t, mq_timedreceive, mqd_t, char *, size_t, unsigned *, const struct timespec *)
DECLARE(int, mq_notify, mqd_t, const struct sigevent *)

__attribute__((constructor)) static void find_real_functions(void) {
    void *all[] = {real_fn_epoll_create(), real_fn_epoll_create1(), real_fn_eventfd(),
                   real_fn_dup(), real_fn_dup2(), real_fn_dup3(), real_fn_fcntl(),
                   real_fn_fcntl64(),
                   real_fn_timer_create(), real_fn_sigqueue(), real_fn_pthread_sigqueue(),
                   real_fn_pipe(), real_fn_pipe2(), real_fn_socketpair(), real_fn_bind(),
                   real_fn_mq_send(), real_fn_mq_timedsend(), real_fn_mq_receive(), real_fn_mq_timedreceive(),
                   real_fn_mq_notify()};
    (void)all;
}

OSCAR_EXPORT int epoll_create(int size) {
    int fd = real_fn_epoll_create()(size);
    kroots_note_epoll(fd);
    return fd;
}

OSCAR_EXPORT int epoll_create1(int flags) {
    int fd = real_fn_epoll_create1()(flags);
    kroots_note_epoll(fd);
    return fd;
}

/* An eventfd's counter may hold a value written and not read yet. */
OSCAR_EXPORT int eventfd(unsigned int initval, int flags) {
    int fd = real_fn_eventfd()(initval, flags);
    kroots_note_eventfd(fd);
    return fd;
}

/* got is a copy of the descriptor old (or -1): a copy of a noted instance's is noted too, so
 * the instance is still read if the first is closed. */
static int copied(int old, int got) {
    if (got >= 0 && kroots_is_epoll(old))
        kroots_note_epoll(got);
    if (got >= 0 && kroots_is_eventfd(old))
        kroots_note_eventfd(got);
    if (got >= 0 && kroots_is_stream(old))
        kroots_note_stream(got);
    return got;
}

/* A pipe's read end: a pointer written to the pipe and not read yet lies only in the kernel
 * (one thread handing objects to another through a pipe, or to itself). */
void export_note_pipe(const int fds[2]) { kroots_note_stream(fds[0]); }

OSCAR_EXPORT int pipe(int fds[2]) {
    int r = real_fn_pipe()(fds);
    if (r == 0)
        export_note_pipe(fds);
    return r;
}

OSCAR_EXPORT int pipe2(int fds[2], int flags) {
    int r = real_fn_pipe2()(fds, flags);
    if (r == 0)
        export_note_pipe(fds);
    return r;
}

/* Both ends of a local socket pair (each receives what the other sends); a datagram or
 * sequenced-packet pair's is read only while it has no error pending (a peek would take it:
 * README, Limitations). */
void export_note_socketpair(int domain, int type, const int fds[2]) {
    if (domain == AF_UNIX && ((type & 0xf) == SOCK_STREAM || (type & 0xf) == SOCK_DGRAM ||
                              (type & 0xf) == SOCK_SEQPACKET)) {
        kroots_note_stream(fds[0]);
        kroots_note_stream(fds[1]);
    }
}

OSCAR_EXPORT int socketpair(int domain, int type, int protocol, int fds[2]) {
    int r = real_fn_socketpair()(domain, type, protocol, fds);
    if (r == 0)
        export_note_socketpair(domain, type, fds);
    return r;
}

/* A local datagram socket bound to an address: anyone may send to it, the program too. */
OSCAR_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    int r = real_fn_bind()(fd, addr, len);
    if (r == 0 && addr && len >= sizeof addr->sa_family && addr->sa_family == AF_UNIX)
        kroots_note_local_socket(fd, true);
    return r;
}

OSCAR_EXPORT int dup(int old) { return copied(old, real_fn_dup()(old)); }

OSCAR_EXPORT int dup2(int old, int new) { return copied(old, real_fn_dup2()(old, new)); }

OSCAR_EXPORT int dup3(int old, int new, int flags) {
    return copied(old, real_fn_dup3()(old, new, flags));
}

/* fcntl's third argument, whatever the command, is one register: libc reads it as a pointer
 * too. F_DUPFD and F_DUPFD_CLOEXEC copy a descriptor. */
static int fcntl_done(int fd, int cmd, int got) {
    return cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC ? copied(fd, got) : got;
}

OSCAR_EXPORT int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_done(fd, cmd, real_fn_fcntl()(fd, cmd, arg));
}

OSCAR_EXPORT int fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    int (*real)(int, int, void *) = real_fn_fcntl64(); /* (glibc 2.28+; before, fcntl) */
    return fcntl_done(fd, cmd, (real ? real : real_fn_fcntl())(fd, cmd, arg));
}

/* A timer that signals the program hands the kernel sigev_value, given back in the signal's
 * si_value. (SIGEV_THREAD's value stays in libc's own allocation, a live object.) */
OSCAR_EXPORT int timer_create(clockid_t clock, struct sigevent *ev, timer_t *id) {
    if (ev && ev->sigev_notify != SIGEV_NONE && ev->sigev_notify != SIGEV_THREAD)
        kroots_note_timer();
    return real_fn_timer_create()(clock, ev, id);
}

/* A signal queued to the process itself holds its value in the kernel until it is delivered
 * (si_value): noted once it is queued (until then the caller's frame holds the value). Only
 * to itself: another process's pointer means nothing here. */
OSCAR_EXPORT int sigqueue(pid_t pid, int sig, const union sigval value) {
    int r = real_fn_sigqueue()(pid, sig, value);
    if (r == 0 && sig > 0 && pid == getpid())
        kroots_note_signal(sig, (uintptr_t)value.sival_ptr);
    return r;
}

OSCAR_EXPORT int pthread_sigqueue(pthread_t thread, int sig, const union sigval value) {
    struct world_send w = {.active = false}; /* (the park signal: export/export_send.c) */
    if (sig == world_park_signal())
        world_program_send_begin(pthread_equal(thread, pthread_self()), &w);
    int r = real_fn_pthread_sigqueue()(thread, sig, value);
    world_program_send_end(&w);
    if (r == 0 && sig > 0)
        kroots_note_signal(sig, (uintptr_t)value.sival_ptr);
    return r;
}

/* POSIX message queues: a message waits in the kernel until received, and a queue's
 * notification keeps its value there until a message arrives; no call reads them without
 * taking them, so what the program sends is copied as the send returns (scan/mqlog.h).
 * (libc's mq_send calls its mq_timedsend inside itself: both are wrapped. Without them, a
 * libc before 2.34 and no librt loaded, the call fails as it would: ENOSYS.) */
#define MQ_REAL(name, ...)                                                                    \
    (real_fn_##name() ? real_fn_##name()(__VA_ARGS__) : (errno = ENOSYS, -1))

OSCAR_EXPORT int mq_send(mqd_t q, const char *msg, size_t len, unsigned prio) {
    int r = MQ_REAL(mq_send, q, msg, len, prio);
    if (r == 0)
        mqlog_sent(q, msg, len, prio);
    return r;
}

OSCAR_EXPORT int mq_timedsend(mqd_t q, const char *msg, size_t len, unsigned prio,
                              const struct timespec *at) {
    int r = MQ_REAL(mq_timedsend, q, msg, len, prio, at);
    if (r == 0)
        mqlog_sent(q, msg, len, prio);
    return r;
}

/* (The priority is asked for even when the caller does not want it: the copy to drop is the
 * one with the same priority and bytes.) */
OSCAR_EXPORT ssize_t mq_receive(mqd_t q, char *msg, size_t len, unsigned *prio) {
    unsigned p = 0;
    ssize_t r = MQ_REAL(mq_receive, q, msg, len, &p);
    if (r >= 0) {
        mqlog_received(q, msg, (size_t)r, p);
        if (prio)
            *prio = p;
    }
    return r;
}

OSCAR_EXPORT ssize_t mq_timedreceive(mqd_t q, char *msg, size_t len, unsigned *prio,
                                     const struct timespec *at) {
    unsigned p = 0;
    ssize_t r = MQ_REAL(mq_timedreceive, q, msg, len, &p, at);
    if (r >= 0) {
        mqlog_received(q, msg, (size_t)r, p);
        if (prio)
            *prio = p;
    }
    return r;
}

/* SIGEV_SIGNAL's value is the signal's si_value; SIGEV_THREAD's reaches the kernel inside
 * libc's cookie for its helper thread: either way the kernel holds it. Noted once registered
 * (until then the caller's sigevent holds it). */
OSCAR_EXPORT int mq_notify(mqd_t q, const struct sigevent *ev) {
    int r = MQ_REAL(mq_notify, q, ev);
    if (r == 0) {
        int saved = errno;
        bool on = ev && (ev->sigev_notify == SIGEV_SIGNAL || ev->sigev_notify == SIGEV_THREAD);
        mqlog_notify(q, on, on ? (uintptr_t)ev->sigev_value.sival_ptr : 0);
        errno = saved;
    }
    return r;
}
