/* A program that churns, enters seccomp's strict mode through libc's prctl (read, write,
 * exit and rt_sigreturn allowed from then on), writes a line and leaves with exit(2), the
 * only way out strict mode gives: its only thread ends, and with it the process (glibc: 0.2 s).
 * The kernel applies strict mode to the calling thread alone, but Oscar applied it to its own
 * threads too: the mark's team helper (protect mode) had every wait refused, spun at 100% of
 * a CPU with SIGTERM blocked, and the process never ended (only SIGKILL ended it). */
#define _GNU_SOURCE
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    static void *v[1024];
    for (long i = 0; i < 200000; i++) {
        int k = (int)(i % 1024);
        free(v[k]);
        v[k] = malloc((size_t)(i % 3000 + 1));
        memset(v[k], 1, 1);
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT))
        return 1;
    if (write(1, "in strict mode, leaving\n", 24) != 24)
        syscall(SYS_exit, 2);
    syscall(SYS_exit, 0);
    return 0;
}
