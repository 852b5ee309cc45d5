/* uaf_demo: a textbook use-after-free. Under glibc it prints the stale (or reused) data and
 * carries on; under Oscar the read of the freed object dies with a report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct session {
    char user[32];
    int is_admin;
};

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0); /* show every line even when the program dies */
    struct session *s = malloc(sizeof *s);
    strcpy(s->user, "alice");
    s->is_admin = 0;
    printf("session for %s at %p\n", s->user, (void *)s);
    free(s);

    /* An attacker-controlled allocation of the same size lands where the session was. */
    struct session *evil = malloc(sizeof *evil);
    strcpy(evil->user, "mallory");
    evil->is_admin = 1;

    printf("dangling read: user=%s is_admin=%d\n", s->user, s->is_admin); /* use after free */
    puts("the program went on using freed memory");
    free(evil);
    return 0;
}
