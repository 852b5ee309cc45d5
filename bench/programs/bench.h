/* Shared helpers for the benchmark programs: argument parsing, a fast deterministic PRNG, and
 * the two result lines every program prints (bench/run.py reads them):
 *   checksum N     - depends on the data written, so the work cannot be optimised away
 *   allocations N  - how many allocation calls the program made (malloc/new/realloc) */
#ifndef OSCAR_BENCH_H
#define OSCAR_BENCH_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline long bench_arg(int argc, char **argv, int i, long dflt) {
    return argc > i ? strtol(argv[i], NULL, 10) : dflt;
}

/* xorshift64*: cheap, and the same sequence under every allocator. */
static inline uint64_t bench_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline void bench_report(uint64_t checksum, uint64_t allocations) {
    printf("checksum %llu\nallocations %llu\n", (unsigned long long)checksum,
           (unsigned long long)allocations);
}
#endif
