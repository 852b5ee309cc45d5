/* export_io: the libc calls that hand a buffer to the kernel (read, write, recv, send and
 * their families). A use after free inside the program faults and is reported; inside a
 * system call it does not: the kernel returns EFAULT for a revoked shadow (strict mode, a
 * sampled object in protect mode), or reads and writes a freed object whose page is still
 * mapped (fast mode), and nothing is reported (issue 18, item 20). So each wrapper asks, before
 * the call, whether its buffer starts in a freed object (or where nothing was allocated), and
 * then reports it as a fault there would be reported, and dies by SIGSEGV. Only the buffer's
 * first byte is checked: a length larger than the object (read(fd, buf, sizeof big) into a
 * smaller buffer, often harmless) is left to the kernel, as before.
 *
 * The calls on a socket with a timeout (SO_RCVTIMEO, SO_SNDTIMEO) are also the kernel's waits
 * that a stop of the world would cut short with EINTR: they go on as export/waits.h says
 * (SOCKET_CALL), and so do accept, accept4, connect, recvmmsg and sendmmsg, wrapped for that
 * alone. _FORTIFY_SOURCE's __read_chk, __recv_chk and __recvfrom_chk call libc's own read and
 * recvfrom inside libc, past any wrapper: they are wrapped too.
 *
 * The real functions are found once with dlsym(RTLD_NEXT), at load (a wrapper called in a
 * signal handler must not run the loader); a call before that looks them up then. They stay
 * cancellation points (libc's own functions do the call). errno is libc's. */
#define _GNU_SOURCE
#include "base/core.h"
#include "heap/sample.h"
#include "mem/region.h"
#include "report/fault.h"
#include "report/report.h"
#include "export/real.h"
#include "export/waits.h"
#include "scan/kroots.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Does the buffer at p start inside Oscar's memory at a freed (or never allocated) object? */
static void check(uintptr_t a, size_t len, bool kernel_writes) {
    if (likely(!len || (!region_contains(a) && !sample_owns((const void *)a))))
        return;
    struct object_info o = report_describe(a);
    if (o.state == OBJ_LIVE || o.state == OBJ_NOT_OURS || o.state == OBJ_DEFERRED)
        return;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    if (report_fault(a, kernel_writes, 0, fp, fp))
        fault_die(SIGSEGV);
}

static void check_iov(const struct iovec *iov, int n, bool kernel_writes) {
    for (int i = 0; iov && i < n; i++)
        check((uintptr_t)iov[i].iov_base, iov[i].iov_len, kernel_writes);
}

DECLARE(ssize_t, read, int, void *, size_t)
DECLARE(ssize_t, pread, int, void *, size_t, off_t)
DECLARE(ssize_t, pread64, int, void *, size_t, off_t)
DECLARE(ssize_t, readv, int, const struct iovec *, int)
DECLARE(ssize_t, preadv, int, const struct iovec *, int, off_t)
DECLARE(ssize_t, preadv64, int, const struct iovec *, int, off_t)
DECLARE(ssize_t, write, int, const void *, size_t)
DECLARE(ssize_t, pwrite, int, const void *, size_t, off_t)
DECLARE(ssize_t, pwrite64, int, const void *, size_t, off_t)
DECLARE(ssize_t, writev, int, const struct iovec *, int)
DECLARE(ssize_t, pwritev, int, const struct iovec *, int, off_t)
DECLARE(ssize_t, pwritev64, int, const struct iovec *, int, off_t)
DECLARE(ssize_t, recv, int, void *, size_t, int)
DECLARE(ssize_t, recvfrom, int, void *, size_t, int, struct sockaddr *, socklen_t *)
DECLARE(ssize_t, recvmsg, int, struct msghdr *, int)
DECLARE(ssize_t, send, int, const void *, size_t, int)
DECLARE(ssize_t, sendto, int, const void *, size_t, int, const struct sockaddr *, socklen_t)
DECLARE(ssize_t, sendmsg, int, const struct msghdr *, int)
DECLARE(int, recvmmsg, int, struct mmsghdr *, unsigned int, int, struct timespec *)
DECLARE(int, sendmmsg, int, struct mmsghdr *, unsigned int, int)
DECLARE(int, accept, int, struct sockaddr *, socklen_t *)
DECLARE(int, accept4, int, struct sockaddr *, socklen_t *, int)
DECLARE(int, connect, int, const struct sockaddr *, socklen_t)

