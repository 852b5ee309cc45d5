/* Protect mode: a heap of ~48 MiB live (4 KiB objects) that keeps replacing small objects, so
 * that marks run while it is big (a stopped mark then reads 48 MiB: milliseconds). For
 * OSCAR_MARK=auto's choice between stopped and concurrent marks (OSCAR_MARK_PAUSE_MS). */
#include "common.h"

int main(void) {
    test_init();
    enum { BIG = 12 * 1024, SMALL = 4096 };
    static void *big[BIG], *small[SMALL];
    for (unsigned i = 0; i < BIG; i++) {
        big[i] = malloc(4000);
        memset(big[i], 1, 64);
    }
    uint64_t seed = 7;
    for (unsigned r = 0; r < 1000000; r++) {
        unsigned i = (unsigned)(rng_next(&seed) % SMALL);
        free(small[i]);
        small[i] = malloc(16 + rng_next(&seed) % 200);
    }
    for (unsigned i = 0; i < SMALL; i++)
        free(small[i]);
    for (unsigned i = 0; i < BIG; i++)
        free(big[i]);
    printf("done\n");
    return 0;
}
