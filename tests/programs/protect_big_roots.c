/* Protect mode: a program whose roots dwarf its heap (cc1plus's shape: its own collected heap
 * of ~100 MB in mappings of its own, beside 10 MB of malloc's): 64 MiB of an anonymous
 * mapping it wrote (no pointer in it), ~1 MiB live on malloc's heap, and 96 MiB freed through
 * it in objects of 4 KiB. Every mark reads the 64 MiB; the quarantine's trigger is a share
 * of what a mark reads (scan/mark.c, heap/protect_heap.c), not of the 1 MiB live alone, so a
 * handful of marks run, not one per MiB or two freed (the test counts them: scan_rounds).
 * Prints the sum of bytes it read back, the same under every allocator. */
#include "common.h"

#include <sys/mman.h>

int main(void) {
    test_init();
    enum { ROOT_MIB = 64, LIVE = 256, SIZE = 4096, ROUNDS = 96 * 256 };
    unsigned char *roots = mmap(NULL, (size_t)ROOT_MIB << 20, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (roots == MAP_FAILED)
        return 2;
    memset(roots, 0x11, (size_t)ROOT_MIB << 20);
    static unsigned char *live[LIVE];
    uint64_t seed = 11, sum = 0;
    for (unsigned r = 0; r < ROUNDS; r++) {
        unsigned i = (unsigned)(rng_next(&seed) % LIVE);
        if (live[i])
            sum += live[i][SIZE - 1];
        free(live[i]);
        live[i] = malloc(SIZE);
        memset(live[i], (int)(r & 0x7f), SIZE);
    }
    for (unsigned i = 0; i < LIVE; i++)
        free(live[i]);
    printf("sum %llu\nroots %u\n", (unsigned long long)sum, roots[12345]);
    return 0;
}