extern void __chk_fail(void) __attribute__((noreturn));

/* At load: every real function found before any signal handler can call a wrapper. */
__attribute__((constructor)) static void find_real_functions(void) {
    void *all[] = {real_fn_read(),     real_fn_pread(),     real_fn_pread64(),
                   real_fn_readv(),    real_fn_preadv(),    real_fn_preadv64(),
                   real_fn_write(),    real_fn_pwrite(),    real_fn_pwrite64(),
                   real_fn_writev(),   real_fn_pwritev(),   real_fn_pwritev64(),
                   real_fn_recv(),     real_fn_recvfrom(),  real_fn_recvmsg(),
                   real_fn_send(),     real_fn_sendto(),    real_fn_sendmsg(),
                   real_fn_recvmmsg(), real_fn_sendmmsg(),  real_fn_accept(),
                   real_fn_accept4(),  real_fn_connect()};
    (void)all;
}

#define EXPORT __attribute__((visibility("default")))

EXPORT ssize_t read(int fd, void *buf, size_t n) {
    check((uintptr_t)buf, n, true);
    ssize_t r;
    SOCKET_CALL(r, fd, false, real_fn_read()(fd, buf, n));
    return r;
}
EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    check((uintptr_t)buf, n, true);
    return real_fn_pread()(fd, buf, n, off);
}
EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off) {
    check((uintptr_t)buf, n, true);
    return real_fn_pread64()(fd, buf, n, off);
}
EXPORT ssize_t readv(int fd, const struct iovec *iov, int n) {
    check_iov(iov, n, true);
    ssize_t r;
    SOCKET_CALL(r, fd, false, real_fn_readv()(fd, iov, n));
    return r;
}
EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off) {
    check_iov(iov, n, true);
    return real_fn_preadv()(fd, iov, n, off);
}
EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int n, off_t off) {
    check_iov(iov, n, true);
    return real_fn_preadv64()(fd, iov, n, off);
}
EXPORT ssize_t write(int fd, const void *buf, size_t n) {
    check((uintptr_t)buf, n, false);
    ssize_t r;
    SOCKET_CALL(r, fd, true, real_fn_write()(fd, buf, n));
    return r;
}
EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    check((uintptr_t)buf, n, false);
    return real_fn_pwrite()(fd, buf, n, off);
}
EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    check((uintptr_t)buf, n, false);
    return real_fn_pwrite64()(fd, buf, n, off);
}
EXPORT ssize_t writev(int fd, const struct iovec *iov, int n) {
    check_iov(iov, n, false);
    ssize_t r;
    SOCKET_CALL(r, fd, true, real_fn_writev()(fd, iov, n));
    return r;
}
EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
    check_iov(iov, n, false);
    return real_fn_pwritev()(fd, iov, n, off);
}
EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off) {
    check_iov(iov, n, false);
    return real_fn_pwritev64()(fd, iov, n, off);
}
EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
    check((uintptr_t)buf, n, true);
    ssize_t r;
    SOCKET_CALL(r, fd, false, real_fn_recv()(fd, buf, n, flags));
    return r;
}
EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from,
                        socklen_t *len) {
    check((uintptr_t)buf, n, true);
    ssize_t r;
    SOCKET_CALL(r, fd, false, real_fn_recvfrom()(fd, buf, n, flags, from, len));
    return r;
}
EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags) {
    if (m)
        check_iov(m->msg_iov, (int)m->msg_iovlen, true);
    ssize_t r;
    SOCKET_CALL(r, fd, false, real_fn_recvmsg()(fd, m, flags));
    return r;
}
EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
    check((uintptr_t)buf, n, false);
    ssize_t r;
    SOCKET_CALL(r, fd, true, real_fn_send()(fd, buf, n, flags));
    return r;
}
EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to,
                      socklen_t len) {
    check((uintptr_t)buf, n, false);
    ssize_t r;
    SOCKET_CALL(r, fd, true, real_fn_sendto()(fd, buf, n, flags, to, len));
    return r;
}
EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags) {
    if (m)
        check_iov(m->msg_iov, (int)m->msg_iovlen, false);
    ssize_t r;
    SOCKET_CALL(r, fd, true, real_fn_sendmsg()(fd, m, flags));
    return r;
}

