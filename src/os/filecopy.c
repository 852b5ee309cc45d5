/* filecopy: see filecopy.h. Raw system calls: the program's errno is never touched. */
#define _GNU_SOURCE
#include "os/filecopy.h"
#include "os/os.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

static long sys6(long n, long a, long b, long c, long d, long e, long f) {
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return r;
}
static inline int err_of(long r) { return (r < 0 && r > -4096) ? (int)-r : 0; }

int os_copy_range(int src, int dst, uint64_t from, uint64_t to) {
    long long in = (long long)from, out = (long long)from;
    for (uint64_t left = to - from; left > 0;) {
        os_count(OS_CALL_OTHER);
        long n = sys6(SYS_copy_file_range, src, (long)&in, dst, (long)&out, (long)left, 0);
        if (n == -EINTR)
            continue;
        if (err_of(n))
            return err_of(n);
        if (n == 0)
            return EIO;
        left -= (uint64_t)n;
    }
    return 0;
}

int os_read_range(int src, void *dst, uint64_t from, uint64_t to) {
    for (uint64_t at = from; at < to;) {
        os_count(OS_CALL_OTHER);
        long n = sys6(SYS_pread64, src, (long)((char *)dst + at), (long)(to - at), (long)at, 0, 0);
        if (n == -EINTR)
            continue;
        if (err_of(n))
            return err_of(n);
        if (n == 0)
            return EIO;
        at += (uint64_t)n;
    }
    return 0;
}

int os_parent_pid(void) { return (int)sys6(SYS_getppid, 0, 0, 0, 0, 0, 0); }
