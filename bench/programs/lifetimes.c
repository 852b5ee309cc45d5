/* lifetimes: a long-lived population (a cache that is slowly replaced) mixed with bursts of
 * short-lived temporaries, as in compilers and request handlers. Each of ROUNDS rounds
 * replaces one long-lived object (64..4096 bytes) and allocates then frees a burst of 32
 * temporaries (8..256 bytes) in LIFO order.
 * usage: lifetimes ROUNDS [LONG_LIVED] */
#include <string.h>
#include "bench.h"

int main(int argc, char **argv) {
    long rounds = bench_arg(argc, argv, 1, 20000);
    long nlong = bench_arg(argc, argv, 2, 4000);
    uint64_t seed = 42, sum = 0, allocs = 0;
    unsigned char **keep = calloc((size_t)nlong, sizeof *keep);
    size_t *keep_n = calloc((size_t)nlong, sizeof *keep_n);
    for (long i = 0; i < nlong; i++) {
        keep_n[i] = 64 + bench_rand(&seed) % 4033;
        keep[i] = malloc(keep_n[i]);
        memset(keep[i], (int)i, keep_n[i]);
        allocs++;
    }
    unsigned char *tmp[32];
    for (long r = 0; r < rounds; r++) {
        long k = (long)(bench_rand(&seed) % (uint64_t)nlong);
        sum += keep[k][keep_n[k] - 1];
        free(keep[k]);
        keep_n[k] = 64 + bench_rand(&seed) % 4033;
        keep[k] = malloc(keep_n[k]);
        memset(keep[k], (int)r, keep_n[k]);
        allocs++;
        for (int j = 0; j < 32; j++) {
            size_t n = 8 + bench_rand(&seed) % 249;
            tmp[j] = malloc(n);
            memset(tmp[j], j, n);
            sum += tmp[j][n / 2];
        }
        for (int j = 31; j >= 0; j--)
            free(tmp[j]);
        allocs += 32;
    }
    for (long i = 0; i < nlong; i++)
        free(keep[i]);
    free(keep);
    free(keep_n);
    bench_report(sum, allocs + 2);
    return 0;
}