static void check_mmsg(const struct mmsghdr *v, unsigned n, bool kernel_writes) {
    for (unsigned i = 0; v && i < n; i++)
        check_iov(v[i].msg_hdr.msg_iov, (int)v[i].msg_hdr.msg_iovlen, kernel_writes);
}

/* (Its own timeout, checked by the kernel only after each message, does not cut it short.) */
EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags, struct timespec *t) {
    check_mmsg(v, n, true);
    int r;
    SOCKET_CALL(r, fd, false, real_fn_recvmmsg()(fd, v, n, flags, t));
    return r;
}
EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags) {
    check_mmsg(v, n, false);
    int r;
    SOCKET_CALL(r, fd, true, real_fn_sendmmsg()(fd, v, n, flags));
    return r;
}
/* A local connection accepted (or made, connect) between two sockets of this process holds
 * what one sent and the other has not read: noted for the mark (scan/kroots.h). The domain
 * is the address's where the caller asked for it (no system call for a TCP server's). */
static int accepted(int r, const struct sockaddr *addr, const socklen_t *len) {
    if (r >= 0 && (addr && len && *len >= sizeof addr->sa_family ? addr->sa_family == AF_UNIX
                                                                : os_socket_domain(r) == AF_UNIX))
        kroots_note_local_socket(r, false);
    return r;
}
EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    int r;
    SOCKET_CALL(r, fd, false, real_fn_accept()(fd, addr, len));
    return accepted(r, addr, len);
}
EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    int r;
    SOCKET_CALL(r, fd, false, real_fn_accept4()(fd, addr, len, flags));
    return accepted(r, addr, len);
}

/* A connect cut short goes on in the kernel (TCP's handshake): called again, it waits for it,
 * and says so in its own words, which the first call would not have used: 0 where it is
 * connected (EISCONN), EINPROGRESS where the wait ran out (EALREADY). Where the wait ran out
 * here, a TCP connect fails with EINPROGRESS and a local one (AF_UNIX, waiting for room in the
 * listener's backlog) with EAGAIN, as each does at its timeout. */
EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    struct wait w;
    wait_begin(&w);
    int r = real_fn_connect()(fd, addr, len);
    bool again = false;
    while (wait_cut_socket(&w, r < 0, fd, true)) {
        again = true;
        r = real_fn_connect()(fd, addr, len);
    }
    if (r < 0 && again && errno == EISCONN) {
        errno = w.errno_in;
        return 0;
    }
    if (r < 0 && again && errno == EALREADY)
        errno = EINPROGRESS;
    else if (r < 0 && w.timed_out && os_socket_domain(fd) != AF_UNIX)
        errno = EINPROGRESS;
    if (r == 0 && addr && len >= sizeof addr->sa_family && addr->sa_family == AF_UNIX)
        kroots_note_local_socket(fd, false);
    return r;
}

/* _FORTIFY_SOURCE's: the size checked as libc checks it, then the wrappers above. */
EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
    if (n > buflen)
        __chk_fail();
    return read(fd, buf, n);
}
EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags) {
    if (n > buflen)
        __chk_fail();
    return recv(fd, buf, n, flags);
}
EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                              struct sockaddr *from, socklen_t *len) {
    if (n > buflen)
        __chk_fail();
    return recvfrom(fd, buf, n, flags, from, len);
}
