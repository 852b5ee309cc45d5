/* A program that locks its memory (mlockall(MCL_CURRENT | MCL_FUTURE)), then allocates a
 * burst of small objects and frees them all, several rounds. Under glibc the memory goes back
 * after each round. Strict and fast modes keep small objects on canonical pages of a memfd
 * (mem/canon.c) and give a freed page back by punching a hole in it (MADV_REMOVE); with every
 * mapping locked the kernel refuses that (EINVAL: madvise_remove rejects VM_LOCKED mappings),
 * and the memory of every page ever used stayed in the memfd after the frees: the heap's peak,
 * never given back (canonical_resident_bytes of OSCAR_STATS=1: tens of MiB after everything
 * was freed, against a few without mlockall). It re-executes itself under an RLIMIT_AS of
 * 8 GiB, as mlockall_heap does (export/export_mlock.c). Needs CAP_IPC_LOCK or an
 * RLIMIT_MEMLOCK above the process's size (else "mlockall: ENOMEM").
 *
 * closefds: every descriptor from 3 up closed first (close_range, as daemons do before they
 * lock their memory): the heap's memfd too, so no hole is punched through it.
 *
 * usage: mlockall_free [rounds [MiB a round]] [nolock | closefds]   (defaults 4 and 32) */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    rerun_under_as_limit(argv, "MLOCKALL_FREE_LIMITED", 8UL << 30);
    int nolock = argc > 1 && !strcmp(argv[argc - 1], "nolock");
    int closefds = argc > 1 && !strcmp(argv[argc - 1], "closefds");
    int nums = argc - 1 - nolock - closefds;
    if (closefds && syscall(SYS_close_range, 3, ~0U, 0) != 0) {
        perror("close_range");
        return 2;
    }
    int rounds = nums > 0 ? atoi(argv[1]) : 4;
    size_t burst = (size_t)(nums > 1 ? atoi(argv[2]) : 32) << 20;
    int r = nolock ? 0 : mlockall(MCL_CURRENT | MCL_FUTURE);
    printf("mlockall: %s\n", r == 0 ? "0" : errno == ENOMEM ? "ENOMEM" : "failed");
    size_t max = burst / 16;
    char **table = malloc(max * sizeof *table);
    if (!table)
        return 1;
    unsigned long sum = 0;
    uint64_t seed = 42;
    for (int round = 0; round < rounds; round++) {
        size_t n = 0, bytes = 0;
        while (bytes < burst && n < max) {
            size_t size = 16 + (size_t)(rng_next(&seed) % 2000);
            char *p = malloc(size);
            if (!p)
                return 1;
            memset(p, (int)(n & 0x7f), size);
            table[n++] = p;
            bytes += size;
        }
        for (size_t i = 0; i < n; i++) { /* (every other object first: no page empties early) */
            size_t k = i < (n + 1) / 2 ? 2 * i : 2 * (i - (n + 1) / 2) + 1;
            sum += (unsigned char)table[k][1];
            free(table[k]);
        }
    }
    free(table);
    long kib = peak_rss_kib();
    printf("sum %lu\npeak resident under 512 MiB: %s\n", sum,
           kib >= 0 && kib < (512 << 10) ? "yes" : "no");
    if (r == 0 && !nolock)
        munlockall();
    printf("done\n");
    return 0;
}
