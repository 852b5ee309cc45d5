/* A program that locks its memory against swapping (mlockall(MCL_CURRENT | MCL_FUTURE), as
 * key agents and real-time programs do), then allocates and frees. Under glibc the process
 * stays a few MiB; each of Oscar's modes made every page of its reservations resident (the
 * kernel populates a locked mapping), and the OOM killer ended the program after ~24 GB
 * (export/export_mlock.c). To keep that bounded should it come back, the program first
 * re-executes itself under an RLIMIT_AS of 8 GiB (Oscar then reserves less), and it prints
 * whether its peak resident memory stayed under 256 MiB. Needs CAP_IPC_LOCK or an RLIMIT_MEMLOCK
 * above the process's size (else mlockall fails under both: "mlockall: ENOMEM").
 *
 * With a count of allocations above the default 30,000 (300,000 under OSCAR_VA_GIB=1),
 * strict mode's shadow region is used up and addresses of chunks freed long ago must be
 * handed out again: their metadata is dropped first, and under mlockall that drop was
 * refused (locked pages) and never retried, so the region stayed full and malloc returned
 * NULL ("live objects fill the shadow address space"). Under an RLIMIT_AS of 8 GiB that
 * happened to the default count too, in the few runs whose 4 GiB-aligned poison window
 * (heap/packed.c) fell near the end of the region.
 *
 * usage: mlockall_heap [allocations] */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    rerun_under_as_limit(argv, "MLOCKALL_HEAP_LIMITED", 8UL << 30);
    int r = mlockall(MCL_CURRENT | MCL_FUTURE);
    printf("mlockall: %s\n", r == 0 ? "0" : errno == ENOMEM ? "ENOMEM" : "failed");
    int count = argc > 1 ? atoi(argv[1]) : 30000;
    unsigned long sum = 0;
    static char *table[256];
    for (int i = 0; i < count; i++) {
        unsigned k = (unsigned)i * 2654435761u % 256;
        free(table[k]);
        table[k] = malloc(16 + (size_t)(i % 1000));
        if (!table[k])
            return 1;
        memset(table[k], i & 0x7f, 16);
        sum += (unsigned char)table[k][3];
    }
    for (int k = 0; k < 256; k++)
        free(table[k]);
    long kib = peak_rss_kib();
    printf("sum %lu\npeak resident under 256 MiB: %s\n", sum, kib >= 0 && kib < (256 << 10) ? "yes" : "no");
    if (r == 0)
        munlockall();
    printf("done\n");
    return 0;
}
