/* Protect mode: a heap whose addresses run out while freed objects wait in quarantine. With
 * a 1 GiB heap (OSCAR_PROTECT_HEAP_GIB=1), 500 MiB stay allocated, then objects of 100 MiB
 * are allocated, touched at both ends and freed round after round: the live heap never
 * passes 600 MiB, but the freed ones, waiting for a mark, take the rest of the addresses.
 * glibc serves every round, and so must Oscar: a mark before it says there is no memory.
 * (A stale copy of the last object's address or its end on the stack keeps one or two of
 * them: a conservative mark's due; the heap has room for that.)
 * usage: protect_heap_exhausted */
#include "common.h"

int main(void) {
    test_init();
    char *ballast = malloc(500u << 20);
    if (!ballast) {
        printf("ballast failed\n");
        return 1;
    }
    ballast[0] = 1;
    int failed = -1;
    for (int round = 0; round < 64 && failed < 0; round++) {
        char *p = malloc(100u << 20);
        if (!p) {
            failed = round;
            break;
        }
        p[0] = (char)round;
        p[(100u << 20) - 1] = 1;
        free(p);
    }
    free(ballast);
    if (failed >= 0)
        printf("malloc failed at round %d\n", failed);
    else
        printf("every round served\n");
    return 0;
}
