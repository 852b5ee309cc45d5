/* Oscar must never clobber the program's own mappings (NUAF's MAP_FIXED failure): mmap pages
 * at kernel-chosen addresses, fill them with a pattern, then allocate and free a lot (small,
 * large, realloc) while creating more mappings; every pattern must stay intact. */
#include <string.h>
#include <sys/mman.h>
#include "common.h"

#define MAPS 64

int main(void) {
    test_init();
    unsigned char *maps[MAPS];
    size_t lens[MAPS];
    int nmaps = 0;
    uint64_t rng = 3;
    long mismatches = 0;

    for (int round = 0; round < 32; round++) {
        /* Two fresh mappings per round: one page and a few pages. */
        for (int k = 0; k < 2; k++) {
            size_t len = 4096 * (k ? 1 + rng_next(&rng) % 8 : 1);
            unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED)
                return 2;
            fill_pattern(m, len, (uint64_t)nmaps + 0xc0ffee);
            maps[nmaps] = m;
            lens[nmaps] = len;
            nmaps++;
        }
        void *objs[2000];
        for (int i = 0; i < 2000; i++) {
            uint64_t r = rng_next(&rng);
            size_t n = r % 50 == 0 ? 1 + r % 300000 : 1 + r % 2000;
            objs[i] = malloc(n);
            if (!objs[i])
                return 2;
            memset(objs[i], 0xee, n);
            if (i % 7 == 0)
                objs[i] = realloc(objs[i], n * 2 + 1);
        }
        for (int i = 0; i < 2000; i++)
            free(objs[i]);
        for (int j = 0; j < nmaps; j++)
            if (!check_pattern(maps[j], lens[j], (uint64_t)j + 0xc0ffee))
                mismatches++;
    }
    for (int j = 0; j < nmaps; j++)
        munmap(maps[j], lens[j]);
    if (mismatches) {
        printf("CLOBBERED %ld times\n", mismatches);
        return 1;
    }
    printf("OK\n");
    return 0;
}
