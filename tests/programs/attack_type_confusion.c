/* Type confusion through reuse of a freed object: a logged-out user's object is reused for an
 * attacker's message of the same size; the dangling user pointer then reads the message bytes
 * as its is_admin field.
 * Published: the classic UAF pattern (MITRE CWE-416, example 2; Oscar paper, USENIX Security
 * 2017, section 2); same-size reallocation: how2heap first_fit.c.
 * Primitive: use after free read of plain data (no pointer is followed). */
#include <string.h>
#include "common.h"

struct user { char name[16]; long uid; int is_admin; int flags; };
struct message { char text[32]; };

int main(void) {
    test_init();
    printf("type confusion: freed user reused as an attacker message\n");
    struct user *u = malloc(sizeof *u);
    strcpy(u->name, "guest");
    u->uid = 1000;
    u->is_admin = 0;
    print_ptr("victim", u);
    free(u); /* logout; the session still holds u */
    struct message *m = malloc(sizeof *m);
    memset(m->text, 'A', sizeof m->text);
    memcpy(m->text + 24, "\1\0\0\0", 4); /* lands on is_admin */
    int admin = u->is_admin; /* BUG: read after free */
    if (admin == 1)
        printf("ATTACK SUCCEEDED: is_admin read as 1\n");
    else
        printf("attack failed: is_admin read as %d\n", admin);
    return 0;
}
