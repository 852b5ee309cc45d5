/* realloc_growth: buffers grown piecemeal, the way string builders, line readers and naive
 * vectors grow. Each of BUFFERS buffers grows by 1..64-byte appends to 4..64 KiB through
 * realloc (exact size each time, so the allocator's in-place growth is what is measured),
 * with 16 buffers alive at once.
 * usage: realloc_growth BUFFERS */
#include <string.h>
#include "bench.h"

int main(int argc, char **argv) {
    long buffers = bench_arg(argc, argv, 1, 2000);
    uint64_t seed = 7, sum = 0, allocs = 0;
    unsigned char *live[16] = {0};
    for (long b = 0; b < buffers; b++) {
        size_t target = 4096 + bench_rand(&seed) % 61441, len = 0;
        unsigned char *p = NULL;
        while (len < target) {
            size_t add = 1 + bench_rand(&seed) % 64;
            p = realloc(p, len + add);
            memset(p + len, (int)(len & 0xff), add);
            len += add;
            allocs++;
        }
        sum += p[len / 3] + p[len - 1];
        free(live[b % 16]);
        live[b % 16] = p;
    }
    for (int i = 0; i < 16; i++)
        free(live[i]);
    bench_report(sum, allocs);
    return 0;
}
