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

/* At load: every real function found before any signal handler can call a wrapper. */
__attribute__((constructor)) static void find_real_functions(void) {
    void *all[] = {real_fn_read(),     real_fn_pread(),     real_fn_pread64(),
                   real_fn_readv(),    real_fn_preadv(),    real_fn_preadv64(),
                   real_fn_write(),    real_fn_pwrite(),    real_fn_pwrite64(),
                   real_fn_writev(),   real_fn_pwritev(),   real_fn_pwritev64(),
                   real_fn_recv(),     real_fn_recvfrom(),  real_fn_recvmsg(),
                   real_fn_send(),     real_fn_sendto(),    real_fn_sendmsg()};
    (void)all;
}

#define EXPORT __attribute__((visibility("default")))

EXPORT ssize_t read(int fd, void *buf, size_t n) {
    check((uintptr_t)buf, n, true);
    return real_fn_read()(fd, buf, n);
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
    return real_fn_readv()(fd, iov, n);
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
    return real_fn_write()(fd, buf, n);
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
    return real_fn_writev()(fd, iov, n);
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
    return real_fn_recv()(fd, buf, n, flags);
}
EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from,
                        socklen_t *len) {
    check((uintptr_t)buf, n, true);
    return real_fn_recvfrom()(fd, buf, n, flags, from, len);
}
EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags) {
    if (m)
        check_iov(m->msg_iov, (int)m->msg_iovlen, true);
    return real_fn_recvmsg()(fd, m, flags);
}
EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
    check((uintptr_t)buf, n, false);
    return real_fn_send()(fd, buf, n, flags);
}
EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to,
                      socklen_t len) {
    check((uintptr_t)buf, n, false);
    return real_fn_sendto()(fd, buf, n, flags, to, len);
}
EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags) {
    if (m)
        check_iov(m->msg_iov, (int)m->msg_iovlen, false);
    return real_fn_sendmsg()(fd, m, flags);
}
