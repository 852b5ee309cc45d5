/* Information leak: a freed credential is read back through a cached pointer and printed.
 * Published: MITRE CWE-416 / CWE-226 (sensitive information in a released resource); e.g.
 * CVE-2014-0160-style "data left in freed buffers" leaks.
 * Primitive: use after free read of plain data (the secret). */
#include <string.h>
#include "common.h"

struct credential { char user[16]; char password[32]; };

int main(void) {
    test_init();
    printf("info leak: freed password read back\n");
    struct credential *c = malloc(sizeof *c);
    strcpy(c->user, "alice");
    strcpy(c->password, "hunter2-s3cret");
    const char *cached = c->password; /* kept by a logger */
    print_ptr("victim", c);
    free(c); /* logout */
    char copy[32];
    memcpy(copy, cached, sizeof copy); /* BUG: read after free */
    copy[31] = 0;
    if (strncmp(copy, "hunter2-s3cret", 14) == 0)
        printf("ATTACK SUCCEEDED: secret leaked: %s\n", copy);
    else
        printf("attack failed: no secret in the freed object\n");
    return 0;
}
