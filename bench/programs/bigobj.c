/* bigobj: large objects, 64 KiB .. 4 MiB, every page touched, up to 8 alive at once: the
 * mmap-backed path of most allocators (image buffers, I/O buffers, big arrays).
 * usage: bigobj COUNT */
#include <string.h>
#include "bench.h"

int main(int argc, char **argv) {
    long count = bench_arg(argc, argv, 1, 2000);
    uint64_t seed = 99, sum = 0;
    unsigned char *live[8] = {0};
    size_t live_n[8] = {0};
    for (long i = 0; i < count; i++) {
        /* log-uniform between 64 KiB and 4 MiB, so small and large sizes both matter */
        size_t n = (size_t)65536 << (bench_rand(&seed) % 7);
        n += bench_rand(&seed) % n;
        if (n > 4u << 20) n = 4u << 20;
        int k = (int)(i % 8);
        if (live[k]) {
            sum += live[k][live_n[k] - 1];
            free(live[k]);
        }
        unsigned char *p = malloc(n);
        for (size_t off = 0; off < n; off += 4096)
            p[off] = (unsigned char)(off >> 12);
        p[n - 1] = (unsigned char)i;
        live[k] = p;
        live_n[k] = n;
    }
    for (int k = 0; k < 8; k++)
        free(live[k]);
    bench_report(sum, (uint64_t)count);
    return 0;
}
