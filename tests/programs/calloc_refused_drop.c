/* A program whose seccomp filter fails madvise with EPERM (a sandbox that lets memory calls
 * through but refuses advice; glibc's malloc goes on without it), then, round after round,
 * fills and frees an object of 1 MiB, churns small objects (protect mode's marks then release
 * the big one) and callocs 1 MiB again. Every byte calloc hands out must be zero, as under
 * glibc. Before: protect mode gave a freed large object back with MADV_DONTNEED and took the
 * refusal for done, so a later calloc of its range handed out the old bytes.
 * usage: calloc_refused_drop */
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <errno.h>
#include "common.h"

static struct sock_filter insns[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_madvise, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

int main(void) {
    test_init();
    struct sock_fprog prog = {sizeof insns / sizeof insns[0], insns};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        printf("seccomp refused: %d\n", errno);
        return 1;
    }
    enum { BIG = 1 << 20 };
    long nonzero = 0;
    for (int round = 0; round < 24; round++) {
        unsigned char *p = malloc(BIG);
        memset(p, 0xAB, BIG);
        free(p);
        for (int i = 0; i < 4000; i++) {
            unsigned char *s = malloc(64 + (size_t)(i % 200));
            memset(s, 1, 16);
            free(s);
        }
        unsigned char *q = calloc(1, BIG);
        for (size_t k = 0; k < BIG; k++)
            nonzero += q[k] != 0;
        free(q);
    }
    printf("nonzero bytes from calloc: %ld\n", nonzero);
    return 0;
}
