/* export_seccomp: the two ways libc offers to install a seccomp filter, prctl(PR_SET_SECCOMP)
 * and syscall(SYS_seccomp) (libseccomp's seccomp_load uses the second, then the first), so
 * that Oscar's own system calls obey the filter from then on (os/filters.h): a sandbox written
 * for the program must not kill it for a call of Oscar's. libc's functions do the work; their
 * answer and errno are the program's. syscall(SYS_madvise), syscall(SYS_pipe),
 * syscall(SYS_pipe2) and syscall(SYS_socketpair) are noted as libc's functions for them are
 * (export/madvise.h, export/kroots.h), and an rseq area (syscall(SYS_rseq)) or a syscall
 * user dispatch selector (prctl, or syscall(SYS_prctl)) is kept for the thread: the kernel
 * goes on using them (os/kheld.h). Every other prctl and syscall goes straight on. */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/kroots.h"
#include "export/madvise.h"
#include "export/real.h"
#include "os/kheld.h"
#include "os/filters.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

DECLARE(int, prctl, int, unsigned long, unsigned long, unsigned long, unsigned long)
DECLARE(long, syscall, long, long, long, long, long, long, long)

__attribute__((constructor)) static void find_real_seccomp(void) {
    (void)real_fn_prctl();
    (void)real_fn_syscall();
}

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#endif
#ifndef SYS_rseq
#define SYS_rseq 334
#endif

/* prctl(option, a2, ...) returned r: a syscall user dispatch selector is noted. */
static void note_prctl(long option, unsigned long a2, unsigned long a5, long r) {
    if (option == PR_SET_SYSCALL_USER_DISPATCH && r == 0)
        os_kheld_note_sud(a2 ? a5 : 0); /* (a2: PR_SYS_DISPATCH_ON, or 0 for off) */
}

/* The program's install of the filter noted with os_filter_add (first, so that no call of
 * Oscar's slips past it) returned: errno stays the install's. */
static void after(int h, bool ok) {
    int saved = errno;
    os_filter_done(h, ok);
    errno = saved;
}

OSCAR_EXPORT int prctl(int option, ...) {
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    if (!real_fn_prctl()) {
        errno = ENOSYS;
        return -1;
    }
    if (option == PR_SET_SYSCALL_USER_DISPATCH) {
        int r = real_fn_prctl()(option, a2, a3, a4, a5);
        note_prctl(option, a2, a5, r);
        return r;
    }
    if (option != PR_SET_SECCOMP || (a2 != SECCOMP_MODE_STRICT && a2 != SECCOMP_MODE_FILTER))
        return real_fn_prctl()(option, a2, a3, a4, a5);
    int h = os_filter_add((const void *)a3, a2 == SECCOMP_MODE_STRICT);
    int r = real_fn_prctl()(option, a2, a3, a4, a5);
    after(h, r == 0);
    return r;
}

OSCAR_EXPORT long syscall(long n, ...) {
    va_list ap;
    va_start(ap, n);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    if (!real_fn_syscall()) {
        errno = ENOSYS;
        return -1;
    }
    if (n == SYS_pipe || n == SYS_pipe2 || n == SYS_socketpair) { /* (export_kroots.c) */
        long r = real_fn_syscall()(n, a, b, c, d, e, f);
        if (r == 0 && n == SYS_socketpair)
            export_note_socketpair((int)a, (int)b, (const int *)d);
        else if (r == 0)
            export_note_pipe((const int *)a);
        return r;
    }
    if (n == SYS_rseq || (n == SYS_prctl && a == PR_SET_SYSCALL_USER_DISPATCH)) {
        long r = real_fn_syscall()(n, a, b, c, d, e, f);
        if (n == SYS_prctl)
            note_prctl(a, (unsigned long)b, (unsigned long)e, r);
        else if (r == 0)
            os_kheld_note_rseq(c & 1 /* RSEQ_FLAG_UNREGISTER */ ? 0 : (uintptr_t)a);
        return r;
    }
    if (n == SYS_mprotect || n == SYS_pkey_mprotect) /* (export_mprotect.c) */
        export_note_protect((uintptr_t)a, (size_t)b, (int)c, n == SYS_mprotect ? 0 : (int)d);
    if (n == SYS_mmap)
        export_note_map_fixed((uintptr_t)a, (size_t)b, (int)d);
    if (n == SYS_madvise) { /* (memory a child would not get as it is: export_madvise.c) */
        export_note_advice_before((uintptr_t)a, (size_t)b, (int)c);
        long r = real_fn_syscall()(n, a, b, c, d, e, f);
        if (r == 0)
            export_note_madvise((int)c);
        return r;
    }
    if (n != SYS_seccomp || (a != SECCOMP_SET_MODE_STRICT && a != SECCOMP_SET_MODE_FILTER))
        return real_fn_syscall()(n, a, b, c, d, e, f);
    int h = os_filter_add((const void *)c, a == SECCOMP_SET_MODE_STRICT);
    long r = real_fn_syscall()(n, a, b, c, d, e, f);
    /* (with SECCOMP_FILTER_FLAG_NEW_LISTENER the answer is a descriptor; with TSYNC a failure
     * may be a thread's id) */
    after(h, (b & SECCOMP_FILTER_FLAG_NEW_LISTENER) ? r >= 0 : r == 0);
    return r;
}
