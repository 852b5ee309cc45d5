/* churn: one thread replacing small objects in a table, the plain malloc/free churn most
 * programs do: SLOTS live objects of 16..512 bytes (small sizes more often), each round frees
 * a random one and allocates its replacement, writes it whole and reads a neighbour.
 * usage: churn ROUNDS [SLOTS] */
#include <string.h>
#include "bench.h"

int main(int argc, char **argv) {
    long rounds = bench_arg(argc, argv, 1, 1000000);
    long slots = bench_arg(argc, argv, 2, 10000);
    unsigned char **table = calloc((size_t)slots, sizeof *table);
    size_t *sizes = calloc((size_t)slots, sizeof *sizes);
    uint64_t seed = 0x9E3779B97F4A7C15ULL, sum = 0, allocations = 2;
    for (long r = 0; r < rounds; r++) {
        uint64_t x = bench_rand(&seed);
        long i = (long)(x % (uint64_t)slots);
        /* 16..512 bytes, skewed small: the shift picks a power-of-two band */
        size_t n = 16 + (size_t)((x >> 20) % (16u << ((x >> 40) % 5)));
        if (table[i])
            sum += table[i][sizes[i] - 1];
        free(table[i]);
        table[i] = malloc(n);
        allocations++;
        memset(table[i], (int)(r & 0xff), n);
        sizes[i] = n;
        long j = (i + 1) % slots;
        if (table[j])
            sum += table[j][0];
    }
    for (long i = 0; i < slots; i++)
        free(table[i]);
    free(table);
    free(sizes);
    bench_report(sum, allocations);
    return 0;
}
