/* uaf_demo: a textbook use-after-free. Under glibc it prints the stale (or reused) data and
 * carries on; under Oscar the read of the freed object dies with a report naming where the
 * object was allocated, freed and used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct session {
    char user[32];
    int is_admin;
};

static struct session *login(const char *user, int is_admin) {
    struct session *s = malloc(sizeof *s);
    snprintf(s->user, sizeof s->user, "%s", user);
    s->is_admin = is_admin;
    return s;
}

static void logout(struct session *s) { free(s); }

static int may_administer(const struct session *s) { return s->is_admin; }

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0); /* show every line even when the program dies */
    struct session *s = login("alice", 0);
    printf("session for %s at %p\n", s->user, (void *)s);
    logout(s);

    /* An attacker-controlled allocation of the same size lands where the session was. */
    struct session *evil = login("mallory", 1);

    printf("dangling check: is_admin=%d\n", may_administer(s)); /* use after free */
    puts("the program went on using freed memory");
    logout(evil);
    return 0;
}
