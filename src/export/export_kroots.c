/* export_kroots: the calls that hand the kernel a pointer it keeps, noted for the mark
 * (scan/kroots.h): an epoll instance, or a copy of its descriptor (the user data of its
 * registrations are roots), an eventfd or a copy (its counter), a POSIX timer (its
 * sigevent's value), a signal queued to the process itself (its value, while pending), and a
 * pipe or a stream socket pair (what is written to it and not read yet). libc's functions do
 * the work; errno is theirs. Cheap in every mode (a scan of three tables of 1024 ints for a
 * copy of a descriptor; nothing for fcntl's other commands). */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/real.h"
#include "scan/kroots.h"
#include "scan/world.h"

#include <fcntl.h>
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

__attribute__((constructor)) static void find_real_functions(void) {
    void *all[] = {real_fn_epoll_create(), real_fn_epoll_create1(), real_fn_eventfd(),
                   real_fn_dup(), real_fn_dup2(), real_fn_dup3(), real_fn_fcntl(),
                   real_fn_fcntl64(),
                   real_fn_timer_create(), real_fn_sigqueue(), real_fn_pthread_sigqueue(),
                   real_fn_pipe(), real_fn_pipe2(), real_fn_socketpair()};
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
OSCAR_EXPORT int pipe(int fds[2]) {
    int r = real_fn_pipe()(fds);
    if (r == 0)
        kroots_note_stream(fds[0]);
    return r;
}

OSCAR_EXPORT int pipe2(int fds[2], int flags) {
    int r = real_fn_pipe2()(fds, flags);
    if (r == 0)
        kroots_note_stream(fds[0]);
    return r;
}

/* Both ends of a stream socket pair (each receives what the other sends). Datagram and
 * sequenced-packet pairs are not read: a peek of one takes its pending error (README,
 * Limitations). */
OSCAR_EXPORT int socketpair(int domain, int type, int protocol, int fds[2]) {
    int r = real_fn_socketpair()(domain, type, protocol, fds);
    if (r == 0 && domain == AF_UNIX &&
        ((type & 0xf) == SOCK_STREAM || (type & 0xf) == SOCK_DGRAM ||
         (type & 0xf) == SOCK_SEQPACKET)) {
        kroots_note_stream(fds[0]);
        kroots_note_stream(fds[1]);
    }
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
