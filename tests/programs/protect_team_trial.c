/* Protect mode: a heap of a few MiB that a single thread churns (a table of 8192 objects of
 * 16-512 B, each round replacing one), marked hundreds of times. Whether a helper thread
 * shares such a heap's reading pays on one machine and costs a fifth of the run on another
 * (docs/benchmarks.md), so with OSCAR_MARK_THREADS unset Oscar tries both ways and keeps the
 * cheaper (scan/mark.c, team_trial_note). Prints a checksum, the same under every allocator.
 * usage: protect_team_trial [ROUNDS] */
#include "common.h"

int main(int argc, char **argv) {
    test_init();
    enum { SLOTS = 8192 };
    static unsigned char *table[SLOTS];
    static size_t sizes[SLOTS];
    long rounds = argc > 1 ? atol(argv[1]) : 400000;
    uint64_t seed = 7, sum = 0;
    for (long r = 0; r < rounds; r++) {
        uint64_t x = rng_next(&seed);
        unsigned i = (unsigned)(x % SLOTS);
        if (table[i])
            sum += table[i][sizes[i] - 1];
        free(table[i]);
        sizes[i] = 16 + (size_t)((x >> 20) % 497);
        table[i] = malloc(sizes[i]);
        memset(table[i], (int)(r & 0xff), sizes[i]);
    }
    for (unsigned i = 0; i < SLOTS; i++)
        free(table[i]);
    printf("checksum %lu\n", (unsigned long)sum);
    return 0;
}
